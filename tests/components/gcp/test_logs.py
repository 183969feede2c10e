"""The logs every GCP site keeps (issue 15), pinned on a primary, a DR site and a drill: subnet
flow logs, GKE control-plane logs, Cloud Storage Data Access audit logs, and the site's log
sink (a CMEK log bucket in the site's region and the sink routing the site's logs, its drills'
included, into it).

The sites are test_gcp_site's hand-built pair (primary usc1 in us-central1, DR site use4 in
us-east4); the drill is test_hardening's, of the gcp-two-region example's DR site, checked
against that DR site's own stack.
"""

from __future__ import annotations

import dataclasses
import random
import re
from datetime import UTC, datetime, timedelta
from functools import cache

import pytest

from components.gcp.gpu_cluster import LOG_COMPONENTS
from components.gcp.logs import drill_cluster_pattern, drill_name_pattern
from components.gcp.site import GcpSite, GcpSiteArgs
from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.stackconfig import stack_config_values, stack_name
from gpudr.contract import drill as contract_drill
from gpudr.contract.naming import log_sink_name
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.components.gcp.test_gcp_site import (
    CLUSTER,
    DR,
    DR_PROJECT,
    ENCRYPTER,
    KEY_GRANT,
    KEY_RING,
    PRIMARY,
    SITES,
    SYSTEM,
    of_type,
    run,
    standby,
)
from tests.components.gcp.test_hardening import drill, drill_setup
from tests.conftest import ROOT

SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
LOG_BUCKET = "gcp:logging/projectBucketConfig:ProjectBucketConfig"
SINK = "gcp:logging/projectSink:ProjectSink"
AUDIT_CONFIG = "gcp:projects/iAMAuditConfig:IAMAuditConfig"
EXCLUSION = "gcp:logging/projectExclusion:ProjectExclusion"
LOGGING_AGENT = "serviceAccount:service-123456789012@gcp-sa-logging.iam.gserviceaccount.com"
STACKS = ["usc1", "use4", "drill"]


def stack(name: str) -> StackRun:
    return drill() if name == "drill" else standby(name)


def one(r: StackRun, typ: str) -> Registration:
    found = of_type(r, typ)
    assert len(found) == 1, [x.urn for x in found]
    return found[0]


@cache
def example_dr() -> StackRun:
    """The DR stack of the site test_hardening's drill drills (gcp-two-region's use4)."""
    plan = load_plan(ROOT / "examples" / "gcp-two-region.yaml")
    site = plan.sites[drill_setup().site.site]
    config = stack_config_values(design(plan), site)
    return run_stack(stack_name(plan, site), config, GpudrMocks(default_region=site.region))


# --- what the site's resources log ------------------------------------------------------------


@pytest.mark.parametrize("name", STACKS)
def test_every_subnetwork_logs_its_flows(name: str) -> None:
    subnets = of_type(stack(name), SUBNETWORK)
    assert subnets
    for s in subnets:
        assert s.inputs["logConfig"] == {
            "aggregationInterval": "INTERVAL_10_MIN",
            "flowSampling": 0.5,
            "metadata": "INCLUDE_ALL_METADATA",
        }, s.urn


@pytest.mark.parametrize("name", STACKS)
def test_every_cluster_logs_its_control_plane_not_its_workloads(name: str) -> None:
    clusters = of_type(stack(name), CLUSTER)
    assert clusters
    for c in clusters:
        assert c.inputs["loggingConfig"] == {
            "enableComponents": [
                "SYSTEM_COMPONENTS",
                "APISERVER",
                "CONTROLLER_MANAGER",
                "SCHEDULER",
                # GKE's default when no logging config is given: a deployed cluster keeps its
                # workloads' logs (their volume is the workload owner's, as before gpudr).
                "WORKLOADS",
            ]
        }, c.urn


def test_the_settings_hold_in_failover() -> None:
    r = run(DR, "failover")
    assert one(r, SUBNETWORK).inputs["logConfig"]["aggregationInterval"] == "INTERVAL_10_MIN"
    assert one(r, CLUSTER).inputs["loggingConfig"]["enableComponents"] == list(LOG_COMPONENTS)
    assert one(r, SINK).inputs == one(standby("use4"), SINK).inputs


