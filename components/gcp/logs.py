"""A site's log sink on GCP: a Cloud Logging bucket in the site's region, encrypted with the
site's regional key and keeping the plan's retention, and the project sink that routes this
site's logs into it; with Cloud Storage Data Access audit logs turned on in the project, so
that reads and writes of the data buckets are logged at all.

What the sink routes (its filter, `sink_filter`), all of it from the site's own project:
- the Data Access audit entries (`cloudaudit.googleapis.com/data_access`) of the site's data
  buckets: who read or wrote which checkpoint, weight or dataset object; and a copy of their
  Admin Activity entries (IAM and settings changes), which Google keeps in `_Required`;
- the flow logs (`compute.googleapis.com/vpc_flows`) of the site's subnetwork;
- the control-plane logs (`k8s_control_plane_component`: API server, scheduler, controller
  manager) and a copy of the Kubernetes audit log (Admin Activity of `k8s_cluster`) of the
  site's GKE clusters, standing or not (a backup/restore cluster declared at
  failover logs here from its first minute);
- on a DR site, the same from its drills: a drill's subnetwork and clusters are named from the
  drill id (`gpudr.contract.drill`), which the filter matches by pattern. A drill declares no
  bucket or sink of its own and stays fully destroyable; its logs are kept here, under this
  stack's retention, after the drill is gone.

The sink writes into a log bucket of its own project: such a sink has no writer identity and
needs no grant (Cloud Logging API, `LogSink.writerIdentity`: "Sinks that have a destination that
is a log bucket in the same project as the sink do not have a writer_identity and no
additional permissions are required"). Cloud Logging's own service agent does need the key: it
encrypts the bucket's logs with it (`get_project_cmek_settings`: "Before enabling CMEK for a
logging bucket, you must first assign the cloudkms.cryptoKeyEncrypterDecrypter role to the
service account associated with the project"); the site grants it on its regional key and the
bucket waits for that grant.

An exclusion on the project's _Default sink drops the same entries there, so they are stored
(and billed) once, in the site's bucket.

Log buckets, sinks, exclusions and audit configs take no labels: the site's tags are written
into the bucket's and the sink's descriptions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import pulumi
import pulumi_gcp as gcp

from components.gcp.network import subnetwork_name
from gpudr.contract import drill
from gpudr.contract.site import SiteConfig
from gpudr.contract.tags import DrRole, gcp_labels, site_tags

STORAGE_SERVICE = "storage.googleapis.com"
# Reads and writes of objects (and of their metadata). ADMIN_READ (listing buckets, reading
# their settings) is left out: it says nothing about the data and would add volume.
DATA_ACCESS_TYPES = ("DATA_READ", "DATA_WRITE")
DATA_ACCESS_LOG = "cloudaudit.googleapis.com%2Fdata_access"
# Admin Activity audit logs (bucket IAM and settings changes; the Kubernetes audit log of every
# API request that changes the cluster). Google keeps them in _Required (its key, 400 days);
# the sink keeps a copy under the site's key and the plan's retention.
ADMIN_ACTIVITY_LOG = "cloudaudit.googleapis.com%2Factivity"
FLOW_LOG = "compute.googleapis.com%2Fvpc_flows"
CONTROL_PLANE = "k8s_control_plane_component"


@dataclass(frozen=True)
class SiteLogsArgs:
    config: SiteConfig
    project: str
    # The site's regional key (DataKey for the site's region): a log bucket's CMEK key must be
    # in the bucket's location, and the bucket is in the site's region.
    key_id: pulumi.Input[str]
    # Cloud Logging's service agent's grant on that key: the bucket is created after it, or its
    # creation fails on the first apply.
    key_grant: pulumi.Resource


class SiteLogs(pulumi.ComponentResource):
    bucket_id: pulumi.Output[str]  # projects/<p>/locations/<region>/buckets/<id>
    sink_name: pulumi.Output[str]

    def __init__(
        self, name: str, args: SiteLogsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:logs:SiteLogs", name, None, opts)
        cfg, project = args.config, args.project
        logs = cfg.require_logs()
        region = cfg.region.lower()
        child = pulumi.ResourceOptions(parent=self)
        described = _describe(cfg)
        if cfg.buckets:
            self._data_access_logs(name, project)
        bucket = gcp.logging.ProjectBucketConfig(
            f"{name}-bucket",
            project=project,
            location=region,
            bucket_id=logs.sink,
            retention_days=logs.retention_days,
            description=f"gpudr: the site's access, flow and control-plane logs ({described})",
            cmek_settings=gcp.logging.ProjectBucketConfigCmekSettingsArgs(kms_key_name=args.key_id),
            # Not `locked`: a locked bucket's retention can never be changed and the bucket can
            # be deleted only once empty, a full retention period after its last log, so a
            # decommissioned site (or a plan that moves it) could not be removed for up to
            # that long. `protect` keeps `pulumi destroy` and a replacement off it;
            # unprotecting it is a deliberate step.
            opts=pulumi.ResourceOptions(parent=self, protect=True, depends_on=[args.key_grant]),
        )
        sink = gcp.logging.ProjectSink(
            f"{name}-sink",
            name=logs.sink,
            project=project,
            # Named from the bucket's own inputs: the sink is created after the bucket.
            destination=pulumi.Output.concat(
                "logging.googleapis.com/projects/",
                bucket.project,
                "/locations/",
                bucket.location,
                "/buckets/",
                bucket.bucket_id,
            ),
            filter=sink_filter(cfg, project),
            description=f"gpudr: routes the site's logs to its log bucket ({described})",
            opts=child,
        )
        # The project's _Default sink would store every entry this sink routes a second time,
        # billed again, unencrypted by the site key and kept only 30 days: an exclusion on
        # _Default (the only sink a project exclusion applies to) leaves the site's bucket the
        # one copy. Created after the sink, so no entry is dropped before it has a home.
        gcp.logging.ProjectExclusion(
            f"{name}-default-exclusion",
            name=f"{logs.sink}-routed",
            project=project,
            filter=sink_filter(cfg, project),
            description=f"gpudr: kept once, in {logs.sink} ({described})",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[sink]),
        )
        self.bucket_id = bucket.id
        self.sink_name = sink.name
        self.register_outputs({"bucket_id": self.bucket_id, "sink_name": self.sink_name})

    def _data_access_logs(self, name: str, project: str) -> None:
        """Cloud Storage Data Access audit logs, off by default (CIS GCP Foundations 2.1).

        An audit config is authoritative for its service in the project: it replaces whatever
        audit config the project's IAM policy held for Cloud Storage (exempted members
        included). It applies to every bucket of the project, gpudr's or not; the sink routes
        only this site's, the rest go to the project's _Default bucket, billed there.

        Two sites in one project both declare this identical config, which is safe: each
        writes the same value, so neither undoes the other. `retain_on_delete`: destroying one
        site's stack leaves the config in place, so the other site's buckets stay logged (a
        delete would remove it for both, and the survivor's stack would not put it back until
        a refresh). Turning the logs off once no site uses the project is a manual step."""
        gcp.projects.IAMAuditConfig(
            f"{name}-storage-data-access",
            project=project,
            service=STORAGE_SERVICE,
            audit_log_configs=[
                gcp.projects.IAMAuditConfigAuditLogConfigArgs(log_type=t) for t in DATA_ACCESS_TYPES
            ],
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
        )


def _describe(cfg: SiteConfig) -> str:
    """The site's tags, as the labels these resources cannot carry."""
    labels = gcp_labels(site_tags(cfg, DrRole.SITE_LOGS))
    return " ".join(f"{k}={v}" for k, v in labels.items())


