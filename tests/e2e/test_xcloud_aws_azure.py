"""examples/aws-to-azure.yaml end to end: the plan, the AWS primary (llm-azdr-use1) and the Azure
DR site (llm-azdr-eus) through the real program under mocks, and the policy pack on what they
registered.

The DR stack's jobs run as the identity the primary's stack creates, copied into the DR stack's
own config by hand here (as an operator does with `pulumi config set`), with an image set by
digest. The DR stack plans with the primary's region unreachable; an undersized AzCopy rate is
not met by the plan and refused by the pack."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest
import yaml

from gpudr.app.offline.mocks import GpudrMocks
from gpudr.app.offline.plan import run_design
from gpudr.app.offline.run import StackRun, run_stack, unwrap_secret
from gpudr.build.stackconfig import build_site_configs, stack_config_values, stack_name
from gpudr.core.design import NOT_MET, design
from gpudr.core.enums import AWS_MAX_SESSION_S
from gpudr.core.spec import PlanError, load_plan, parse_plan
from policies.replication_meets_rpo import replication_meets_rpo
from tests.conftest import ROOT
from tests.policies.harness import run_stack_records

EXAMPLE = ROOT / "examples" / "aws-to-azure.yaml"
PRIMARY, DR = "use1", "eus"
JOB = "azure-native:app:Job"
IMAGE = "acmedr.azurecr.io/gpudr-azcopy@sha256:" + "cd" * 32


@cache
def _plan() -> Any:
    return load_plan(EXAMPLE)


def stack(site: str) -> str:
    return stack_name(_plan(), _plan().sites[site])


@cache
def primary() -> StackRun:
    site = _plan().sites[PRIMARY]
    config = stack_config_values(design(_plan()), site)
    return run_stack(stack(PRIMARY), config, GpudrMocks(default_region=site.region))


def copied() -> dict[str, Any]:
    """What `pulumi config set` copies from the primary's transfer_credentials[eus], and the
    image the operator pushed."""
    exported, _ = unwrap_secret(primary().outputs["transfer_credentials"])
    return {
        **{f"gpudr:{k}": v for k, v in exported[DR].items()},
        "gpudr:azcopy_image": IMAGE,
    }


def run_dr(mocks: GpudrMocks, mode: str = "standby") -> StackRun:
    config = stack_config_values(design(_plan()), _plan().sites[DR])
    config.update(copied())
    config["gpudr:mode"] = mode
    return run_stack(stack(DR), config, mocks)


def test_the_plan_pairs_an_aws_primary_with_an_azure_dr_site() -> None:
    d = design(_plan())
    assert {f.data_class: f.mechanism for f in d.flows} == {
        "checkpoints": "azcopy",
        "datasets": "azcopy",
        "weights": "dual-write",
    }
    assert all(w.meets for w in d.workloads), [(w.name, w.verdict) for w in d.workloads]
    p, r = build_site_configs(d)[PRIMARY], build_site_configs(d)[DR]
    assert [x.dr_site for x in p.azcopy_readers] == [DR]
    assert {t.service for b in r.buckets for t in b.inbound} == {"azcopy"}
    assert [x.kind for x in r.links] == ["vpn"]


@pytest.mark.parametrize("mode", ["standby", "failover"])
def test_dr_stack_runs_with_the_aws_primary_region_unreachable(mode: str) -> None:
    region = _plan().sites[DR].region
    mocks = GpudrMocks(default_region=region, unreachable_regions=frozenset({"us-east-1"}))
    r = run_dr(mocks, mode)
    assert len([x for x in r.resources if x.type == JOB]) == 2
    assert not [x for x in r.resources if x.type.startswith("aws:")]
    assert not any(
        "us-east-1" in str(x.inputs.get("region") or x.inputs.get("location") or "")
        for x in r.resources
    )
    # nothing of the primary's is read: no AWS lookup, no stack reference
    assert not [t for t, _ in r.calls if t.startswith("aws:") or "StackReference" in t]


def _undersized(gbps: float) -> dict[str, Any]:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw = copy.deepcopy(raw)
    raw["quotas"] = {"azcopy_gbps": gbps}
    return raw


def test_an_undersized_azcopy_rate_is_not_met_and_the_pack_refuses_it() -> None:
    """At 0.2 Gbps a 266 GB checkpoint run takes ~3 h: past the 2 h interval its 4 h RPO
    allows, so no schedule holds the RPO: the plan says not met, the pack refuses the replica."""
    d = design(parse_plan(_undersized(0.2)))
    checkpoints = next(f for f in d.flows if f.data_class == "checkpoints")
    assert not d.replication_meets(checkpoints)
    verdicts = {w.name: w.verdict for w in d.workloads}
    assert verdicts["checkpoints"] == NOT_MET, verdicts
    stacks = run_design(d, sites=[DR])
    (dr,) = stacks
    found = run_stack_records(replication_meets_rpo, dr["resources"])
    assert any("checkpoints" in m and ("cannot" in m) for m, _ in found), found


def test_a_run_past_the_12_hour_session_is_not_met_with_the_reason() -> None:
    """At 0.01 Gbps even an hourly dataset run (1 TB a day) outlasts every limit."""
    d = design(parse_plan(_undersized(0.01)))
    datasets = next(f for f in d.flows if f.data_class == "datasets")
    assert datasets.estimate.estimated_s == float("inf")
    assert f"{AWS_MAX_SESSION_S // 3600}h AWS session" in datasets.estimate.reason, (
        datasets.estimate.reason
    )
    assert not d.replication_meets(datasets)


def test_the_primary_needs_its_account() -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    del raw["sites"][PRIMARY]["account"]
    with pytest.raises(PlanError, match=f"sites.{PRIMARY}.account: is required when an azure"):
        parse_plan(raw)