# --- Cloud Storage Data Access audit logs -----------------------------------------------------


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_storage_data_access_is_audited(name: str) -> None:
    audit = one(stack(name), AUDIT_CONFIG)
    assert audit.inputs == {
        "project": SITES[name].project,
        "service": "storage.googleapis.com",
        "auditLogConfigs": [{"logType": "DATA_READ"}, {"logType": "DATA_WRITE"}],
    }, audit.urn
    # Authoritative for the service in the project: destroying one site's stack leaves it, so
    # another site in the same project stays logged.
    assert audit.retain_on_delete and not audit.protect, audit.urn


def test_two_sites_in_one_project_declare_the_same_audit_config() -> None:
    """Each is authoritative for Cloud Storage in the project: identical, neither undoes the
    other."""
    shared = run(dataclasses.replace(PRIMARY, project=DR_PROJECT))
    assert one(shared, AUDIT_CONFIG).inputs == one(standby("use4"), AUDIT_CONFIG).inputs


def test_a_site_without_buckets_turns_no_audit_log_on() -> None:
    r = run(dataclasses.replace(PRIMARY, buckets=()))
    assert not of_type(r, AUDIT_CONFIG)
    assert "gcs_bucket" not in one(r, SINK).inputs["filter"]


# --- the log bucket ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_log_bucket_in_the_region_with_the_plans_retention_and_the_site_key(name: str) -> None:
    cfg = SITES[name]
    r = stack(name)
    bucket = one(r, LOG_BUCKET)
    i = bucket.inputs
    assert i["project"] == cfg.project, bucket.urn
    assert i["location"] == cfg.region, bucket.urn
    assert i["bucketId"] == log_sink_name("gcp", SYSTEM, name, cfg.region), bucket.urn
    assert cfg.logs is not None and i["retentionDays"] == cfg.logs.retention_days == 365
    # Never locked: a drill's or a decommissioned site's stack must stay removable.
    assert not i.get("locked"), bucket.urn
    assert bucket.protect and not bucket.retain_on_delete, bucket.urn
    assert "gpudr-dr-role=site-logs" in i["description"], bucket.urn
    # The site's regional key, whose ring is in the bucket's location.
    key = i["cmekSettings"]["kmsKeyName"]
    ring = next(x for x in of_type(r, KEY_RING) if key.startswith(f"{x.id}/"))
    assert ring.inputs["location"] == i["location"], (bucket.urn, key)


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_log_bucket_waits_for_cloud_loggings_grant_on_its_key(name: str) -> None:
    r = stack(name)
    bucket = one(r, LOG_BUCKET)
    grants = [g for g in of_type(r, KEY_GRANT) if g.inputs["member"] == LOGGING_AGENT]
    assert len(grants) == 1, [g.urn for g in of_type(r, KEY_GRANT)]
    (grant,) = grants
    assert grant.inputs["cryptoKeyId"] == bucket.inputs["cmekSettings"]["kmsKeyName"], grant.urn
    assert grant.inputs["role"] == ENCRYPTER, grant.urn
    assert grant.urn in bucket.dependencies, bucket.urn


# --- the sink ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_sink_routes_into_the_sites_log_bucket_and_needs_no_grant(name: str) -> None:
    cfg = SITES[name]
    r = stack(name)
    bucket, sink = one(r, LOG_BUCKET), one(r, SINK)
    i = sink.inputs
    assert i["name"] == bucket.inputs["bucketId"], sink.urn
    assert i["project"] == cfg.project, sink.urn
    assert i["destination"] == (
        f"logging.googleapis.com/projects/{cfg.project}/locations/{cfg.region}/buckets/"
        f"{bucket.inputs['bucketId']}"
    ), sink.urn
    assert sink.property_dependencies["destination"] == [bucket.urn], sink.urn
    assert "gpudr-dr-role=site-logs" in i["description"], sink.urn
    # A sink into a log bucket of its own project has no writer identity: nothing is granted
    # to one, and none is set.
    assert "customWriterIdentity" not in i, sink.urn
    for x in r.resources:
        assert "logging." not in str(x.inputs.get("role", "")), x.urn


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_the_sinks_entries_are_excluded_from_default_once_routed(name: str) -> None:
    """Stored once: the _Default sink drops exactly what the site's sink routes, and only once
    that sink exists."""
    r = stack(name)
    sink, exclusion = one(r, SINK), one(r, EXCLUSION)
    assert exclusion.inputs["filter"] == sink.inputs["filter"], exclusion.urn
    assert exclusion.inputs["project"] == SITES[name].project, exclusion.urn
    assert exclusion.inputs["name"] == f"{sink.inputs['name']}-routed", exclusion.urn
    assert not exclusion.inputs.get("disabled"), exclusion.urn
    assert sink.urn in exclusion.dependencies, exclusion.urn


