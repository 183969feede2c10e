"""The AWS primary's side of AWS -> Azure: what an Azure DR site's AzCopy jobs sign in as, run
through the real program under mocks for examples/aws-to-azure.yaml's primary and asserted on
what it registered (the link between the sites is not this component's)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.mocks_azure import OFFLINE_TENANT
from gpudr.app.offline.run import StackRun, run_stack, unwrap_secret
from gpudr.build.stackconfig import build_site_configs, stack_config_values, stack_name
from gpudr.contract.naming import azcopy_identity_group
from gpudr.contract.stack import AZCOPY_CREDENTIALS
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "aws-to-azure.yaml"
PRIMARY, DR = "use1", "eus"
OIDC = "aws:iam/openIdConnectProvider:OpenIdConnectProvider"
ROLE = "aws:iam/role:Role"
POLICY = "aws:iam/rolePolicy:RolePolicy"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
GROUP = "azure-native:resources:ResourceGroup"
AUDIENCE = "api://AzureADTokenExchange"
ISSUER = f"login.microsoftonline.com/{OFFLINE_TENANT}/v2.0"


@cache
def primary() -> StackRun:
    plan = load_plan(EXAMPLE)
    site = plan.sites[PRIMARY]
    config: dict[str, Any] = stack_config_values(design(plan), site)
    return run_stack(stack_name(plan, site), config, GpudrMocks(default_region=site.region))


def of_type(typ: str) -> list[Registration]:
    return [x for x in primary().resources if x.type == typ]


def reader_role() -> Registration:
    (role,) = [r for r in of_type(ROLE) if "azcopy-reader" in r.name]
    return role


def test_entra_id_is_an_identity_provider_for_the_exchange_audience_only() -> None:
    (provider,) = of_type(OIDC)
    assert provider.inputs["url"] == f"https://{ISSUER}", provider.urn
    assert provider.inputs["clientIdLists"] == [AUDIENCE], provider.urn
    assert "thumbprintLists" not in provider.inputs, provider.urn  # IAM's own trusted CAs


def test_the_role_trusts_only_the_identity_its_stack_created_for_the_dr_site() -> None:
    role = reader_role()
    (reader,) = build_site_configs(design(load_plan(EXAMPLE)))[PRIMARY].azcopy_readers
    assert role.inputs["name"] == reader.role_name == "gpudr-llm-azdr-eus-azcopy-reader"
    (identity,) = of_type(IDENTITY)
    (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    (provider,) = of_type(OIDC)
    assert statement["Principal"] == {"Federated": provider.outputs["arn"]}, statement
    assert statement["Condition"] == {
        "StringEquals": {
            f"{ISSUER}:sub": identity.outputs["principalId"],
            f"{ISSUER}:aud": AUDIENCE,
        }
    }


def test_a_session_lasts_12_hours_the_longest_aws_allows() -> None:
    assert reader_role().inputs["maxSessionDuration"] == 43200


def test_the_role_reads_the_pulled_buckets_and_nothing_else() -> None:
    (policy,) = [p for p in of_type(POLICY) if "azcopy-reader" in p.name]
    statements = json.loads(policy.inputs["policy"])["Statement"]
    actions = sorted(a for s in statements for a in [s["Action"]] if isinstance(a, str))
    actions += sorted(a for s in statements if isinstance(s["Action"], list) for a in s["Action"])
    assert set(actions) == {"s3:GetObject", "kms:Decrypt", "s3:ListBucket", "s3:GetBucketLocation"}
    buckets = {r for s in statements for r in s["Resource"] if isinstance(s["Resource"], list)}
    (reader,) = build_site_configs(design(load_plan(EXAMPLE)))[PRIMARY].azcopy_readers
    assert len(reader.buckets) == 2  # checkpoints and datasets; weights are dual-written
    assert {f"arn:aws:s3:::{b}" for b in reader.buckets} <= buckets
    assert not any("weights" in r for r in buckets), buckets
    # The site key decrypts only what S3 encrypted for these buckets (not its log groups).
    (decrypt,) = [s for s in statements if s["Action"] == "kms:Decrypt"]
    context = decrypt["Condition"]["StringLike"]["kms:EncryptionContext:aws:s3:arn"]
    assert set(context) == {
        f"arn:aws:s3:::{b}{tail}" for b in reader.buckets for tail in ("", "/*")
    }


def test_the_identity_lives_in_the_dr_region_in_a_group_of_its_own() -> None:
    (identity,) = of_type(IDENTITY)
    groups = [g for g in of_type(GROUP) if "azcopy" in g.name]
    (group,) = groups
    assert group.inputs["resourceGroupName"] == azcopy_identity_group("llm-azdr", DR)
    assert group.inputs["location"] == identity.inputs["location"] == "eastus"
    assert identity.inputs["resourceName"] == "gpudr-llm-azdr-eus-azcopy"


def test_the_identity_leaves_as_the_dr_sites_transfer_credentials() -> None:
    exported, _ = unwrap_secret(primary().outputs["transfer_credentials"])
    (identity,) = of_type(IDENTITY)
    assert set(exported) == {DR}
    values = exported[DR]
    assert set(values) == {name for name, _ in AZCOPY_CREDENTIALS}
    assert not any(secret for _, secret in AZCOPY_CREDENTIALS)  # ids, no key
    assert values["azcopy_client_id"] == identity.outputs["clientId"]
    assert values["azcopy_principal_id"] == identity.outputs["principalId"]
    assert values["azcopy_tenant_id"] == OFFLINE_TENANT
