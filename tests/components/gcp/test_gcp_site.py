"""The GCP site, run as the real program (`__main__.py`) per stack under the mocks, asserted on
what it registered; and its pure parts (address plan, pool sizes) on their own.

Two hand-built sites: a primary in us-central1 and its DR site in us-east4, both holding an
H100 (a3-highgpu-8g) training cluster of 4 nodes. The DR site owns the checkpoints as a turbo
dual-region bucket spanning both regions, keeps locked weights, and pulls datasets from an S3
bucket every hour with Storage Transfer Service.
"""

from __future__ import annotations

import dataclasses
import inspect
import ipaddress
import re
from functools import cache
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pytest

from components.gcp.network import address_plan
from components.gcp.site import GcpSite, GcpSiteArgs
from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.contract.naming import log_sink_name
from gpudr.contract.site import (
    BucketConfig,
    ClusterConfig,
    InboundTransfer,
    Lifecycle,
    LinkConfig,
    LogsConfig,
    PeerConfig,
    PoolConfig,
    SiteConfig,
)

SYSTEM = "llm"
PRIMARY_PROJECT = "gpudr-offline-train"
DR_PROJECT = "gpudr-offline-dr"
CHECKPOINTS_LC = Lifecycle(
    14, "COLDLINE", noncurrent_keep=5, noncurrent_days=7, abort_multipart_days=2
)
WEIGHTS_LC = Lifecycle(None, None, noncurrent_keep=10, noncurrent_days=30, abort_multipart_days=2)
DATASETS_LC = Lifecycle(None, None, noncurrent_keep=3, noncurrent_days=30, abort_multipart_days=7)
TRANSFER = InboundTransfer(
    service="sts",
    source_cloud="aws",
    source_site="lake",
    source_region="us-east-1",
    source_bucket="llm-lake-datasets-0a1b2c",
    source_account="111122223333",
    source_project=None,
    schedule_s=3600,
    role_name="gpudr-llm-use4-sts-reader",
)


def bucket(data_class: str, name: str, role: str, **kw: Any) -> BucketConfig:
    fields: dict[str, Any] = {
        "data_class": data_class,
        "name": name,
        "role": role,
        "rpo_s": None,
        "rto_s": None,
        "mechanism": "none",
        "object_lock_days": None,
        "lifecycle": DATASETS_LC,
        "burst_bytes": 0.0,
        "steady_gbps": 0.0,
        "required_gbps": 0.0,
    }
    fields.update(kw)
    return BucketConfig(**fields)


def train_pool(pattern: str, standby: int, reserved: bool = False) -> PoolConfig:
    return PoolConfig(
        name="train",
        kind="training",
        gpu="h100",
        instance_type="a3-highgpu-8g",
        gpus_per_node=8,
        efa_interfaces=0,
        placement=True,
        pattern=pattern,
        nodes=4,
        standby_nodes=standby,
        reserved=reserved,
        rto_s=14400,
        accelerator="nvidia-h100-80gb",
    )


def peer(site: str, region: str, role: str, cidr: str, project: str) -> PeerConfig:
    return PeerConfig(
        site=site,
        region=region,
        role=role,
        cidr=cidr,
        account=None,
        transit_gateway_name=f"gpudr-{SYSTEM}-{site}",
        cloud="gcp",
        project=project,
        network_name=f"gpudr-{SYSTEM}-{site}",
    )


def link(kind: str, peer_site: str) -> LinkConfig:
    return LinkConfig(
        kind=kind, peer_site=peer_site, capacity_gbps=100, required_gbps=1.2, headroom=1.5
    )


