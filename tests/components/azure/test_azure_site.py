"""The Azure site, run through the real program under mocks, asserted on what it registered.

The site configs are built by hand (a primary in eastus protected by a DR site in westus), so
these tests pin the Azure components independently of the planner."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any

import pulumi
import pytest

from components.azure.arm import (
    CONTRIBUTOR,
    KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER,
    NETWORK_CONTRIBUTOR,
)
from components.azure.bucket import lifecycle_rules
from components.azure.gpu_cluster import PoolSize, pool_size
from components.azure.network import nodes_subnet_cidr
from components.azure.site import AzureSite, AzureSiteArgs
from gpudr.app.offline.mocks import GpudrMocks, Registration, UnreachableError
from gpudr.app.offline.mocks_azure import OFFLINE_SUBSCRIPTION
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.contract.naming import agent_pool_name, log_sink_name
from gpudr.contract.site import (
    BucketConfig,
    ClusterConfig,
    Lifecycle,
    LinkConfig,
    LogsConfig,
    PeerConfig,
    PoolConfig,
    ReplicationTarget,
    SiteConfig,
    SystemPool,
)

SYSTEM = "llm"
H100 = "Standard_ND96isr_H100_v5"
SITES = {"eus": ("eastus", "10.10.0.0/16"), "wus": ("westus", "10.26.0.0/16")}
CLASSES = ("checkpoints", "weights", "datasets")
REPLICATED = ("checkpoints", "datasets")  # weights are dual-written (RPO 0)

STORAGE_ACCOUNT = "azure-native:storage:StorageAccount"
BLOB_SERVICE = "azure-native:storage:BlobServiceProperties"
CONTAINER = "azure-native:storage:BlobContainer"
LIFECYCLE = "azure-native:storage:ManagementPolicy"
OR_POLICY = "azure-native:storage:ObjectReplicationPolicy"
VAULT = "azure-native:keyvault:Vault"
KEY = "azure-native:keyvault:Key"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
ROLE = "azure-native:authorization:RoleAssignment"
GROUP = "azure-native:resources:ResourceGroup"
AKS = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"
CRG = "azure-native:compute:CapacityReservationGroup"
RESERVATION = "azure-native:compute:CapacityReservation"
PEERING = "azure-native:network:VirtualNetworkPeering"

AKS_SYSTEM_POOL = SystemPool(vm_size="Standard_D4s_v5", nodes=2)
LOG_RETENTION_DAYS = 90


# --- hand-built site configs -----------------------------------------------------------------


def account(site: str, data_class: str) -> str:
    return f"gpudr{site}{data_class}"[:24]


def resource_group(site: str) -> str:
    return f"gpudr-{SYSTEM}-{site}"


def lifecycle(data_class: str) -> Lifecycle:
    if data_class == "checkpoints":
        return Lifecycle(14, "Cold", noncurrent_keep=5, noncurrent_days=7, abort_multipart_days=2)
    if data_class == "weights":
        return Lifecycle(None, None, noncurrent_keep=10, noncurrent_days=30, abort_multipart_days=2)
    return Lifecycle(None, None, noncurrent_keep=3, noncurrent_days=30, abort_multipart_days=7)


def bucket(site: str, data_class: str, role: str) -> BucketConfig:
    targets: tuple[ReplicationTarget, ...] = ()
    if role == "source" and data_class in REPLICATED:
        targets = (
            ReplicationTarget(
                site="wus",
                region="westus",
                account=None,
                bucket=data_class,
                kms_alias="",
                mechanism="azure-or",
                storage_class="Hot",
                rule_id=f"{data_class}-to-wus",
                latency_alarm_s=3600,
                resource_group=resource_group("wus"),
                storage_account=account("wus", data_class),
            ),
        )
    weights = data_class == "weights"
    return BucketConfig(
        data_class=data_class,
        name=data_class,
        role=role,
        rpo_s=0.0 if weights else 14400.0,
        rto_s=3600.0,
        mechanism="dual-write" if weights else "azure-or",
        object_lock_days=365 if weights else None,
        lifecycle=lifecycle(data_class),
        burst_bytes=1e12,
        steady_gbps=0.1,
        required_gbps=0.5,
        replication=targets,
        dual_write_buckets=("weights",) if weights else (),
        storage_account=account(site, data_class),
        sku="Standard_ZRS",
    )


def gpu_pool(name: str, pattern: str, nodes: int, standby: int, reserved: bool) -> PoolConfig:
    return PoolConfig(
        name=name,
        kind="training" if name == "train" else "service",
        gpu="h100",
        instance_type=H100,
        gpus_per_node=8,
        efa_interfaces=0,
        placement=name == "train",
        pattern=pattern,
        nodes=nodes,
        standby_nodes=standby,
        reserved=reserved,
        rto_s=3600.0,
    )


def site_config(site: str) -> SiteConfig:
    region, cidr = SITES[site]
    role = "primary" if site == "eus" else "dr"
    other = "wus" if site == "eus" else "eus"
    if role == "primary":
        pools = (
            gpu_pool("train", "primary", 16, 16, False),
            gpu_pool("svc-chat", "primary", 4, 4, False),
        )
    else:
        pools = (
            gpu_pool("train", "pilot-light", 16, 0, False),
            gpu_pool("svc-chat", "active-active", 4, 4, True),
        )
    return SiteConfig(
        system=SYSTEM,
        site=site,
        cloud="azure",
        region=region,
        role=role,
        account=None,
        cidr=cidr,
        azs=("1", "2", "3"),
        api_public_cidrs=(),
        kms_alias="",
        replication_role="",
        transit_gateway_name="",
        transit_gateway_asn=64600,
        dual_write_endpoint=False,
        buckets=tuple(
            bucket(site, c, "source" if role == "primary" else "replica") for c in CLASSES
        ),
        clusters=(
            ClusterConfig("train", f"{SYSTEM}-{site}-train", "1.33", pools, True, AKS_SYSTEM_POOL),
        ),
        peers=(
            PeerConfig(
                site=other,
                region=SITES[other][0],
                role="dr" if role == "primary" else "primary",
                cidr=SITES[other][1],
                account=None,
                transit_gateway_name="",
                cloud="azure",
                resource_group=resource_group(other),
                network_name=f"gpudr-{SYSTEM}-{other}",
            ),
        ),
        links=(
            LinkConfig(
                kind="vnet-peering",
                peer_site=other,
                capacity_gbps=10.0,
                required_gbps=1.2,
                headroom=1.25,
            ),
        ),
        network_name=f"gpudr-{SYSTEM}-{site}",
        resource_group=resource_group(site),
        key_vault=f"gpudr-{SYSTEM}-{site}-kv",
        logs=LogsConfig(
            sink=log_sink_name("azure", SYSTEM, site, region), retention_days=LOG_RETENTION_DAYS
        ),
    )


def run(
    cfg: SiteConfig, mode: str = "standby", mocks: GpudrMocks | None = None, lock: bool = True
) -> StackRun:
    config = {
        "azure-native:location": cfg.region,
        "gpudr:site": cfg.to_dict(),
        "gpudr:mode": mode,
        "gpudr:lock_weights": "true" if lock else "false",
    }
    return run_stack(f"{SYSTEM}-{cfg.site}", config, mocks or GpudrMocks(default_region=cfg.region))


_RUNS: dict[tuple[str, str], StackRun] = {}


def site_run(site: str, mode: str = "standby") -> StackRun:
    if (site, mode) not in _RUNS:
        _RUNS[(site, mode)] = run(site_config(site), mode)
    return _RUNS[(site, mode)]


def of_type(r: StackRun, typ: str) -> list[Registration]:
    return [x for x in r.resources if x.type == typ]


def named(r: StackRun, typ: str, contains: str) -> Registration:
    found = [x for x in of_type(r, typ) if contains in x.name]
    assert len(found) == 1, [x.urn for x in of_type(r, typ)]
    return found[0]


def by_urn(r: StackRun) -> dict[str, Registration]:
    return {x.urn: x for x in r.registrations}


def depends_on(r: StackRun, x: Registration, other: Registration) -> bool:
    """Whether `x` waits for `other`: directly, through an input, or through a component."""
    index = by_urn(r)
    seen: set[str] = set()
    todo = [x.urn]
    while todo:
        urn = todo.pop()
        if urn == other.urn:
            return True
        if urn in seen or urn not in index:
            continue
        seen.add(urn)
        reg = index[urn]
        todo += reg.dependencies
        todo += [u for deps in reg.property_dependencies.values() for u in deps]
    return False


SITE_NAMES = ["eus", "wus"]


# --- keys -------------------------------------------------------------------------------------


@pytest.mark.parametrize("site", SITE_NAMES)
def test_customer_managed_key_from_key_vault_with_purge_protection(site: str) -> None:
    r = site_run(site)
    vault = named(r, VAULT, "vault")
    props = vault.inputs["properties"]
    assert props["enablePurgeProtection"] is True, vault.urn
    assert props["enableSoftDelete"] is True and props["softDeleteRetentionInDays"] == 90
    assert props["enableRbacAuthorization"] is True, vault.urn
    assert props["sku"] == {"family": "A", "name": "premium"}, vault.urn
    key = named(r, KEY, "key")
    kp = key.inputs["properties"]
    assert (kp["kty"], kp["keySize"]) == ("RSA-HSM", 3072), key.urn
    assert kp["rotationPolicy"] == {
        "attributes": {"expiryTime": "P2Y"},
        "lifetimeActions": [{"action": {"type": "rotate"}, "trigger": {"timeAfterCreate": "P90D"}}],
    }, key.urn
    identity = named(r, IDENTITY, "storage-identity")
    grant = named(r, ROLE, "storage-crypto")
    assert grant.inputs["scope"] == vault.id, grant.urn
    assert grant.inputs["roleDefinitionId"] == (
        f"/subscriptions/{OFFLINE_SUBSCRIPTION}/providers/Microsoft.Authorization/"
        f"roleDefinitions/{KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER}"
    )
    assert grant.inputs["principalId"] == identity.outputs["principalId"], grant.urn
    accounts = of_type(r, STORAGE_ACCOUNT)
    assert len(accounts) == 3
    for x in accounts:
        enc = x.inputs["encryption"]
        assert enc["keySource"] == "Microsoft.Keyvault", x.urn
        assert enc["keyVaultProperties"] == {
            "keyName": "data",
            "keyVaultUri": vault.outputs["properties"]["vaultUri"],
        }, x.urn
        assert enc["encryptionIdentity"]["encryptionUserAssignedIdentity"] == identity.id
        assert enc["requireInfrastructureEncryption"] is True, x.urn
        assert x.inputs["identity"] == {
            "type": "UserAssigned",
            "userAssignedIdentities": [identity.id],
        }, x.urn
        # created with the key only once the identity may use it
        assert grant.urn in x.dependencies, x.urn


# --- data accounts ----------------------------------------------------------------------------


@pytest.mark.parametrize("site", SITE_NAMES)
def test_accounts_tls12_https_only_private_no_shared_key(site: str) -> None:
    r = site_run(site)
    accounts = of_type(r, STORAGE_ACCOUNT)
    assert sorted(x.inputs["accountName"] for x in accounts) == sorted(
        account(site, c) for c in CLASSES
    )
    for x in accounts:
        i = x.inputs
        assert i["kind"] == "StorageV2" and i["sku"] == {"name": "Standard_ZRS"}, x.urn
        assert i["minimumTlsVersion"] == "TLS1_2", x.urn
        assert i["enableHttpsTrafficOnly"] is True, x.urn
        assert i["allowBlobPublicAccess"] is False, x.urn
        assert i["allowSharedKeyAccess"] is False, x.urn
        assert i["allowCrossTenantReplication"] is False, x.urn


@pytest.mark.parametrize("site", SITE_NAMES)
def test_versioning_and_change_feed_on_every_account(site: str) -> None:
    r = site_run(site)
    services = of_type(r, BLOB_SERVICE)
    assert sorted(x.inputs["accountName"] for x in services) == sorted(
        account(site, c) for c in CLASSES
    )
    for x in services:
        assert x.inputs["blobServicesName"] == "default", x.urn
        assert x.inputs["isVersioningEnabled"] is True, x.urn
        assert x.inputs["changeFeed"] == {"enabled": True}, x.urn
        assert x.inputs["deleteRetentionPolicy"] == {"enabled": True, "days": 7}, x.urn
        assert x.inputs["containerDeleteRetentionPolicy"] == {"enabled": True, "days": 7}


@pytest.mark.parametrize("site", SITE_NAMES)
def test_containers_are_private(site: str) -> None:
    r = site_run(site)
    containers = of_type(r, CONTAINER)
    assert sorted(x.inputs["containerName"] for x in containers) == sorted(CLASSES)
    for x in containers:
        assert x.inputs["publicAccess"] == "None", x.urn
        assert x.inputs["accountName"] == account(site, x.inputs["containerName"]), x.urn


def test_weights_immutability_is_created_unlocked_until_the_switch() -> None:
    """Azure accepts an account immutability policy only Unlocked at creation; the stack locks
    it once `gpudr:lock_weights` is set after the first deployment."""
    r = run(site_config("eus"), lock=False)
    weights = named(r, STORAGE_ACCOUNT, "weights")
    policy = weights.inputs["immutableStorageWithVersioning"]["immutabilityPolicy"]
    assert policy["state"] == "Unlocked", weights.urn


def trial(cfg: SiteConfig) -> SiteConfig:
    """The site with its weights under a trial's lock (data.weights.lock: governance)."""
    buckets = tuple(
        dataclasses.replace(b, object_lock_mode="governance") if b.data_class == "weights" else b
        for b in cfg.buckets
    )
    return dataclasses.replace(cfg, buckets=buckets)


