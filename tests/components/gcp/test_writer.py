"""The dual writer at a GCP site: for each dual-written copy its stack declares a service
account and a create-only grant on that copy's bucket (named by the bucket's Output, so the
dependency is recorded). The two sites of test_gcp_site.py, with weights dual-written between
them and the DR site's checkpoints still a turbo dual-region."""

from __future__ import annotations

import dataclasses
from functools import cache

import pytest

from components.gcp.writer import writer_role
from gpudr.app.offline.run import StackRun
from gpudr.contract.grants import GCS_OBJECT_CREATOR, GCS_OBJECT_USER, GCS_WRITE_ROLES
from gpudr.contract.naming import writer_account_id
from gpudr.contract.site import BucketConfig, SiteConfig
from tests.components.gcp.test_gcp_site import BUCKET, SITES, SYSTEM, named, of_type, run, standby

ACCOUNT = "gcp:serviceaccount/account:Account"
MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"


def dual_written(cfg: SiteConfig) -> SiteConfig:
    other = next(
        b.name
        for s in SITES.values()
        if s is not cfg
        for b in s.buckets
        if b.data_class == "weights"
    )

    def weights(b: BucketConfig) -> BucketConfig:
        if b.data_class != "weights":
            return b
        return dataclasses.replace(
            b, mechanism="dual-write", rpo_s=0.0, dual_write_buckets=(other,)
        )

    return dataclasses.replace(cfg, buckets=tuple(weights(b) for b in cfg.buckets))


@cache
def site_run(site: str) -> StackRun:
    return run(dual_written(SITES[site]))


@pytest.mark.parametrize("site", ["usc1", "use4"])
def test_each_dual_written_copy_has_a_writer_and_a_create_grant_on_it(site: str) -> None:
    r = site_run(site)
    cfg = SITES[site]
    (account,) = of_type(r, ACCOUNT)
    assert account.name == f"{site}-weights-writer"
    assert account.inputs["accountId"] == writer_account_id(SYSTEM, site, "weights")
    assert account.inputs["project"] == cfg.project
    bucket = named(r, BUCKET, "weights")
    grants = [g for g in of_type(r, MEMBER) if g.inputs["member"] == account.outputs["member"]]
    assert [(g.inputs["bucket"], g.inputs["role"]) for g in grants] == [
        (bucket.inputs["name"], GCS_OBJECT_CREATOR)
    ]
    (grant,) = grants
    assert grant.name == f"{site}-weights-writer-object-creator"
    assert grant.inputs["member"] == (
        f"serviceAccount:{writer_account_id(SYSTEM, site, 'weights')}"
        f"@{cfg.project}.iam.gserviceaccount.com"
    )
    # linked to the bucket and the account it names, not a copied string
    assert grant.property_dependencies["bucket"] == [bucket.urn], grant.urn
    assert grant.property_dependencies["member"] == [account.urn], grant.urn


@pytest.mark.parametrize("site", ["usc1", "use4"])
def test_other_classes_get_no_writer(site: str) -> None:
    r = site_run(site)
    writers = {x.outputs["member"] for x in of_type(r, ACCOUNT)}
    weights = named(r, BUCKET, "weights").inputs["name"]
    for grant in of_type(r, MEMBER):
        if grant.inputs["member"] in writers:
            assert grant.inputs["bucket"] == weights, grant.urn
    # without dual write, no writer at all
    assert of_type(standby(site), ACCOUNT) == []


def test_a_class_the_writer_also_deletes_from_may_delete() -> None:
    (weights,) = [b for b in SITES["usc1"].buckets if b.data_class == "weights"]
    assert writer_role(weights) == GCS_OBJECT_CREATOR  # locked: create only
    unlocked = dataclasses.replace(weights, data_class="checkpoints", object_lock_days=None)
    assert writer_role(unlocked) == GCS_OBJECT_USER
    assert {writer_role(weights), writer_role(unlocked)} <= set(GCS_WRITE_ROLES)
