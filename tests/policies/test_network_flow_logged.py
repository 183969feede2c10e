"""network-flow-logged: VPC flow logs on AWS, subnetwork flow logs on GCP, one setting at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from policies.network_flow_logged import network_flow_logged
from tests.policies.harness import UNKNOWN, Res, check, run_stack

VPC, FLOW_LOG = "aws:ec2/vpc:Vpc", "aws:ec2/flowLog:FlowLog"
SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
SINK_ARN = "arn:aws:s3:::llm-use1-logs-abc123"

Mutation = Callable[[dict[str, Res]], Any]


def aws_network() -> dict[str, Res]:
    vpc = Res(VPC, "use1-vpc", {"cidrBlock": "10.0.0.0/16", "tags": {"gpudr:dr-role": "network"}})
    log = Res(
        FLOW_LOG,
        "use1-flow-logs",
        {
            "vpcId": "vpc-0123456789",
            "trafficType": "ALL",
            "logDestinationType": "s3",
            "logDestination": SINK_ARN,
        },
    ).link("vpcId", vpc)
    return {"vpc": vpc, "log": log}


def second_log(r: dict[str, Res], traffic: str) -> None:
    r["log"].inputs["trafficType"] = "REJECT"
    extra = Res(FLOW_LOG, "use1-flow-logs-2", {"vpcId": "vpc-1", "trafficType": traffic})
    r["extra"] = extra.link("vpcId", r["vpc"])


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="all-traffic"),
        pytest.param(lambda r: r["log"].inputs.update(trafficType="all"), None, id="case"),
        pytest.param(lambda r: second_log(r, "ALL"), None, id="one-of-two-logs-all"),
        pytest.param(
            lambda r: r["log"].inputs.update(trafficType="REJECT"),
            "traffic_type 'REJECT' only",
            id="rejected-only",
        ),
        pytest.param(lambda r: second_log(r, "ACCEPT"), "'REJECT' only", id="split-not-all"),
        pytest.param(lambda r: r.pop("log"), "no FlowLog has it as vpc_id", id="none"),
        pytest.param(
            lambda r: r["log"].property_dependencies.clear(),
            "no FlowLog",
            id="another-vpcs-id",
        ),
        pytest.param(
            lambda r: (r.pop("log"), r["vpc"].inputs.pop("tags")), "no FlowLog", id="untagged"
        ),
    ],
)
def test_vpcs(mutate: Mutation, expected: str | None) -> None:
    r = aws_network()
    mutate(r)
    check(run_stack(network_flow_logged, list(r.values())), r["vpc"], expected)


FLOW_LOGS = {
    "aggregationInterval": "INTERVAL_10_MIN",
    "flowSampling": 0.5,
    "metadata": "INCLUDE_ALL_METADATA",
}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param({}, None, id="logged"),
        pytest.param({"logConfig": {"flowSampling": 1.0}}, None, id="sampling-only"),
        pytest.param({"logConfig": {"filterExpr": "true", "metadata": "X"}}, None, id="filter"),
        pytest.param({"logConfig": None}, "log_config is not set", id="none"),
        pytest.param({"logConfig": {}}, "an empty block disables", id="empty-block"),
        pytest.param(
            {"logConfig": {**FLOW_LOGS, "flowSampling": 0.0}}, "flow_sampling is 0", id="zero"
        ),
        pytest.param(
            {"logConfig": {**FLOW_LOGS, "filterExpr": "false"}},
            "every flow is filtered out",
            id="filtered-out",
        ),
        pytest.param({"logConfig": None, "labels": None}, "not set", id="untagged"),
        pytest.param({"logConfig": None, "purpose": "REGIONAL_MANAGED_PROXY"}, None, id="proxy"),
        pytest.param(
            {"logConfig": None, "purpose": "GLOBAL_MANAGED_PROXY"}, None, id="global-proxy"
        ),
        pytest.param({"logConfig": None, "purpose": "PRIVATE"}, "not set", id="private"),
    ],
)
def test_subnetworks(change: dict[str, Any], expected: str | None) -> None:
    inputs: dict[str, Any] = {
        "name": "vision-usc1-us-central1",
        "ipCidrRange": "10.40.0.0/20",
        "logConfig": dict(FLOW_LOGS),
        "labels": {"gpudr-dr-role": "network"},
    }
    for key, value in change.items():
        if value is None:
            inputs.pop(key, None)
        else:
            inputs[key] = value
    subnetwork = Res(SUBNETWORK, "usc1-subnet", inputs)
    check(run_stack(network_flow_logged, [subnetwork]), subnetwork, expected)


def test_a_flow_log_computed_from_the_vpc_is_linked_before_its_id_exists() -> None:
    r = aws_network()
    r["log"].inputs["vpcId"] = UNKNOWN
    assert run_stack(network_flow_logged, list(r.values())) == []


@pytest.mark.parametrize(
    ("text", "present"),
    [
        pytest.param('aggregation_interval: "INTERVAL_10_MIN", flow_sampling: 0.5', True,
                     id="what-gpudr-sets"),
        pytest.param('metadata: "INCLUDE_ALL_METADATA"', True, id="all-metadata"),
        pytest.param('aggregation_interval: "INTERVAL_5_SEC", flow_sampling: 1.0', True,
                     id="what-cis-3.8-audits"),
        pytest.param('"INTERVAL_5_SEC", flow_sampling: 0.5', False, id="neither-cis-nor-gpudr"),
    ],
)  # fmt: skip
def test_the_remediation_says_what_gpudr_sets_and_what_cis_audits(text: str, present: bool) -> None:
    """Fix 4: the message and the remediation name gpudr's setting (components/gcp/network.py)
    and CIS GCP 3.8's audit values (5-second aggregation, 100% sampling), never a mix."""
    subnetwork = Res(SUBNETWORK, "usc1-subnet", {"name": "s", "ipCidrRange": "10.0.0.0/20"})
    message = run_stack(network_flow_logged, [subnetwork])[0][0]
    remediation = network_flow_logged.remediation_steps or ""
    assert (text in message) is present, message
    assert (text in remediation) is present, remediation
    assert "CIS GCP Foundations 3.8" in message and "100% sampling" in remediation