def test_trial_weights_stay_unlocked() -> None:
    r = run(trial(site_config("eus")), lock=False)
    weights = named(r, STORAGE_ACCOUNT, "weights")
    policy = weights.inputs["immutableStorageWithVersioning"]["immutabilityPolicy"]
    assert policy["state"] == "Unlocked", weights.urn


def test_trial_refuses_the_irreversible_lock() -> None:
    """gpudr:lock_weights on a trial would make its accounts undeletable for a year."""
    with pytest.raises(
        Exception, match=r"governance \(a trial\).*pulumi config rm gpudr:lock_weights"
    ):
        run(trial(site_config("eus")), lock=True)


@pytest.mark.parametrize("site", SITE_NAMES)
def test_weights_account_is_worm_locked_for_365_days(site: str) -> None:
    r = site_run(site)
    weights = named(r, STORAGE_ACCOUNT, "weights")
    assert weights.inputs["immutableStorageWithVersioning"] == {
        "enabled": True,
        "immutabilityPolicy": {
            "immutabilityPeriodSinceCreationInDays": 365,
            "state": "Locked",
            "allowProtectedAppendWrites": False,
        },
    }, weights.urn
    for x in of_type(r, STORAGE_ACCOUNT):
        if x is not weights:
            assert "immutableStorageWithVersioning" not in x.inputs, x.urn


