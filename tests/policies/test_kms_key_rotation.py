"""kms-key-rotation: each cloud's key with and without rotation, and the configurable limit."""

from __future__ import annotations

from typing import Any

import pytest

from policies.common import AWS_KMS_KEY, AZ_VAULT_KEY, GCP_CRYPTO_KEY
from policies.kms_key_rotation import kms_key_rotation
from tests.policies.harness import Res, check, run_resource


def azure_key(*actions: dict[str, Any], expiry: str = "P2Y") -> dict[str, Any]:
    return {
        "keyName": "data",
        "properties": {
            "kty": "RSA-HSM",
            "rotationPolicy": {
                "lifetimeActions": list(actions),
                "attributes": {"expiryTime": expiry},
            },
        },
    }


def rotate(**trigger: str) -> dict[str, Any]:
    return {"trigger": trigger, "action": {"type": "rotate"}}


@pytest.mark.parametrize(
    ("resource_type", "props", "config", "expected"),
    [
        pytest.param(AWS_KMS_KEY, {"enableKeyRotation": True}, None, None, id="aws-rotates"),
        pytest.param(
            AWS_KMS_KEY,
            {"enableKeyRotation": True, "rotationPeriodInDays": 365.0},
            None,
            None,
            id="aws-365-days",
        ),
        pytest.param(
            AWS_KMS_KEY,
            {"enableKeyRotation": True, "rotationPeriodInDays": 730.0},
            None,
            "rotation_period_in_days to 365",
            id="aws-730-days",
        ),
        pytest.param(
            AWS_KMS_KEY,
            {"enableKeyRotation": True, "rotationPeriodInDays": 730.0},
            {"aws_max_rotation_days": 730},
            None,
            id="aws-730-days-allowed-by-config",
        ),
        pytest.param(AWS_KMS_KEY, {}, None, "enable_key_rotation=True", id="aws-no-rotation"),
        pytest.param(
            AWS_KMS_KEY, {"enableKeyRotation": False}, None, "does not rotate", id="aws-off"
        ),
        pytest.param(
            AWS_KMS_KEY,
            {"customerMasterKeySpec": "RSA_4096"},
            None,
            None,
            id="aws-asymmetric-cannot-rotate",
        ),
        pytest.param(GCP_CRYPTO_KEY, {"rotationPeriod": "7776000s"}, None, None, id="gcp-90-days"),
        pytest.param(
            GCP_CRYPTO_KEY,
            {"rotationPeriod": "31536000s"},
            None,
            "365 days; the limit is 90",
            id="gcp-365-days",
        ),
        pytest.param(
            GCP_CRYPTO_KEY,
            {"rotationPeriod": "31536000s"},
            {"max_rotation_days": 365.0},
            None,
            id="gcp-365-days-allowed-by-config",
        ),
        pytest.param(GCP_CRYPTO_KEY, {}, None, "no rotation_period", id="gcp-no-rotation"),
        pytest.param(
            GCP_CRYPTO_KEY, {"purpose": "ASYMMETRIC_SIGN"}, None, None, id="gcp-signing-key"
        ),
        pytest.param(
            AZ_VAULT_KEY, azure_key(rotate(timeAfterCreate="P90D")), None, None, id="azure-90d"
        ),
        pytest.param(
            AZ_VAULT_KEY,
            azure_key(rotate(timeBeforeExpiry="P30D"), expiry="P90D"),
            None,
            None,
            id="azure-60d-before-expiry",
        ),
        pytest.param(
            AZ_VAULT_KEY,
            azure_key(rotate(timeAfterCreate="P1Y")),
            None,
            "a rotation every 365 days",
            id="azure-yearly",
        ),
        pytest.param(
            AZ_VAULT_KEY,
            azure_key({"trigger": {"timeBeforeExpiry": "P30D"}, "action": {"type": "notify"}}),
            None,
            "no rotation policy",
            id="azure-notify-only",
        ),
        pytest.param(
            AZ_VAULT_KEY, {"keyName": "data"}, None, "no rotation policy", id="azure-none"
        ),
        pytest.param("aws:s3/bucket:Bucket", {}, None, None, id="other-types-ignored"),
    ],
)
def test_rotation(
    resource_type: str, props: dict[str, Any], config: dict[str, Any] | None, expected: str | None
) -> None:
    key = Res(resource_type, "site-key", props, protect=True)
    check(run_resource(kms_key_rotation, key, config), key, expected)
