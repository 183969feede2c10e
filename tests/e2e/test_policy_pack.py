"""End to end: gpudr's policy pack, started as the Pulumi CLI starts it and driven over gRPC
(gpudr/app/offline/policy.py), judges what the real program registered under mocks for each example.

Every example passes. Each broken variant is the example's registrations with one setting
broken as a program bug or a hand edit would break it, and fails with the right policy on the
right URN.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest
import yaml

from gpudr.app.offline.plan import run_design
from gpudr.app.offline.policy import Violation, evaluate
from gpudr.core.design import design
from gpudr.core.spec import load_plan, parse_plan
from tests.conftest import PACK_CONFIG, ROOT

EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.yaml"))

Stacks = list[dict[str, Any]]


@cache
def _stacks(example: str) -> tuple[dict[str, Any], ...]:
    return tuple(run_design(design(load_plan(ROOT / "examples" / example))))


@cache
def _dx_stacks() -> tuple[dict[str, Any], ...]:
    """aws-two-region with a Direct Connect link instead of transit gateway peering."""
    raw = yaml.safe_load((ROOT / "examples" / "aws-two-region.yaml").read_text())
    raw["sites"]["usw2"]["link"] = {
        "kind": "direct-connect",
        "location": "EqDC2",
        "secondary_location": "CSVA1",
    }
    return tuple(run_design(design(parse_plan(raw))))


def _copy(stacks: tuple[dict[str, Any], ...]) -> Stacks:
    return copy.deepcopy(list(stacks))


def _mandatory(found: dict[str, list[Violation]]) -> list[Violation]:
    return [v for vs in found.values() for v in vs if v.level == "mandatory"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_passes_the_pack(example: str) -> None:
    found = evaluate(_stacks(example), PACK_CONFIG)
    assert set(found) == {s["name"] for s in _stacks(example)}
    assert _mandatory(found) == [], f"{example}: {_mandatory(found)}"


# --- broken variants --------------------------------------------------------------------------


def _find(stacks: Stacks, stack: str, type_: str, name_part: str) -> dict[str, Any]:
    s = next(s for s in stacks if s["name"] == stack)
    matches = [r for r in s["resources"] if r["type"] == type_ and name_part in r["name"]]
    assert len(matches) == 1, [r["name"] for r in matches]
    return matches[0]


def _drop(stacks: Stacks, stack: str, type_: str, name_part: str) -> None:
    gone = _find(stacks, stack, type_, name_part)
    s = next(s for s in stacks if s["name"] == stack)
    s["resources"] = [r for r in s["resources"] if r["urn"] != gone["urn"]]


S3 = "aws:s3/bucket:Bucket"
PRIMARY, DR = "llm-training-use1", "llm-training-usw2"


def encryption_removed(stacks: Stacks) -> str:
    _drop(
        stacks,
        PRIMARY,
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "checkpoints",
    )
    return str(_find(stacks, PRIMARY, S3, "checkpoints")["urn"])


def rtc_off(stacks: Stacks) -> str:
    config = _find(
        stacks,
        PRIMARY,
        "aws:s3/bucketReplicationConfig:BucketReplicationConfig",
        "checkpoints",
    )
    for rule in config["inputs"]["rules"]:
        rule["destination"].pop("replicationTime", None)
    return str(_find(stacks, PRIMARY, S3, "checkpoints")["urn"])


def quota_undersized(stacks: Stacks) -> str:
    # The RTC rate the stack asserts, cut below what checkpoints need with headroom.
    bucket = _find(stacks, PRIMARY, S3, "checkpoints")
    bucket["inputs"]["tags"]["gpudr:quota-mbps"] = "500"
    return str(bucket["urn"])


def lock_missing(stacks: Stacks) -> str:
    _drop(
        stacks,
        PRIMARY,
        "aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration",
        "weights",
    )
    return str(_find(stacks, PRIMARY, S3, "weights")["urn"])


def bucket_unprotected(stacks: Stacks) -> str:
    bucket = _find(stacks, DR, S3, "datasets")
    bucket["protect"] = False
    return str(bucket["urn"])


def force_destroy(stacks: Stacks) -> str:
    bucket = _find(stacks, DR, S3, "weights")
    bucket["inputs"]["forceDestroy"] = True
    return str(bucket["urn"])


def public_access_open(stacks: Stacks) -> str:
    block = _find(
        stacks,
        DR,
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        "checkpoints",
    )
    block["inputs"]["restrictPublicBuckets"] = False
    return str(_find(stacks, DR, S3, "checkpoints")["urn"])


BROKEN: list[tuple[Callable[[Stacks], str], str]] = [
    (encryption_removed, "data-encrypted-at-rest"),
    (rtc_off, "replication-meets-rpo"),
    (quota_undersized, "replication-bandwidth"),
    (lock_missing, "immutable-weights"),
    (bucket_unprotected, "deletion-protection"),
    (force_destroy, "deletion-protection"),
    (public_access_open, "no-public-access"),
]


@pytest.mark.parametrize(("brake", "policy"), BROKEN, ids=[b.__name__ for b, _ in BROKEN])
def test_a_broken_variant_fails_with_the_right_policy_and_urn(
    brake: Callable[[Stacks], str], policy: str
) -> None:
    stacks = _copy(_stacks("aws-two-region.yaml"))
    urn = brake(stacks)
    found = _mandatory(evaluate(stacks, PACK_CONFIG))
    hits = [v for v in found if v.policy == policy]
    assert hits, f"{brake.__name__}: no {policy} violation; got {found}"
    assert urn in {v.urn for v in hits}, f"{brake.__name__}: {policy} not on {urn}: {hits}"


def test_an_undersized_direct_connect_link_fails_replication_bandwidth() -> None:
    stacks = _copy(_dx_stacks())
    assert _mandatory(evaluate(stacks, PACK_CONFIG)) == []
    dr = next(s for s in stacks if s["name"] == DR)
    ports = [r for r in dr["resources"] if r["type"] == "aws:directconnect/connection:Connection"]
    assert ports, "the DX variant registers no Direct Connect connection"
    for port in ports:
        port["inputs"]["bandwidth"] = "50Mbps"
    found = [
        v for v in _mandatory(evaluate(stacks, PACK_CONFIG)) if v.policy == "replication-bandwidth"
    ]
    assert found, "50 Mbps ports carry the dual-written weights: no violation"
    assert all(v.urn.startswith("urn:pulumi:") for v in found), found