def site(
    name: str,
    region: str,
    role: str,
    project: str,
    cidr: str,
    asn: int,
    buckets: tuple[BucketConfig, ...],
    pool: PoolConfig,
    peer_: PeerConfig,
) -> SiteConfig:
    return SiteConfig(
        system=SYSTEM,
        site=name,
        cloud="gcp",
        region=region,
        role=role,
        account=None,
        cidr=cidr,
        azs=(f"{region}-a", f"{region}-b"),
        api_public_cidrs=(),
        kms_alias=f"alias/gpudr/{SYSTEM}/{name}",
        replication_role=f"gpudr-{SYSTEM}-{name}-replication",
        transit_gateway_name=f"gpudr-{SYSTEM}-{name}",
        transit_gateway_asn=asn,
        dual_write_endpoint=False,
        buckets=buckets,
        clusters=(
            ClusterConfig(
                name="train",
                eks_name=f"{SYSTEM}-{name}-train",
                kubernetes_version="1.33",
                pools=(pool,),
                standby_control_plane=True,
            ),
        ),
        peers=(peer_,),
        links=(link("vpc-peering", peer_.site),),
        network_name=f"gpudr-{SYSTEM}-{name}",
        project=project,
        key_ring=f"gpudr-{SYSTEM}-{name}",
        logs=LogsConfig(sink=log_sink_name("gcp", SYSTEM, name, region), retention_days=365),
    )


PRIMARY = site(
    "usc1",
    "us-central1",
    "primary",
    PRIMARY_PROJECT,
    "10.10.0.0/16",
    64600,
    (
        bucket(
            "weights",
            "llm-usc1-weights-1a2b3c",
            "source",
            object_lock_days=365,
            lifecycle=WEIGHTS_LC,
            location="US-CENTRAL1",
            kms_location="us-central1",
        ),
    ),
    train_pool("primary", 4),
    peer("use4", "us-east4", "dr", "10.20.0.0/16", DR_PROJECT),
)
DR = site(
    "use4",
    "us-east4",
    "dr",
    DR_PROJECT,
    "10.20.0.0/16",
    64601,
    (
        bucket(
            "checkpoints",
            "llm-use4-checkpoints-4d5e6f",
            "dual-region",
            rpo_s=14400,
            mechanism="gcs-turbo",
            lifecycle=CHECKPOINTS_LC,
            location="US",
            data_locations=("US-CENTRAL1", "US-EAST4"),
            turbo=True,
            kms_location="us",
        ),
        bucket(
            "weights",
            "llm-use4-weights-7a8b9c",
            "replica",
            object_lock_days=365,
            lifecycle=WEIGHTS_LC,
            location="US-EAST4",
            kms_location="us-east4",
        ),
        bucket(
            "datasets",
            "llm-use4-datasets-0d1e2f",
            "replica",
            rpo_s=86400,
            mechanism="sts",
            location="US-EAST4",
            kms_location="us-east4",
            inbound=(TRANSFER,),
        ),
    ),
    train_pool("pilot-light", 0),
    peer("usc1", "us-central1", "primary", "10.10.0.0/16", PRIMARY_PROJECT),
)
SITES = {"usc1": PRIMARY, "use4": DR}

BUCKET = "gcp:storage/bucket:Bucket"
CRYPTO_KEY = "gcp:kms/cryptoKey:CryptoKey"
KEY_RING = "gcp:kms/keyRing:KeyRing"
KEY_GRANT = "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember"
NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
TRANSFER_JOB = "gcp:storage/transferJob:TransferJob"
ENCRYPTER = "roles/cloudkms.cryptoKeyEncrypterDecrypter"


def run(cfg: SiteConfig, mode: str = "standby", mocks: GpudrMocks | None = None) -> StackRun:
    config = {"gcp:project": cfg.project, "gpudr:site": cfg.to_dict(), "gpudr:mode": mode}
    return run_stack(f"{SYSTEM}-{cfg.site}", config, mocks or GpudrMocks(default_region=cfg.region))


@cache
def standby(name: str) -> StackRun:
    return run(SITES[name])


def of_type(r: StackRun, typ: str) -> list[Registration]:
    return [x for x in r.resources if x.type == typ]