def test_checkpoint_lifecycle_expires_old_versions_and_tiers_to_cold() -> None:
    r = site_run("wus")
    policy = named(r, LIFECYCLE, "checkpoints")
    rules = {x["name"]: x for x in policy.inputs["policy"]["rules"]}
    assert rules["expire-previous-versions"]["definition"]["actions"] == {
        "version": {"delete": {"daysAfterCreationGreaterThan": 7}}
    }, policy.urn
    assert rules["archive-older"]["definition"]["actions"] == {
        "baseBlob": {"tierToCold": {"daysAfterModificationGreaterThan": 14}}
    }, policy.urn
    # current checkpoints are never deleted by age
    assert all(
        "delete" not in x["definition"]["actions"].get("baseBlob", {}) for x in rules.values()
    )


@pytest.mark.parametrize("site", SITE_NAMES)
def test_data_bearing_resources_are_protected(site: str) -> None:
    r = site_run(site)
    data = (
        of_type(r, STORAGE_ACCOUNT)
        + of_type(r, VAULT)
        + of_type(r, KEY)
        + of_type(r, GROUP)
        + of_type(r, CONTAINER)
    )
    assert len(data) == 3 + 1 + 1 + 1 + 3
    for x in data:
        assert x.protect and x.retain_on_delete, x.urn