def _filter(r: StackRun) -> str:
    return str(one(r, SINK).inputs["filter"])


def test_primary_sink_filter() -> None:
    """The primary's buckets, subnetwork and cluster, each by name; nothing of any drill (a
    primary is never drilled)."""
    p = PRIMARY.project
    assert _filter(standby("usc1")) == (
        f'((logName="projects/{p}/logs/cloudaudit.googleapis.com%2Fdata_access"'
        f' OR logName="projects/{p}/logs/cloudaudit.googleapis.com%2Factivity")'
        ' AND resource.type="gcs_bucket"'
        ' AND (resource.labels.bucket_name="llm-usc1-weights-1a2b3c"))'
        f' OR (logName="projects/{p}/logs/compute.googleapis.com%2Fvpc_flows"'
        ' AND resource.type="gce_subnetwork"'
        ' AND (resource.labels.subnetwork_name="gpudr-llm-usc1-us-central1"))'
        ' OR ((resource.type="k8s_control_plane_component" OR (resource.type="k8s_cluster"'
        f' AND logName="projects/{p}/logs/cloudaudit.googleapis.com%2Factivity"))'
        ' AND (resource.labels.cluster_name="llm-usc1-train"))'
    )


def test_dr_sink_filter_names_the_site_and_its_drills() -> None:
    p = DR.project
    assert _filter(standby("use4")) == (
        f'((logName="projects/{p}/logs/cloudaudit.googleapis.com%2Fdata_access"'
        f' OR logName="projects/{p}/logs/cloudaudit.googleapis.com%2Factivity")'
        ' AND resource.type="gcs_bucket"'
        ' AND (resource.labels.bucket_name="llm-use4-checkpoints-4d5e6f"'
        ' OR resource.labels.bucket_name="llm-use4-weights-7a8b9c"'
        ' OR resource.labels.bucket_name="llm-use4-datasets-0d1e2f"))'
        f' OR (logName="projects/{p}/logs/compute.googleapis.com%2Fvpc_flows"'
        ' AND resource.type="gce_subnetwork"'
        ' AND (resource.labels.subnetwork_name="gpudr-llm-use4-us-east4"'
        ' OR resource.labels.subnetwork_name=~"^gpudr-drill-use4-[0-9]{8}t[0-9]{6}z-us-east4$"))'
        ' OR ((resource.type="k8s_control_plane_component" OR (resource.type="k8s_cluster"'
        f' AND logName="projects/{p}/logs/cloudaudit.googleapis.com%2Factivity"))'
        ' AND (resource.labels.cluster_name="llm-use4-train"'
        ' OR resource.labels.cluster_name=~"^drill-use4-[0-9]{8}t[0-9]{6}z-train$"))'
    )


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_sink_filter_names_what_the_stack_declares(name: str) -> None:
    """The names in the filter are the ones the stack gives its resources, and not the other
    site's."""
    r = stack(name)
    f = _filter(r)
    names = [x.inputs["name"] for x in of_type(r, SUBNETWORK) + of_type(r, CLUSTER)]
    names += [b.name for b in SITES[name].buckets]
    for n in names:
        assert f'="{n}"' in f, n
    other = SITES["use4" if name == "usc1" else "usc1"]
    for n in [b.name for b in other.buckets] + [c.eks_name for c in other.clusters]:
        assert n not in f, n
    # Every group parenthesized: OR binds tighter than AND in the Logging query language.
    assert f.count("(") == f.count(")") and f.startswith("(") and f.endswith(")")


def test_a_backup_restore_cluster_is_in_the_filter_before_it_exists() -> None:
    """Declared only at failover, it logs to the sink from its first minute."""
    cluster = dataclasses.replace(DR.clusters[0], standby_control_plane=False)
    r = run(dataclasses.replace(DR, clusters=(cluster,)))
    assert not of_type(r, CLUSTER)
    assert 'resource.labels.cluster_name="llm-use4-train"' in _filter(r)


# --- drills -----------------------------------------------------------------------------------


def _patterns(f: str, field: str) -> list[re.Pattern[str]]:
    return [re.compile(p) for p in re.findall(rf'{re.escape(field)}=~"([^"]+)"', f)]