def named(r: StackRun, typ: str, contains: str) -> Registration:
    found = [x for x in of_type(r, typ) if contains in x.name]
    assert len(found) == 1, [x.urn for x in of_type(r, typ)]
    return found[0]


def by_urn(r: StackRun, urn: str) -> Registration:
    return next(x for x in r.registrations if x.urn == urn)


# --- data: buckets and keys ----------------------------------------------------------------


def test_checkpoints_are_a_turbo_dual_region_with_cmek_in_us() -> None:
    r = standby("use4")
    b = named(r, BUCKET, "checkpoints")
    assert b.inputs["location"] == "US", b.urn
    assert b.inputs["customPlacementConfig"] == {"dataLocations": ["US-CENTRAL1", "US-EAST4"]}
    assert b.inputs["rpo"] == "ASYNC_TURBO", b.urn
    (us_key,) = [x for x in of_type(r, CRYPTO_KEY) if x.name == "use4-key-us-key"]
    assert b.inputs["encryption"]["defaultKmsKeyName"] == us_key.id, b.urn
    assert (
        us_key.id
        == f"projects/{DR_PROJECT}/locations/us/keyRings/gpudr-llm-use4-us/cryptoKeys/data"
    )


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_weights_locked_retention_and_versioning_off(name: str) -> None:
    r = standby(name)
    w = named(r, BUCKET, "weights")
    assert w.inputs["retentionPolicy"] == {"retentionPeriod": "31536000", "isLocked": True}, w.urn
    assert w.inputs["versioning"] == {"enabled": False}, w.urn
    actions = [rule["action"]["type"] for rule in w.inputs["lifecycleRules"]]
    assert actions == ["AbortIncompleteMultipartUpload"], w.urn


def test_trial_weights_retention_is_not_locked() -> None:
    """A trial (data.weights.lock: governance) holds weights as long, under a policy its owner
    can remove: nothing of a first deployment is undeletable for a year."""
    buckets = tuple(
        dataclasses.replace(b, object_lock_mode="governance") if b.data_class == "weights" else b
        for b in PRIMARY.buckets
    )
    w = named(run(dataclasses.replace(PRIMARY, buckets=buckets)), BUCKET, "weights")
    assert w.inputs["retentionPolicy"] == {"retentionPeriod": "31536000", "isLocked": False}
    assert w.inputs["versioning"] == {"enabled": False}, w.urn


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_every_bucket_private_encrypted_and_waits_for_its_key_grant(name: str) -> None:
    r = standby(name)
    cfgs = {b.name: b for b in SITES[name].buckets}
    buckets = of_type(r, BUCKET)
    assert sorted(b.inputs["name"] for b in buckets) == sorted(cfgs)
    for b in buckets:
        cfg = cfgs[b.inputs["name"]]
        assert b.inputs["uniformBucketLevelAccess"] is True, b.urn
        assert b.inputs["publicAccessPrevention"] == "enforced", b.urn
        assert b.inputs["softDeletePolicy"] == {"retentionDurationSeconds": 604800.0}, b.urn
        assert b.inputs["versioning"]["enabled"] is (cfg.object_lock_days is None), b.urn
        assert b.inputs["project"] == SITES[name].project, b.urn
        key = b.inputs["encryption"]["defaultKmsKeyName"]
        assert f"/locations/{cfg.kms_location}/keyRings/" in key, b.urn
        grants = [by_urn(r, u) for u in b.dependencies if u.split("::")[-2].endswith("IAMMember")]
        assert [(g.inputs["cryptoKeyId"], g.inputs["role"]) for g in grants] == [
            (key, ENCRYPTER)
        ], b.urn
        assert grants[0].inputs["member"] == (
            "serviceAccount:service-123456789012@gs-project-accounts.iam.gserviceaccount.com"
        )