# --- the sink's filter -----------------------------------------------------------------------


def sink_filter(cfg: SiteConfig, project: str) -> str:
    """The site's logs (see the module's docstring), in the Logging query language. OR binds
    tighter than AND there, so every group is parenthesized."""
    drills = cfg.role == "dr"  # only a DR site is drilled (gpudr.build.drill)
    region = cfg.region
    clauses = []
    if cfg.buckets:
        clauses.append(
            _all(
                _any(
                    "logName", [_log(project, DATA_ACCESS_LOG), _log(project, ADMIN_ACTIVITY_LOG)]
                ),
                'resource.type="gcs_bucket"',
                _any("resource.labels.bucket_name", [b.name for b in cfg.buckets]),
            )
        )
    subnet_patterns = (
        [
            drill_name_pattern(
                cfg.site,
                unfitted=lambda d: f"gpudr-{d}",
                fitted=lambda d: drill.network_name(d, region),
            )
            + f"-{_literal(region)}"
        ]
        if drills
        else []
    )
    clauses.append(
        _all(
            f'logName="projects/{project}/logs/{FLOW_LOG}"',
            'resource.type="gce_subnetwork"',
            _any(
                "resource.labels.subnetwork_name",
                [subnetwork_name(cfg.network_name, region)],
                subnet_patterns,
            ),
        )
    )
    if cfg.clusters:
        cluster_patterns = [drill_cluster_pattern(cfg.site, c.name) for c in cfg.clusters]
        clauses.append(
            _all(
                f'(resource.type="{CONTROL_PLANE}" OR (resource.type="k8s_cluster" AND '
                f'logName="{_log(project, ADMIN_ACTIVITY_LOG)}"))',
                _any(
                    "resource.labels.cluster_name",
                    [c.eks_name for c in cfg.clusters],
                    cluster_patterns if drills else [],
                ),
            )
        )
    return " OR ".join(clauses)