# --- object replication -----------------------------------------------------------------------


def test_object_replication_destination_default_then_source_with_returned_ids() -> None:
    r = site_run("eus")
    policies = of_type(r, OR_POLICY)
    assert len(policies) == 4, [x.urn for x in policies]
    for cls in REPLICATED:
        dest = named(r, OR_POLICY, f"{cls}-to-wus-destination")
        src = named(r, OR_POLICY, f"{cls}-to-wus-source")
        source_account = named(r, STORAGE_ACCOUNT, cls)
        dest_id = (
            f"/subscriptions/{OFFLINE_SUBSCRIPTION}/resourceGroups/{resource_group('wus')}"
            f"/providers/Microsoft.Storage/storageAccounts/{account('wus', cls)}"
        )
        # the destination policy is written on the DR account, requested as "default"
        assert dest.inputs["accountName"] == account("wus", cls), dest.urn
        assert dest.inputs["resourceGroupName"] == resource_group("wus"), dest.urn
        assert dest.inputs["objectReplicationPolicyId"] == "default", dest.urn
        # cross-tenant replication is off, so both accounts by full resource id
        assert dest.inputs["sourceAccount"] == source_account.id, dest.urn
        assert dest.inputs["destinationAccount"] == dest_id, dest.urn
        assert dest.inputs["rules"] == [{"sourceContainer": cls, "destinationContainer": cls}], (
            dest.urn
        )
        assert dest.inputs["metrics"] == {"enabled": True}, dest.urn
        # then the source policy, under the id and rule ids the destination returned
        assert src.inputs["accountName"] == account("eus", cls), src.urn
        assert src.inputs["objectReplicationPolicyId"] == dest.outputs["policyId"] != "default"
        (rule,) = src.inputs["rules"]
        assert rule["ruleId"] == dest.outputs["rules"][0]["ruleId"], src.urn
        assert (rule["sourceContainer"], rule["destinationContainer"]) == (cls, cls)
        assert (src.inputs["sourceAccount"], src.inputs["destinationAccount"]) == (
            source_account.id,
            dest_id,
        )
        assert depends_on(r, src, dest), src.urn
        # replication waits for versioning and the change feed on the source
        assert depends_on(r, src, named(r, BLOB_SERVICE, cls)), src.urn
        # standard object replication: no priority replication setting is sent
        assert not any("priority" in k.lower() for k in src.inputs), src.urn