def test_checkpoint_lifecycle_keeps_last_n_and_archives_to_coldline() -> None:
    b = named(standby("use4"), BUCKET, "checkpoints")
    rules = {rule["action"]["type"]: rule for rule in b.inputs["lifecycleRules"]}
    deletes = [
        r["condition"] for r in b.inputs["lifecycleRules"] if r["action"]["type"] == "Delete"
    ]
    delete = next(c for c in deletes if "numNewerVersions" in c)
    # the live version counts among GCS's "newer versions": keep 5 noncurrent -> 6
    assert delete["numNewerVersions"] == 6 and delete["withState"] == "ARCHIVED", b.urn
    # and any noncurrent version goes after 30 days (unique names never get newer versions)
    bound = next(c for c in deletes if "numNewerVersions" not in c)
    assert bound == {"withState": "ARCHIVED", "daysSinceNoncurrentTime": 30}, b.urn
    assert rules["SetStorageClass"]["action"]["storageClass"] == "COLDLINE"
    assert rules["SetStorageClass"]["condition"]["age"] == 14
    assert rules["AbortIncompleteMultipartUpload"]["condition"]["age"] == 2
    assert all(
        "age" not in rule["condition"] or rule["action"]["type"] != "Delete"
        for rule in b.inputs["lifecycleRules"]
    ), b.urn  # live objects never expire by age


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_data_bearing_resources_are_protected(name: str) -> None:
    r = standby(name)
    data = of_type(r, BUCKET) + of_type(r, CRYPTO_KEY) + of_type(r, KEY_RING)
    assert len(of_type(r, BUCKET)) == len(SITES[name].buckets)
    for x in data:
        assert x.protect and x.retain_on_delete, x.urn
    for x in r.resources:
        assert not x.inputs.get("forceDestroy"), x.urn
    for x in of_type(r, CRYPTO_KEY):
        assert x.inputs["rotationPeriod"] == "7776000s", x.urn


def test_keys_per_location_and_who_may_use_them() -> None:
    r = standby("use4")
    rings = sorted(x.inputs["name"] for x in of_type(r, KEY_RING))
    assert rings == ["gpudr-llm-use4-us", "gpudr-llm-use4-us-east4"]
    grants = sorted(
        (x.inputs["cryptoKeyId"].split("/")[3], x.inputs["member"].split("@")[1])
        for x in of_type(r, KEY_GRANT)
    )
    assert grants == [
        ("us", "gs-project-accounts.iam.gserviceaccount.com"),
        ("us-east4", "container-engine-robot.iam.gserviceaccount.com"),
        # Cloud Logging's agent, for the site's log bucket (tests/components/gcp/test_logs.py)
        ("us-east4", "gcp-sa-logging.iam.gserviceaccount.com"),
        ("us-east4", "gs-project-accounts.iam.gserviceaccount.com"),
        ("us-east4", "storage-transfer-service.iam.gserviceaccount.com"),
    ]
    gke = next(x for x in of_type(r, KEY_GRANT) if "container-engine" in x.inputs["member"])
    assert gke.inputs["member"] == (
        "serviceAccount:service-123456789012@container-engine-robot.iam.gserviceaccount.com"
    )
    cluster = of_type(r, CLUSTER)[0]
    assert cluster.inputs["databaseEncryption"] == {
        "state": "ENCRYPTED",
        "keyName": gke.inputs["cryptoKeyId"],
    }, cluster.urn
    assert gke.urn in cluster.dependencies


# --- scheduled transfer ----------------------------------------------------------------------


