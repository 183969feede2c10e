"""Every example plan through the real program under mocks: the settings each cloud gets."""

from __future__ import annotations

from functools import cache

import pytest

from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.stackconfig import stack_config_values, stack_name
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.conftest import ROOT
from tests.e2e.sdks import sdks_imported


@cache
def run(example: str, site: str, mode: str = "standby") -> StackRun:
    plan = load_plan(ROOT / "examples" / example)
    s = plan.sites[site]
    config = stack_config_values(design(plan), s)
    if mode != "standby":
        config["gpudr:mode"] = mode
    return run_stack(stack_name(plan, s), config, GpudrMocks(default_region=s.region))


def one(r: StackRun, typ: str, contains: str) -> Registration:
    found = [x for x in r.resources if x.type == typ and contains in x.name]
    assert len(found) == 1, [x.urn for x in r.resources if x.type == typ]
    return found[0]


def test_gcs_checkpoints_turbo_dual_region_with_cmek() -> None:
    r = run("gcp-two-region.yaml", "use4")
    bucket = one(r, "gcp:storage/bucket:Bucket", "checkpoints")
    assert bucket.inputs["rpo"] == "ASYNC_TURBO", bucket.urn
    assert bucket.inputs["customPlacementConfig"]["dataLocations"] == ["US-CENTRAL1", "US-EAST4"]
    key = bucket.inputs["encryption"]["defaultKmsKeyName"]
    assert "/locations/us/" in key, bucket.urn  # the key sits in the bucket's location
    keys = [x for x in r.resources if x.type == "gcp:kms/cryptoKey:CryptoKey"]
    assert any(x.id == key for x in keys) and all(x.protect for x in keys)


@pytest.mark.parametrize("site", ["usc1", "use4"])
def test_gcs_weights_locked_retention(site: str) -> None:
    weights = one(run("gcp-two-region.yaml", site), "gcp:storage/bucket:Bucket", "weights")
    assert weights.inputs["retentionPolicy"] == {
        "retentionPeriod": str(180 * 86400),
        "isLocked": True,
    }
    assert not (weights.inputs.get("versioning") or {}).get("enabled"), weights.urn
    assert weights.protect and weights.retain_on_delete


def test_gke_pilot_light_pool_scales_from_zero() -> None:
    standby = one(
        run("gcp-two-region.yaml", "use4"), "gcp:container/nodePool:NodePool", "train-train"
    )
    assert standby.inputs["autoscaling"]["totalMinNodeCount"] == 0
    assert standby.inputs["autoscaling"]["totalMaxNodeCount"] == 8
    failover = one(
        run("gcp-two-region.yaml", "use4", "failover"),
        "gcp:container/nodePool:NodePool",
        "train-train",
    )
    assert failover.inputs["autoscaling"]["totalMinNodeCount"] == 8
    (accel,) = standby.inputs["nodeConfig"]["guestAccelerators"]
    assert (accel["type"], accel["count"]) == ("nvidia-h100-80gb", 8)


def test_aks_pilot_light_pool_min_zero_and_storage_settings() -> None:
    r = run("azure-two-region.yaml", "wus")
    pool = one(r, "azure-native:containerservice:AgentPool", "train-train")
    assert (pool.inputs["minCount"], pool.inputs["count"], pool.inputs["maxCount"]) == (0, 0, 8)
    assert pool.inputs["vmSize"] == "Standard_ND96isr_H100_v5"
    assert pool.inputs["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule"]
    for account in (x for x in r.resources if x.type == "azure-native:storage:StorageAccount"):
        i = account.inputs
        assert (
            i["minimumTlsVersion"],
            i["enableHttpsTrafficOnly"],
            i["allowBlobPublicAccess"],
        ) == (
            "TLS1_2",
            True,
            False,
        ), account.urn
        assert i["encryption"]["keySource"] == "Microsoft.Keyvault", account.urn
        assert account.protect, account.urn
    vault = one(r, "azure-native:keyvault:Vault", "")
    assert vault.inputs["properties"]["enablePurgeProtection"] is True