def test_dr_stack_owns_no_replication_policy() -> None:
    assert of_type(site_run("wus"), OR_POLICY) == []


# --- GPU clusters -----------------------------------------------------------------------------


@pytest.mark.parametrize("site", SITE_NAMES)
def test_aks_private_entra_only_overlay(site: str) -> None:
    r = site_run(site)
    aks = named(r, AKS, "train")
    i = aks.inputs
    assert i["resourceName"] == f"{SYSTEM}-{site}-train", aks.urn
    assert i["apiServerAccessProfile"] == {"enablePrivateCluster": True}, aks.urn
    assert i["disableLocalAccounts"] is True, aks.urn
    assert i["aadProfile"]["managed"] is True and i["aadProfile"]["enableAzureRBAC"] is True
    assert i["oidcIssuerProfile"] == {"enabled": True}, aks.urn
    assert i["securityProfile"] == {"workloadIdentity": {"enabled": True}}, aks.urn
    assert i["sku"] == {"name": "Base", "tier": "Standard"}, aks.urn
    assert i["networkProfile"]["networkPlugin"] == "azure", aks.urn
    assert i["networkProfile"]["networkPluginMode"] == "overlay", aks.urn
    (system,) = i["agentPoolProfiles"]
    assert system["mode"] == "System" and system["availabilityZones"] == ["1", "2", "3"]
    # The pool the plan sizes and prices, from the site config.
    assert (system["vmSize"], system["count"]) == ("Standard_D4s_v5", 2), aks.urn
    identity = named(r, IDENTITY, "train-identity")
    assert i["identity"] == {"type": "UserAssigned", "userAssignedIdentities": [identity.id]}
    subnet_grant = named(r, ROLE, "subnet-access")
    assert subnet_grant.inputs["roleDefinitionId"].endswith(NETWORK_CONTRIBUTOR)
    assert subnet_grant.inputs["scope"] == system["vnetSubnetID"], subnet_grant.urn
    assert depends_on(r, aks, subnet_grant), aks.urn