def test_datasets_pulled_from_s3_hourly_by_federation() -> None:
    r = standby("use4")
    (job,) = of_type(r, TRANSFER_JOB)
    spec = job.inputs["transferSpec"]
    assert spec["awsS3DataSource"] == {
        "bucketName": "llm-lake-datasets-0a1b2c",
        "roleArn": "arn:aws:iam::111122223333:role/gpudr-llm-use4-sts-reader",
    }, job.urn
    assert spec["gcsDataSink"] == {"bucketName": "llm-use4-datasets-0d1e2f"}
    assert spec["transferOptions"] == {
        "overwriteWhen": "DIFFERENT",
        "deleteObjectsFromSourceAfterTransfer": False,
        "deleteObjectsUniqueInSink": False,
    }
    assert job.inputs["schedule"] == {
        "scheduleStartDate": {"year": 2025, "month": 1, "day": 1},
        "repeatInterval": "3600s",
    }
    assert job.inputs["status"] == "ENABLED" and job.inputs["project"] == DR_PROJECT
    assert "llm-lake-datasets-0a1b2c" in job.inputs["description"]
    assert "llm-use4-datasets-0d1e2f" in job.inputs["description"]
    # the job waits for the agent's grants: objects and bucket on the sink, and the sink's key
    deps = [by_urn(r, u) for u in job.dependencies if "IAMMember" in u]
    roles = sorted(d.inputs["role"] for d in deps)
    assert roles == [ENCRYPTER, "roles/storage.legacyBucketReader", "roles/storage.objectAdmin"]
    agent = "serviceAccount:project-123456789012@storage-transfer-service.iam.gserviceaccount.com"
    assert {d.inputs["member"] for d in deps} == {agent}
    bucket_grants = [d for d in deps if d.type == "gcp:storage/bucketIAMMember:BucketIAMMember"]
    assert {d.inputs["bucket"] for d in bucket_grants} == {"llm-use4-datasets-0d1e2f"}
    sink_key = named(r, BUCKET, "datasets").inputs["encryption"]["defaultKmsKeyName"]
    assert next(d for d in deps if d.type == KEY_GRANT).inputs["cryptoKeyId"] == sink_key


def test_transfer_from_another_gcs_bucket_uses_no_aws_role() -> None:
    from_gcs = dataclasses.replace(
        TRANSFER, source_cloud="gcp", source_account=None, source_project=PRIMARY_PROJECT
    )
    datasets = dataclasses.replace(DR.buckets[2], inbound=(from_gcs,))
    r = run(dataclasses.replace(DR, buckets=(*DR.buckets[:2], datasets)))
    (job,) = of_type(r, TRANSFER_JOB)
    spec = job.inputs["transferSpec"]
    assert spec["gcsDataSource"] == {"bucketName": TRANSFER.source_bucket}, job.urn
    assert "awsS3DataSource" not in spec
    assert job.inputs["description"].startswith(f"gpudr: gs://{TRANSFER.source_bucket} ")


def test_transfer_without_source_account_fails_clearly() -> None:
    datasets = dataclasses.replace(
        DR.buckets[2], inbound=(dataclasses.replace(TRANSFER, source_account=None),)
    )
    cfg = dataclasses.replace(DR, buckets=(*DR.buckets[:2], datasets))
    with pytest.raises(ValueError, match="source_account is not set"):
        run(cfg)


# --- GPU pools -------------------------------------------------------------------------------


def _autoscaling(r: StackRun) -> tuple[float, float, float]:
    pool = named(r, NODE_POOL, "-train-nodes")
    a = pool.inputs["autoscaling"]
    return a["totalMinNodeCount"], a["totalMaxNodeCount"], pool.inputs["initialNodeCount"]