def _log(project: str, log: str) -> str:
    return f"projects/{project}/logs/{log}"


def _all(*terms: str) -> str:
    return "(" + " AND ".join(terms) + ")"


def _any(field: str, names: Sequence[str], patterns: Sequence[str] = ()) -> str:
    """`field` equal to one of `names` or matching one of `patterns` (RE2, anchored here)."""
    terms = [f'{field}="{n}"' for n in names] + [f'{field}=~"^{p}$"' for p in patterns]
    return "(" + " OR ".join(terms) + ")"


# --- the names a site's drills give their network and clusters --------------------------------

# A drill id is `drill-<site>-<UTC time>` in lower case; two drills' ids differ only in the
# digits of the time. Any time stands for all of them.
_ANY_TIME = datetime(2000, 1, 1, tzinfo=UTC)
_DIGEST = "-[0-9a-f]{6}"  # what `drill.fit` appends to a shortened name


def drill_cluster_pattern(site: str, cluster: str) -> str:
    """The GKE names of cluster `cluster` in every drill of `site` (unanchored RE2)."""
    return drill_name_pattern(
        site,
        unfitted=lambda d: f"{d}-{cluster}",
        fitted=lambda d: drill.cluster_name(d, cluster, "gcp"),
    )


def drill_name_pattern(
    site: str, *, unfitted: Callable[[str], str], fitted: Callable[[str], str]
) -> str:
    """An unanchored RE2 pattern matching `fitted(id)` for the id of every drill of `site`.

    `fitted` is the contract's naming function; `unfitted` the name it builds before `fit`
    shortens it to the cloud's limit (its head, a hyphen and a 6-digit digest of the whole).
    The time's digits become `[0-9]`; a shortened name keeps the head and any digest. Raises
    ValueError if the contract's name is neither form, so a change there fails here loudly
    rather than leaving drills unlogged."""
    drill_id = drill.stack_name(site, _ANY_TIME).lower()
    full, name = unfitted(drill_id), fitted(drill_id)
    width = len(drill.format_ts(_ANY_TIME))
    start = full.index(drill_id) + len(drill_id) - width
    tokens = [
        "[0-9]" if start <= i < start + width and c.isdigit() else _literal(c)
        for i, c in enumerate(full)
    ]
    if name == full:
        return _runs("".join(tokens))
    head = len(name) - len("-000000")
    if not (len(name) < len(full) and full.startswith(name[:head]) and name[head] == "-"):
        raise ValueError(
            f"drill name {name!r} is neither {full!r} nor its shortened form: "
            "gpudr.contract.drill changed how it names drills; update components/gcp/logs.py"
        )
    return _runs("".join(tokens[:head])) + _DIGEST


def _runs(pattern: str) -> str:
    """`[0-9][0-9][0-9]` as `[0-9]{3}`: the same pattern, readable in the console."""
    return re.sub(r"(?:\[0-9\]){2,}", lambda m: f"[0-9]{{{len(m[0]) // 5}}}", pattern)


def _literal(text: str) -> str:
    """A name's characters as RE2 literals: lower-case letters, digits and hyphens need no
    escaping (the filter is a quoted string, where a backslash would need escaping twice)."""
    if not all(c.isascii() and (c.isdigit() or c.islower() or c == "-") for c in text):
        raise ValueError(f"{text!r}: GCP names hold lower-case letters, digits and hyphens only")
    return text