def test_api_public_only_from_named_networks() -> None:
    cfg = dataclasses.replace(site_config("wus"), api_public_cidrs=("203.0.113.0/24",))
    aks = named(run(cfg), AKS, "train")
    assert aks.inputs["apiServerAccessProfile"] == {
        "enablePrivateCluster": False,
        "authorizedIPRanges": ["203.0.113.0/24"],
    }, aks.urn


def pools(r: StackRun) -> dict[str, dict[str, Any]]:
    return {x.inputs["agentPoolName"]: x.inputs for x in of_type(r, POOL)}


@pytest.mark.parametrize(
    ("site", "mode", "train", "chat"),
    [
        ("eus", "standby", (16, 16, 16), (4, 4, 4)),
        ("wus", "standby", (0, 0, 16), (4, 4, 4)),  # pilot light: nothing running, ceiling 16
        ("wus", "failover", (16, 16, 16), (4, 4, 4)),
    ],
)
def test_gpu_pool_sizes_follow_pattern_and_mode(
    site: str, mode: str, train: tuple[int, int, int], chat: tuple[int, int, int]
) -> None:
    p = pools(site_run(site, mode))
    for agent, expected in (("train", train), ("svcchat", chat)):
        got = (p[agent]["minCount"], p[agent]["count"], p[agent]["maxCount"])
        assert got == expected, (site, mode, agent, got)
        assert p[agent]["enableAutoScaling"] is True


@pytest.mark.parametrize("site", SITE_NAMES)
def test_gpu_pools_tainted_user_mode_in_first_zone(site: str) -> None:
    r = site_run(site)
    aks = named(r, AKS, "train")
    for x in of_type(r, POOL):
        i = x.inputs
        assert i["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule"], x.urn
        assert i["mode"] == "User" and i["osType"] == "Linux", x.urn
        assert i["vmSize"] == H100, x.urn
        assert i["availabilityZones"] == ["1"], x.urn
        assert i["scaleDownMode"] == "Delete", x.urn
        assert i["resourceName"] == aks.outputs["name"], x.urn
        assert i["vnetSubnetID"] == aks.inputs["agentPoolProfiles"][0]["vnetSubnetID"]
        assert i["nodeLabels"]["gpudr/pool"] in ("train", "svc-chat"), x.urn
        assert i["tags"]["gpudr:dr-role"] == "gpu-pool", x.urn