@pytest.mark.parametrize(
    ("name", "mode", "expected"),
    [
        ("use4", "standby", (0, 4, 0)),  # pilot light: nothing running, ceiling at full size
        ("use4", "failover", (4, 4, 4)),
        ("usc1", "standby", (4, 4, 4)),
    ],
)
def test_pool_autoscaling_by_pattern_and_mode(
    name: str, mode: str, expected: tuple[int, int, int]
) -> None:
    r = standby(name) if mode == "standby" else run(SITES[name], mode)
    assert _autoscaling(r) == expected, named(r, NODE_POOL, "-train-nodes").urn


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_training_pool_is_h100_compact_one_zone_tainted(name: str) -> None:
    r = standby(name)
    pool = named(r, NODE_POOL, "-train-nodes")
    assert pool.inputs["placementPolicy"] == {"type": "COMPACT"}, pool.urn
    assert pool.inputs["nodeLocations"] == [SITES[name].azs[0]], pool.urn
    assert pool.inputs["location"] == SITES[name].region
    node = pool.inputs["nodeConfig"]
    assert node["machineType"] == "a3-highgpu-8g"
    assert node["guestAccelerators"] == [
        {
            "type": "nvidia-h100-80gb",
            "count": 8,
            "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
        }
    ], pool.urn
    assert node["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
    ]
    assert node["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert node["shieldedInstanceConfig"]["enableSecureBoot"] is True
    assert "reservationAffinity" not in node, pool.urn
    assert pool.inputs["management"] == {"autoRepair": True, "autoUpgrade": True}


def test_cluster_is_regional_private_and_disposable() -> None:
    r = standby("use4")
    c = named(r, CLUSTER, "-train-gke")
    assert c.inputs["name"] == "llm-use4-train" and c.inputs["location"] == "us-east4"
    assert c.inputs["removeDefaultNodePool"] is True and c.inputs["initialNodeCount"] == 1
    assert c.inputs["deletionProtection"] is False
    assert c.inputs["privateClusterConfig"] == {
        "enablePrivateNodes": True,
        "enablePrivateEndpoint": True,
        "masterIpv4CidrBlock": "10.20.127.240/28",
    }, c.urn
    assert c.inputs["ipAllocationPolicy"] == {
        "clusterSecondaryRangeName": "train-pods",
        "servicesSecondaryRangeName": "train-services",
    }
    assert c.inputs["workloadIdentityConfig"] == {"workloadPool": f"{DR_PROJECT}.svc.id.goog"}
    assert c.inputs["releaseChannel"] == {"channel": "REGULAR"}
    subnet = of_type(r, "gcp:compute/subnetwork:Subnetwork")[0]
    assert c.inputs["subnetwork"] == subnet.outputs["selfLink"]


def test_reserved_pool_consumes_its_own_reservation() -> None:
    cluster = dataclasses.replace(DR.clusters[0], pools=(train_pool("pilot-light", 0, True),))
    r = run(dataclasses.replace(DR, clusters=(cluster,)))
    res = named(r, "gcp:compute/reservation:Reservation", "-train-reservation")
    assert res.inputs["zone"] == "us-east4-a" and res.inputs["specificReservationRequired"] is True
    assert res.inputs["specificReservation"] == {
        "count": 4,
        "instanceProperties": {
            "machineType": "a3-highgpu-8g",
            "guestAccelerators": [{"acceleratorType": "nvidia-h100-80gb", "acceleratorCount": 8}],
        },
    }, res.urn
    node = named(r, NODE_POOL, "-train-nodes").inputs["nodeConfig"]
    assert node["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": [res.outputs["name"]],
    }


def test_backup_restore_declares_the_cluster_only_on_failover() -> None:
    cluster = dataclasses.replace(
        DR.clusters[0], pools=(train_pool("backup-restore", 0),), standby_control_plane=False
    )
    cfg = dataclasses.replace(DR, clusters=(cluster,))
    assert not of_type(run(cfg), CLUSTER)
    assert _autoscaling(run(cfg, "failover")) == (4, 4, 4)


# --- network and links -----------------------------------------------------------------------


@pytest.mark.parametrize("clusters", [["train"], ["train", "serve", "eval"]])
def test_address_plan_carves_without_overlap(clusters: list[str]) -> None:
    cidr = ipaddress.ip_network("10.20.0.0/16")
    plan = address_plan(str(cidr), clusters)
    assert plan.nodes_cidr == "10.20.0.0/20"
    blocks = [plan.nodes_cidr] + [
        b for c in plan.clusters.values() for b in (c.pods_cidr, c.services_cidr, c.master_cidr)
    ]
    nets = [ipaddress.ip_network(b) for b in blocks]
    for i, a in enumerate(nets):
        assert a.subnet_of(cidr), a  # type: ignore[arg-type]
        for b in nets[i + 1 :]:
            assert not a.overlaps(b), (a, b)
    assert all(ipaddress.ip_network(c.master_cidr).prefixlen == 28 for c in plan.clusters.values())


def test_address_plan_refuses_a_small_cidr() -> None:
    with pytest.raises(ValueError, match="/20 or larger"):
        address_plan("10.0.0.0/24", ["train"])


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_network_subnet_router_nat_and_peering(name: str) -> None:
    cfg = SITES[name]
    r = standby(name)
    (net,) = of_type(r, "gcp:compute/network:Network")
    assert net.inputs["autoCreateSubnetworks"] is False and net.inputs["routingMode"] == "GLOBAL"
    (subnet,) = of_type(r, "gcp:compute/subnetwork:Subnetwork")
    assert subnet.inputs["region"] == cfg.region and subnet.inputs["privateIpGoogleAccess"] is True
    assert subnet.inputs["ipCidrRange"] == cfg.cidr.replace("/16", "/20")
    assert [x["rangeName"] for x in subnet.inputs["secondaryIpRanges"]] == [
        "train-pods",
        "train-services",
    ]
    (router,) = of_type(r, "gcp:compute/router:Router")
    assert router.inputs["bgp"] == {"asn": cfg.transit_gateway_asn}, router.urn
    (nat,) = of_type(r, "gcp:compute/routerNat:RouterNat")
    assert nat.inputs["router"] == router.outputs["name"] and nat.inputs["region"] == cfg.region
    (peering,) = of_type(r, "gcp:compute/networkPeering:NetworkPeering")
    other = cfg.peers[0]
    assert peering.inputs["peerNetwork"] == (
        f"projects/{other.project}/global/networks/{other.network_name}"
    ), peering.urn
    assert peering.inputs["network"] == net.id


def test_ha_vpn_dr_side_declares_only_its_gateway() -> None:
    dr = dataclasses.replace(DR, links=(link("ha-vpn", "usc1"),))
    r = run(dr)
    (gw,) = of_type(r, "gcp:compute/haVpnGateway:HaVpnGateway")
    assert gw.inputs["name"] == "gpudr-llm-use4-havpn" and gw.inputs["region"] == "us-east4"
    assert not of_type(r, "gcp:compute/vPNTunnel:VPNTunnel")
    assert not of_type(r, "gcp:compute/networkPeering:NetworkPeering")
    primary = run(dataclasses.replace(PRIMARY, links=(link("ha-vpn", "use4"),)))
    assert not of_type(primary, "gcp:compute/haVpnGateway:HaVpnGateway")


# --- DR independence -------------------------------------------------------------------------


def _regions(x: Registration) -> set[str]:
    """Every region a resource's inputs place it in (zones and node locations included)."""
    out = set()
    for value in [x.inputs.get(k) for k in ("region", "location", "zone")] + list(
        x.inputs.get("nodeLocations") or []
    ):
        if isinstance(value, str) and value:
            placed = GpudrMocks.placed_in({"region": value})
            out.add((placed or value).lower())
    return out


@pytest.mark.parametrize("mode", ["standby", "failover"])
def test_dr_stack_runs_with_the_primary_region_unreachable(mode: str) -> None:
    mocks = GpudrMocks(default_region="us-east4", unreachable_regions=frozenset({"us-central1"}))
    r = run(DR, mode, mocks)
    assert len(r.resources) > 20
    regions = set().union(*(_regions(x) for x in r.resources))
    # us: the dual-region bucket and its key ring, which span both regions by design
    assert regions == {"us-east4", "us"}, regions
    assert of_type(r, NODE_POOL)


def test_unreachable_region_really_fails_the_primary() -> None:
    mocks = GpudrMocks(default_region="us-central1", unreachable_regions=frozenset({"us-central1"}))
    with pytest.raises(RuntimeError, match="us-central1 is unreachable"):
        run(PRIMARY, mocks=mocks)


# --- labels and projects ---------------------------------------------------------------------

LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")


@cache
def _params(typ: str) -> frozenset[str]:
    _, mod, name = typ.split(":")
    cls = getattr(getattr(gcp, mod.split("/")[0]), name)
    return frozenset(inspect.signature(cls._internal_init).parameters)


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_labels_are_valid_gcp_labels_and_carry_the_site(name: str) -> None:
    r = standby(name)
    checked = 0
    for x in r.resources:
        label_sets = [x.inputs.get("labels"), x.inputs.get("resourceLabels")]
        label_sets.append((x.inputs.get("nodeConfig") or {}).get("resourceLabels"))
        for labels in label_sets:
            if labels is None:
                continue
            checked += 1
            for k, v in labels.items():
                assert LABEL_KEY.match(k) and LABEL_VALUE.match(v), (x.urn, k, v)
            assert labels["gpudr-site"] == name and labels["gpudr-dr-role"], x.urn
        params = _params(x.type)
        if "labels" in params or "resource_labels" in params:
            assert x.inputs.get("labels") or x.inputs.get("resourceLabels"), x.urn
    assert checked >= 4  # buckets, keys, the cluster, its node pool
    cp = named(standby("use4"), BUCKET, "checkpoints")
    assert cp.inputs["labels"]["gpudr-rpo-s"] == "14400"
    assert cp.inputs["labels"]["gpudr-data-class"] == "checkpoints"


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_every_resource_names_its_project(name: str) -> None:
    for x in standby(name).resources:
        if "project" in _params(x.type):
            assert x.inputs.get("project") == SITES[name].project, x.urn


# --- the component's outputs -----------------------------------------------------------------


@pulumi.runtime.test
def test_site_outputs() -> pulumi.Output[None]:
    cluster = dataclasses.replace(
        DR.clusters[0], pools=(train_pool("backup-restore", 0),), standby_control_plane=False
    )
    s = GcpSite(
        "use4", GcpSiteArgs(config=dataclasses.replace(DR, clusters=(cluster,)), failover=False)
    )

    def check(args: list[Any]) -> None:
        urn, buckets, clusters, key_id, endpoint = args
        assert buckets == {b.data_class: b.name for b in DR.buckets}, urn
        assert clusters == {}, urn  # a dict, not [], when nothing stands
        assert key_id.endswith(
            "/locations/us-east4/keyRings/gpudr-llm-use4-us-east4/cryptoKeys/data"
        )
        assert endpoint is None

    return pulumi.Output.all(s.urn, s.buckets, s.clusters, s.key_id, s.dual_write_endpoint).apply(
        check
    )


@pytest.mark.parametrize("mode", ["standby", "failover"])
def test_example_gcp_dr_stack_runs_with_the_primary_region_unreachable(mode: str) -> None:
    """The same, for the stack `gpudr generate` writes from examples/gcp-two-region.yaml."""
    from gpudr.build.stackconfig import stack_config_values, stack_name
    from gpudr.core.design import design
    from gpudr.core.spec import load_plan
    from tests.conftest import ROOT

    plan = load_plan(ROOT / "examples" / "gcp-two-region.yaml")
    dr = next(s for s in plan.sites.values() if s.role == "dr")
    primary = plan.sites[dr.protects or ""]
    config = stack_config_values(design(plan), dr)
    config["gpudr:mode"] = mode
    mocks = GpudrMocks(default_region=dr.region, unreachable_regions=frozenset({primary.region}))
    r = run_stack(stack_name(plan, dr), config, mocks)
    assert of_type(r, NODE_POOL) and of_type(r, BUCKET)
    assert primary.region not in set().union(*(_regions(x) for x in r.resources))
