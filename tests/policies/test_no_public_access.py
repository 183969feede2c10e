"""no-public-access: S3 public access blocks, GCS prevention, Azure accounts and containers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from policies.common import S3_ACCOUNT_PUBLIC_ACCESS_BLOCK
from policies.no_public_access import no_public_access
from tests.policies.builders import azure, gcs, s3
from tests.policies.harness import Res, check, run_stack

Mutation = Callable[[dict[str, Res]], Any]
FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


def account_block(r: dict[str, Res], on: bool) -> None:
    r.pop("public")
    r["account-block"] = Res(
        S3_ACCOUNT_PUBLIC_ACCESS_BLOCK, "account-block", dict.fromkeys(FLAGS, on)
    )


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="all-four-flags"),
        pytest.param(lambda r: account_block(r, True), None, id="account-wide-block"),
        *[
            pytest.param(
                lambda r, f=flag: r["public"].inputs.update({f: False}),
                "leaves",
                id=f"{flag}-off",
            )
            for flag in FLAGS
        ],
        pytest.param(
            lambda r: r["public"].inputs.pop("restrictPublicBuckets"),
            "restrict_public_buckets off",
            id="flag-unset",
        ),
        pytest.param(lambda r: r.pop("public"), "no BucketPublicAccessBlock", id="no-block"),
        pytest.param(
            lambda r: account_block(r, False), "no BucketPublicAccessBlock", id="account-block-off"
        ),
    ],
)
def test_s3(mutate: Mutation, expected: str | None) -> None:
    r = s3()
    mutate(r)
    check(run_stack(no_public_access, list(r.values())), r["bucket"], expected)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param({}, None, id="enforced-uniform"),
        pytest.param({"publicAccessPrevention": "inherited"}, 'set "enforced"', id="inherited"),
        pytest.param({"publicAccessPrevention": None}, 'set "enforced"', id="prevention-unset"),
        pytest.param({"uniformBucketLevelAccess": False}, "no object ACLs", id="fine-grained"),
    ],
)
def test_gcs(changes: dict[str, Any], expected: str | None) -> None:
    r = gcs()
    r["bucket"].inputs.update(changes)
    r["bucket"].inputs = {k: v for k, v in r["bucket"].inputs.items() if v is not None}
    check(run_stack(no_public_access, list(r.values())), r["bucket"], expected)


@pytest.mark.parametrize(
    ("target", "changes", "expected"),
    [
        pytest.param("account", {}, None, id="private"),
        pytest.param("container", {"publicAccess": None}, None, id="container-default-private"),
        pytest.param("account", {"allowBlobPublicAccess": True}, "=False", id="account-public"),
        pytest.param("account", {"allowBlobPublicAccess": None}, "=False", id="account-unset"),
        pytest.param("container", {"publicAccess": "Blob"}, "'Blob'", id="container-blob"),
        pytest.param(
            "container", {"publicAccess": "Container"}, "'Container'", id="container-listing"
        ),
    ],
)
def test_azure(target: str, changes: dict[str, Any], expected: str | None) -> None:
    r = azure()
    r[target].inputs.update(changes)
    r[target].inputs = {k: v for k, v in r[target].inputs.items() if v is not None}
    check(run_stack(no_public_access, list(r.values())), r[target], expected)