def test_reserved_pool_gets_a_zonal_capacity_reservation() -> None:
    r = site_run("wus")
    group = named(r, CRG, "svc-chat")
    reservation = named(r, RESERVATION, "svc-chat")
    assert group.inputs["zones"] == ["1"] and group.inputs["location"] == "westus"
    assert reservation.inputs["sku"] == {"name": H100, "capacity": 4}, reservation.urn
    assert reservation.inputs["zones"] == ["1"], reservation.urn
    assert reservation.inputs["capacityReservationGroupName"] == group.outputs["name"]
    chat = pools(r)["svcchat"]
    assert chat["capacityReservationGroupID"] == group.id
    assert "capacityReservationGroupID" not in pools(r)["train"]
    grant = named(r, ROLE, "svc-chat-reservation-access")
    assert grant.inputs["scope"] == group.id and grant.inputs["roleDefinitionId"].endswith(
        CONTRIBUTOR
    )
    assert len(of_type(site_run("eus"), CRG)) == 0


def test_backup_restore_cluster_is_declared_only_on_failover() -> None:
    base = site_config("wus")
    (cluster,) = base.clusters
    cold = dataclasses.replace(
        base,
        clusters=(
            dataclasses.replace(
                cluster,
                standby_control_plane=False,
                pools=tuple(
                    dataclasses.replace(
                        p, pattern="backup-restore", standby_nodes=0, reserved=False
                    )
                    for p in cluster.pools
                ),
            ),
        ),
    )
    assert of_type(run(cold), AKS) == []
    assert len(of_type(run(cold, "failover"), POOL)) == 2


# --- network ----------------------------------------------------------------------------------


@pytest.mark.parametrize("site", SITE_NAMES)
def test_vnet_peering_to_the_peer_by_deterministic_id(site: str) -> None:
    r = site_run(site)
    other = "wus" if site == "eus" else "eus"
    (peering,) = of_type(r, PEERING)
    assert peering.inputs["remoteVirtualNetwork"] == {
        "id": f"/subscriptions/{OFFLINE_SUBSCRIPTION}/resourceGroups/{resource_group(other)}"
        f"/providers/Microsoft.Network/virtualNetworks/gpudr-{SYSTEM}-{other}"
    }, peering.urn
    assert peering.inputs["allowVirtualNetworkAccess"] is True, peering.urn
    assert peering.inputs["allowForwardedTraffic"] is False, peering.urn
    vnet = named(r, "azure-native:network:VirtualNetwork", "vnet")
    assert vnet.inputs["addressSpace"] == {"addressPrefixes": [SITES[site][1]]}, vnet.urn
    assert "subnets" not in vnet.inputs, vnet.urn
    subnet = named(r, "azure-native:network:Subnet", "nodes")
    assert subnet.inputs["addressPrefix"] == SITES[site][1].replace("/16", "/20"), subnet.urn


# --- DR independence --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["standby", "failover"])
def test_dr_stack_runs_with_primary_region_unreachable(mode: str) -> None:
    mocks = GpudrMocks(default_region="westus", unreachable_regions=frozenset({"eastus"}))
    r = run(site_config("wus"), mode, mocks)
    assert len(r.resources) > 25
    located = [x for x in r.resources if "location" in x.inputs]
    assert {x.inputs["location"] for x in located} == {"westus"}
    assert not any("eastus" in str(x.inputs) for x in r.resources)


def test_unreachable_region_really_fails_a_stack_placed_there() -> None:
    mocks = GpudrMocks(default_region="eastus", unreachable_regions=frozenset({"eastus"}))
    with pytest.raises(UnreachableError, match="eastus is unreachable"):
        run(site_config("eus"), "standby", mocks)


def takes_location(typ: str) -> bool:
    """Whether the azure-native class behind a type token has a `location` argument."""
    _, module, name = typ.split(":")
    cls = getattr(importlib.import_module(f"pulumi_azure_native.{module}"), name)
    return "location" in inspect.signature(cls._internal_init).parameters


@pytest.mark.parametrize("site", SITE_NAMES)
def test_every_resource_that_takes_a_location_is_placed_in_the_site_region(site: str) -> None:
    r = site_run(site)
    located = [x for x in r.resources if takes_location(x.type)]
    assert {x.type for x in located} >= {STORAGE_ACCOUNT, VAULT, IDENTITY, GROUP, AKS}
    for x in located:
        assert x.inputs.get("location") == SITES[site][0], x.urn