def test_drill_logs_land_in_the_dr_sites_sink() -> None:
    """The drill's subnetwork and clusters match the DR site's sink, in the same project: their
    logs go to the DR site's log bucket and outlive the drill."""
    dr, d = example_dr(), drill()
    f = _filter(dr)
    assert one(dr, SINK).inputs["project"] == drill_setup().site.project
    (subnet,) = of_type(d, SUBNETWORK)
    assert subnet.inputs["project"] == drill_setup().site.project
    assert any(p.fullmatch(subnet.inputs["name"]) for p in _patterns(f, "subnetwork_name")), f
    clusters = of_type(d, CLUSTER)
    assert clusters
    for c in clusters:
        patterns = _patterns(f, "cluster_name")
        assert any(p.fullmatch(c.inputs["name"]) for p in patterns), (c.urn, f)
    # ... and not the DR site's own, which are named exactly.
    for x in of_type(dr, SUBNETWORK) + of_type(dr, CLUSTER):
        assert f'="{x.inputs["name"]}"' in f, x.urn
        assert not any(p.fullmatch(x.inputs["name"]) for p in _patterns(f, "_name")), x.urn


def test_drill_declares_no_log_bucket_sink_audit_config_or_grant() -> None:
    """A drill stays fully destroyable: it owns nothing of the logs."""
    d = drill()
    for x in d.resources:
        assert not x.type.startswith("gcp:logging/"), x.urn
        assert x.type != AUDIT_CONFIG, x.urn
        assert x.type != KEY_GRANT, x.urn
        assert not x.protect and not x.retain_on_delete, x.urn


@pytest.mark.parametrize(
    ("site", "region"),
    [
        ("use4", "us-east4"),
        ("x1", "northamerica-northeast1"),
        ("abcdefghijklmnop", "us-east4"),  # cluster names shortened by `fit` (GKE: 40)
        ("abcdefghijklmnop", "northamerica-northeast1"),  # network names shortened too
        ("a" * 24, "northamerica-northeast1"),  # the longest site name
    ],
)
def test_drill_patterns_match_every_drill_of_the_site_only(site: str, region: str) -> None:
    cluster = re.compile(drill_cluster_pattern(site, "train"))
    network = re.compile(
        drill_name_pattern(
            site,
            unfitted=lambda d: f"gpudr-{d}",
            fitted=lambda d: contract_drill.network_name(d, region),
        )
    )
    rng = random.Random(site + region)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for _ in range(200):
        at = start + timedelta(seconds=rng.randrange(10**9))
        drill_id = contract_drill.stack_name(site, at).lower()
        assert cluster.fullmatch(contract_drill.cluster_name(drill_id, "train", "gcp")), drill_id
        assert network.fullmatch(contract_drill.network_name(drill_id, region)), drill_id
    # Never the site's own cluster. Where `fit` leaves the names whole, never another
    # cluster's drills, nor a drill of a site whose name extends this one's; a shortened name
    # may lose the cluster's name, but not the site's (a drill's logs still stay at its site).
    assert not cluster.fullmatch(f"{SYSTEM}-{site}-train")
    mine = contract_drill.stack_name(site, start).lower()
    if contract_drill.cluster_name(mine, "train", "gcp") == f"{mine}-train":
        assert not cluster.fullmatch(contract_drill.cluster_name(mine, "serve", "gcp"))
        longer = contract_drill.stack_name(f"{site}-b", start).lower()
        assert not cluster.fullmatch(contract_drill.cluster_name(longer, "train", "gcp"))
    assert cluster.pattern.startswith(f"drill-{site}-"), cluster.pattern


def test_a_changed_drill_naming_fails_loudly() -> None:
    with pytest.raises(ValueError, match="changed how it names drills"):
        drill_name_pattern("use4", unfitted=lambda d: f"{d}-train", fitted=lambda d: f"{d}--train")


# --- refusal ----------------------------------------------------------------------------------


def test_a_site_without_a_log_sink_is_refused() -> None:
    with pytest.raises(ValueError, match="no log sink"):
        GcpSite("use4", GcpSiteArgs(config=dataclasses.replace(DR, logs=None), failover=False))


def test_a_drill_of_a_site_without_a_log_sink_is_refused() -> None:
    from components.gcp.drill import GcpDrill, GcpDrillArgs

    s = drill_setup()
    with pytest.raises(ValueError, match="no log sink"):
        GcpDrill(
            "use4-drill", GcpDrillArgs(config=dataclasses.replace(s.site, logs=None), drill=s.drill)
        )
