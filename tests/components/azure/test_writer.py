"""The dual writer at an Azure site: for each dual-written copy its stack declares a managed
identity and a Storage Blob Data Contributor assignment scoped to that copy's storage account
(the account's id, an Output of the account, so the dependency is recorded). The two sites of
test_azure_site.py: weights dual-written, checkpoints and datasets object-replicated."""

from __future__ import annotations

import dataclasses

import pytest

from gpudr.app.offline.mocks_azure import OFFLINE_SUBSCRIPTION
from gpudr.contract.grants import (
    AZURE_BLOB_WRITE_ROLE_IDS,
    STORAGE_BLOB_DATA_CONTRIBUTOR,
    azure_role_guid,
)
from gpudr.contract.naming import writer_name
from gpudr.contract.tags import DrRole, Tag
from tests.components.azure.test_azure_site import (
    IDENTITY,
    ROLE,
    SITE_NAMES,
    STORAGE_ACCOUNT,
    SYSTEM,
    account,
    of_type,
    run,
    site_config,
    site_run,
)


def writers(site: str) -> list[str]:
    return [x.name for x in of_type(site_run(site), IDENTITY) if x.name.endswith("-writer")]


@pytest.mark.parametrize("site", SITE_NAMES)
def test_each_dual_written_copy_has_a_writer_and_a_grant_on_its_account(site: str) -> None:
    r = site_run(site)
    (identity,) = [x for x in of_type(r, IDENTITY) if x.name == f"{site}-weights-writer"]
    assert identity.inputs["resourceName"] == writer_name(SYSTEM, site, "weights")
    assert identity.inputs["location"] == site_config(site).region, identity.urn
    assert identity.inputs["tags"][Tag.DR_ROLE.key] == DrRole.WRITER
    assert identity.inputs["tags"][Tag.DATA_CLASS.key] == "weights"
    weights = next(
        x
        for x in of_type(r, STORAGE_ACCOUNT)
        if x.inputs["accountName"] == account(site, "weights")
    )
    grants = [
        x for x in of_type(r, ROLE) if x.inputs["principalId"] == identity.outputs["principalId"]
    ]
    (grant,) = grants
    assert grant.name == f"{site}-weights-writer-grant"
    assert grant.inputs["scope"] == weights.id, grant.urn
    assert grant.inputs["roleDefinitionId"] == (
        f"/subscriptions/{OFFLINE_SUBSCRIPTION}/providers/Microsoft.Authorization/"
        f"roleDefinitions/{STORAGE_BLOB_DATA_CONTRIBUTOR}"
    )
    assert azure_role_guid(grant.inputs["roleDefinitionId"]) in AZURE_BLOB_WRITE_ROLE_IDS
    assert grant.inputs["principalType"] == "ServicePrincipal", grant.urn
    # linked to the account and the identity it names, not a copied string
    assert grant.property_dependencies["scope"] == [weights.urn], grant.urn
    assert grant.property_dependencies["principalId"] == [identity.urn], grant.urn


@pytest.mark.parametrize("site", SITE_NAMES)
def test_replicated_classes_get_no_writer(site: str) -> None:
    assert writers(site) == [f"{site}-weights-writer"]


def test_every_dual_written_class_gets_one() -> None:
    """Checkpoints dual-written too (as in examples/azure-two-region.yaml): a writer each."""
    cfg = site_config("wus")
    dual = dataclasses.replace(
        cfg,
        buckets=tuple(
            dataclasses.replace(b, mechanism="dual-write", dual_write_buckets=(b.name,))
            if b.data_class == "checkpoints"
            else b
            for b in cfg.buckets
        ),
    )
    r = run(dual)
    names = sorted(x.name for x in of_type(r, IDENTITY) if x.name.endswith("-writer"))
    assert names == ["wus-checkpoints-writer", "wus-weights-writer"]
    scopes = {x.inputs["scope"] for x in of_type(r, ROLE) if x.name.endswith("-writer-grant")}
    accounts = {
        x.id for x in of_type(r, STORAGE_ACCOUNT) if "datasets" not in x.inputs["accountName"]
    }
    assert scopes == accounts
