"""encryption-in-transit: S3 bucket policies and Azure account TLS settings."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from policies.encryption_in_transit import encryption_in_transit
from tests.policies.builders import azure, gcs, s3
from tests.policies.harness import Res, check, run_stack

Mutation = Callable[[dict[str, Res]], Any]


def statement(r: dict[str, Res], **changes: Any) -> None:
    """Rewrite the bucket policy's one statement."""
    document = json.loads(r["policy"].inputs["policy"])
    document["Statement"][0].update(changes)
    document["Statement"][0] = {k: v for k, v in document["Statement"][0].items() if v is not None}
    r["policy"].inputs["policy"] = json.dumps(document)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="deny-insecure-transport"),
        pytest.param(
            lambda r: statement(r, Principal={"AWS": "*"}, Action=["s3:*"]), None, id="forms"
        ),
        pytest.param(
            lambda r: statement(r, Condition={"Bool": {"aws:SecureTransport": False}}),
            None,
            id="condition-as-boolean",
        ),
        pytest.param(
            lambda r: r["policy"].inputs.update(policy=json.loads(r["policy"].inputs["policy"])),
            None,
            id="policy-as-object",
        ),
        pytest.param(
            lambda r: statement(r, Effect="Allow"), "has no such statement", id="allow-not-deny"
        ),
        pytest.param(
            lambda r: statement(r, Condition={"Bool": {"aws:SecureTransport": "true"}}),
            "has no such statement",
            id="denies-tls-instead",
        ),
        pytest.param(
            lambda r: statement(r, Action="s3:PutObject"),
            "has no such statement",
            id="one-action-only",
        ),
        pytest.param(
            lambda r: statement(r, Resource="arn:aws:s3:::llm-use1-checkpoints-abc123"),
            "has no such statement",
            id="bucket-arn-only-objects-open",
        ),
        pytest.param(lambda r: r.pop("policy"), "no BucketPolicy refers to it", id="no-policy"),
    ],
)
def test_s3(mutate: Mutation, expected: str | None) -> None:
    r = s3()
    mutate(r)
    check(run_stack(encryption_in_transit, list(r.values())), r["bucket"], expected)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param({}, None, id="tls12-https-only"),
        pytest.param({"minimumTlsVersion": "TLS1_3"}, None, id="tls13"),
        pytest.param({"minimumTlsVersion": "TLS1_0"}, 'set "TLS1_2"', id="tls10"),
        pytest.param({"minimumTlsVersion": None}, 'set "TLS1_2"', id="tls-unset"),
        pytest.param({"enableHttpsTrafficOnly": False}, "enable_https_traffic_only", id="http"),
    ],
)
def test_azure(changes: dict[str, Any], expected: str | None) -> None:
    r = azure()
    r["account"].inputs.update(changes)
    r["account"].inputs = {k: v for k, v in r["account"].inputs.items() if v is not None}
    check(run_stack(encryption_in_transit, list(r.values())), r["account"], expected)


def test_azure_accounts_without_gpudr_tags_are_checked_too() -> None:
    r = azure()
    r["account"].inputs.pop("tags")
    r["account"].inputs["minimumTlsVersion"] = "TLS1_1"
    check(run_stack(encryption_in_transit, list(r.values())), r["account"], "TLS1_1")


def test_gcs_is_https_only_by_design() -> None:
    assert run_stack(encryption_in_transit, list(gcs().values())) == []