# --- the component's outputs ------------------------------------------------------------------


@pulumi.runtime.test  # type: ignore[untyped-decorator]
def test_site_outputs() -> pulumi.Output[None]:
    site = AzureSite("wus", AzureSiteArgs(config=site_config("wus"), failover=False))

    def check(values: list[Any]) -> None:
        buckets, clusters, key_id, dual_write = values
        assert buckets == {c: f"{account('wus', c)}/{c}" for c in CLASSES}
        assert clusters == {"train": f"{SYSTEM}-wus-train"}
        assert key_id == f"https://gpudr-{SYSTEM}-wus-kv.vault.azure.net/keys/data"
        assert dual_write is None

    return pulumi.Output.all(
        site.buckets, site.clusters, site.key_id, site.dual_write_endpoint
    ).apply(check)


# --- pure helpers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pool", "agent"),
    [
        ("train", "train"),
        ("svc-chat", "svcchat"),
        ("Train_H100-large", "trainh100lar"),
        ("8x-h100", "p8xh100"),
    ],
)
def test_agent_pool_name(pool: str, agent: str) -> None:
    assert agent_pool_name(pool) == agent
    assert len(agent) <= 12 and agent.isalnum() and agent.islower() and agent[0].isalpha()


def test_pool_names_that_collide_are_refused() -> None:
    base = site_config("wus")
    (cluster,) = base.clusters
    clash = dataclasses.replace(
        cluster, pools=(*cluster.pools, dataclasses.replace(cluster.pools[1], name="svc_chat"))
    )
    with pytest.raises(ValueError, match="repeat"):
        run(dataclasses.replace(base, clusters=(clash,)))


def test_site_range_overlapping_the_pod_range_is_refused() -> None:
    cfg = dataclasses.replace(site_config("wus"), cidr="10.244.0.0/16")
    with pytest.raises(ValueError, match="overlaps"):
        run(cfg)


@pytest.mark.parametrize(
    ("pattern", "standby", "failover", "size"),
    [
        ("primary", 16, False, PoolSize(16, 16, 16)),
        ("pilot-light", 0, False, PoolSize(0, 0, 16)),
        ("pilot-light", 0, True, PoolSize(16, 16, 16)),
        ("warm-standby", 4, False, PoolSize(4, 4, 16)),
        ("active-active", 16, False, PoolSize(16, 16, 16)),
        ("backup-restore", 0, True, PoolSize(16, 16, 16)),
    ],
)
def test_pool_size(pattern: str, standby: int, failover: bool, size: PoolSize) -> None:
    assert pool_size(gpu_pool("train", pattern, 16, standby, False), failover) == size


def test_nodes_subnet_is_the_first_slash_20() -> None:
    assert nodes_subnet_cidr("10.10.0.0/16") == "10.10.0.0/20"
    assert nodes_subnet_cidr("10.10.0.0/22") == "10.10.0.0/22"


def test_lifecycle_refuses_a_non_azure_tier() -> None:
    cfg = bucket("eus", "checkpoints", "source")
    wrong = dataclasses.replace(
        cfg, lifecycle=dataclasses.replace(cfg.lifecycle, archive_class="GLACIER_IR")
    )
    with pytest.raises(ValueError, match="not an Azure access tier"):
        lifecycle_rules(wrong)
    archive = dataclasses.replace(
        cfg, lifecycle=dataclasses.replace(cfg.lifecycle, archive_class="Archive")
    )
    with pytest.raises(ValueError, match="not available on Standard_ZRS"):
        lifecycle_rules(archive)


def test_unsupported_link_kind_is_refused() -> None:
    base = site_config("eus")
    cfg = dataclasses.replace(base, links=(dataclasses.replace(base.links[0], kind="tgw-peering"),))
    with pytest.raises(ValueError, match="not supported on an Azure site"):
        run(cfg)