def test_azure_datasets_object_replication_is_owned_by_the_primary() -> None:
    primary = run("azure-two-region.yaml", "eus")
    policies = [
        x for x in primary.resources if x.type == "azure-native:storage:ObjectReplicationPolicy"
    ]
    assert len(policies) == 2  # destination ("default") then source
    dr = run("azure-two-region.yaml", "wus")
    assert not [x for x in dr.resources if x.type == "azure-native:storage:ObjectReplicationPolicy"]


def test_cross_cloud_transfer_job_runs_on_the_schedule_the_rpo_implies() -> None:
    r = run("aws-to-gcp.yaml", "gcpe4")
    jobs = {x.name: x for x in r.resources if x.type == "gcp:storage/transferJob:TransferJob"}
    ckpt = next(x for n, x in jobs.items() if "checkpoints" in n)
    assert ckpt.inputs["schedule"]["repeatInterval"] == "7200s", ckpt.urn
    source = ckpt.inputs["transferSpec"]["awsS3DataSource"]
    assert source["roleArn"] == "arn:aws:iam::111122223333:role/gpudr-llm-xcloud-gcpe4-sts-reader"
    assert "accessKey" not in source  # federated identity, no keys
    datasets = next(x for n, x in jobs.items() if "datasets" in n)
    assert datasets.inputs["schedule"]["repeatInterval"] == "82800s"


def test_cross_cloud_primary_grants_read_by_federation_and_builds_the_vpn() -> None:
    r = run("aws-to-gcp.yaml", "use1")
    role = one(r, "aws:iam/role:Role", "reader")
    assert role.inputs["name"] == "gpudr-llm-xcloud-gcpe4-sts-reader"
    assert '"Federated": "accounts.google.com"' in role.inputs["assumeRolePolicy"]
    assert len([x for x in r.resources if x.type == "aws:ec2/vpnConnection:VpnConnection"]) == 2
    tunnels = [x for x in r.resources if x.type == "gcp:compute/vPNTunnel:VPNTunnel"]
    assert len(tunnels) == 4 and all(t.inputs["region"] == "us-east4" for t in tunnels)


def test_cross_cloud_dr_stack_runs_with_the_aws_primary_region_down() -> None:
    plan = load_plan(ROOT / "examples" / "aws-to-gcp.yaml")
    s = plan.sites["gcpe4"]
    mocks = GpudrMocks(default_region=s.region, unreachable_regions=frozenset({"us-east-1"}))
    result = run_stack(stack_name(plan, s), stack_config_values(design(plan), s), mocks)
    assert not [x for x in result.resources if x.type.startswith("aws:")]


@pytest.mark.parametrize(
    ("example", "site", "absent"),
    [
        ("aws-two-region.yaml", "usw2", ("pulumi_gcp", "pulumi_azure_native")),
        ("gcp-two-region.yaml", "use4", ("pulumi_aws", "pulumi_azure_native")),
        ("azure-two-region.yaml", "wus", ("pulumi_aws", "pulumi_gcp")),
    ],
)
def test_a_stack_imports_only_its_clouds_sdk(
    example: str, site: str, absent: tuple[str, ...]
) -> None:
    """Module presence, not time (the benchmark measures the cost)."""
    loaded = sdks_imported(f"examples/{example}", site)
    assert not loaded & set(absent), loaded


@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT / "examples").glob("*.yaml")))
def test_stack_clouds_are_the_clouds_the_program_calls(example: str) -> None:
    """The pull-request workflow signs each preview in to `stack_clouds`: exactly the clouds
    whose resources the stack's program registers."""
    from gpudr.build.stackconfig import stack_clouds

    plan = load_plan(ROOT / "examples" / example)
    prefix = {"aws": "aws", "gcp": "gcp", "azure-native": "azure"}
    for site in plan.sites.values():
        registered = {
            prefix[x.type.split(":")[0]]
            for x in run(example, site.name).resources
            if x.type.split(":")[0] in prefix
        }
        assert set(stack_clouds(plan, site)) == registered, stack_name(plan, site)
