"""A GCP DR site pulling from a GCP primary with Storage Transfer Service: the primary's stack
grants the DR project's transfer service agent read on each pulled copy (without it the first
scheduled run fails on permissions, and the pack refuses the claim)."""

from __future__ import annotations

from typing import Any

from gpudr.app.offline.plan import run_design
from gpudr.core.design import design
from gpudr.core.spec import parse_plan

PLAN: dict[str, Any] = {
    "name": "prop",
    "sites": {
        "prim": {
            "cloud": "gcp",
            "region": "us-central1",
            "project": "acme-prop-prod",
            "cidr": "10.40.0.0/16",
            "azs": ["us-central1-a", "us-central1-b"],
            "role": "primary",
        },
        "dr": {
            "cloud": "gcp",
            "region": "us-east4",
            "project": "acme-prop-dr",
            "cidr": "10.56.0.0/16",
            "azs": ["us-east4-a", "us-east4-b"],
            "role": "dr",
            "protects": "prim",
        },
    },
    "data": {
        "datasets": {"size": "1TB", "daily_change": "10GB", "rpo": "6h", "replication": "sts"}
    },
}
MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"


def test_the_primary_grants_the_dr_projects_transfer_agent_read_on_the_pulled_copy() -> None:
    primary, _ = run_design(design(parse_plan(PLAN)))
    resources = primary["resources"]
    (bucket,) = [r for r in resources if r["type"] == "gcp:storage/bucket:Bucket"]
    grants = [r for r in resources if r["type"] == MEMBER and "sts-reader" in r["name"]]
    assert {g["inputs"]["role"] for g in grants} == {
        "roles/storage.objectViewer",
        "roles/storage.legacyBucketReader",
    }, [g["urn"] for g in grants]
    for g in grants:
        assert g["inputs"]["bucket"] == bucket["inputs"]["name"], g["urn"]
        # the transfer service agent, looked up (the DR project's, not the primary's)
        member = g["inputs"]["member"]
        assert member.endswith("@storage-transfer-service.iam.gserviceaccount.com"), member
