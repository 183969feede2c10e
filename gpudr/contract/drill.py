"""The drill contract: what a disposable drill stack is called, what `gpudr:drill` holds, and
what the program declares from it in place of the site.

A drill is a disposable Pulumi stack, `drill-<site>-<YYYYMMDDTHHMMSSZ>`, that runs the project's
own program with `gpudr:mode` = `drill` and a `gpudr:drill` object (`DrillConfig`). In that mode
the program builds, instead of the site, a copy of the DR site's GPU clusters on an isolated
network (no route, peering, VPN or link to any other site), each pool at the plan's test size,
and an identity that can only read the DR site's replicas. It never declares a bucket, key or
storage account: the data is neither created nor deleted by a drill. Every taggable resource
carries the drill id and its expiry (`TAG_DRILL`, `TAG_EXPIRES`), and so does the stack (as
stack tags), so that `gpudr drill cleanup` can find and remove expired drills.

The planner builds a drill (`gpudr.build.drill`), the program reads this (`components/*/drill.py`)
and the orchestration (`gpudr.app.drill`) refuses every stack whose name is not a drill's.
Standard library only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from gpudr.contract.site import BucketConfig, ClusterConfig, PoolConfig, SiteConfig
from gpudr.contract.tags import TAG_DRILL, TAG_EXPIRES, pool_tags, site_tags
from gpudr.core.enums import (
    DRILL_DESTROY_MARGIN_S,
    DRILL_MAX_TTL_S,
    BucketRole,
    Cloud,
    DrillPhase,
    Mode,
    Pattern,
)

MODE = Mode.DRILL
PHASES = tuple(DrillPhase)
# The only names a drill creates, destroys or removes: anything else is refused.
STACK_RE = re.compile(r"^drill-(?P<site>[a-z][a-z0-9-]{0,22}[a-z0-9])-(?P<ts>\d{8}T\d{6}Z)$")
# How far a drill stack's name may be ahead of this host's clock (another host's clock).
CLOCK_SKEW_S = 3600
COMPACT = "%Y%m%dT%H%M%SZ"  # ISO 8601 basic format: valid in stack names, tags and GCP labels
EXTENDED = "%Y-%m-%dT%H:%M:%SZ"


class DrillNameError(ValueError):
    """A stack name that is not a drill stack: never created, destroyed or removed by a drill."""


# --- names --------------------------------------------------------------------------------------


def format_ts(at: datetime) -> str:
    return at.astimezone(UTC).strftime(COMPACT)


def iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime(EXTENDED)


def parse_ts(text: str) -> datetime:
    """A UTC time in the basic (`20250131T031200Z`) or extended (`2025-01-31T03:12:00Z`) ISO
    8601 format, the two forms a drill writes; a GCP label's lower-case form is accepted too."""
    value = text.strip().upper()
    for form in (COMPACT, EXTENDED):
        try:
            return datetime.strptime(value, form).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f'"{text}" is not a UTC time like 20250131T031200Z or 2025-01-31T03:12:00Z')


def stack_name(site: str, at: datetime) -> str:
    name = f"drill-{site}-{format_ts(at)}"
    check_stack_name(name)
    return name


def looks_like_drill_stack(name: str) -> bool:
    """A drill stack's shape, whether or not its time is a real one: what cleanup reports on."""
    return STACK_RE.match(name) is not None


def drill_site(name: str) -> str | None:
    """The site a drill-shaped stack name drills (its time unchecked); None for another name."""
    match = STACK_RE.match(name)
    return match["site"] if match else None


def is_drill_stack(name: str) -> bool:
    """The shape and a real time: exactly the names `check_stack_name` accepts."""
    try:
        check_stack_name(name)
    except DrillNameError:
        return False
    return True


def check_stack_name(name: str) -> tuple[str, datetime]:
    """(site, creation time) of a drill stack; DrillNameError for any other name, and for the
    shape with an impossible time (`drill-aa-99999999T999999Z`): no drill creates that name,
    and its age, which every expiry starts from, cannot be known."""
    match = STACK_RE.match(name)
    if match is None:
        raise DrillNameError(
            f'stack "{name}" is not a drill stack (drill-<site>-<YYYYMMDDTHHMMSSZ>); a drill '
            "never creates, destroys or removes any other stack"
        )
    try:
        created = parse_ts(match["ts"])
        created + timedelta(seconds=DRILL_MAX_TTL_S)  # year 9999: no expiry
    except (ValueError, OverflowError) as exc:
        raise DrillNameError(
            f'stack "{name}" has the shape of a drill stack but {match["ts"]} is not a real UTC '
            "time: no drill creates such a name, and its age cannot be known"
        ) from exc
    return match["site"], created


def check_not_future(name: str, now: datetime) -> None:
    """DrillNameError for a drill stack named with a time later than `now` (plus a clock
    skew): every expiry starts from that time, so a name dated in 2099 would keep its drill up
    until 2099. gpudr names a drill with the time it starts it."""
    _, created = check_stack_name(name)
    if created > now + timedelta(seconds=CLOCK_SKEW_S):
        raise DrillNameError(
            f'stack "{name}" is dated {iso(created)}, later than now ({iso(now)}): no drill '
            "creates such a name, and its expiry, which starts from that time, cannot be trusted"
        )


def fit(name: str, limit: int) -> str:
    """`name` if it fits in `limit` characters; else its head and a digest of the whole, so that
    two long names stay distinct."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:6]
    return f"{name[: limit - 7].rstrip('-')}-{digest}"


def cluster_name(drill_id: str, cluster: str, cloud: str) -> str:
    """EKS allows 100 characters, GKE 40, AKS 63: never the DR stack's own cluster name."""
    return fit(
        f"{drill_id}-{cluster}", {Cloud.AWS: 100, Cloud.GCP: 40, Cloud.AZURE: 63}[Cloud(cloud)]
    )


def network_name(drill_id: str, region: str) -> str:
    """GCP names the subnetwork `<network>-<region>` and the router `<network>-router`, each at
    most 63 characters; Azure's virtual network takes the same name."""
    return fit(f"gpudr-{drill_id}", 62 - max(len(region), len("router")))


def resource_group_name(drill_id: str) -> str:
    """Azure: the drill's own resource group, never the DR site's (which holds its data)."""
    return fit(f"gpudr-{drill_id}", 90)


def reader_name(drill_id: str, cloud: str) -> str:
    """The read-only identity: an IAM role name (64), a GCP service account id (6-30 lower-case
    letters, digits and hyphens: a digest of the drill id), an Azure identity name."""
    if cloud == Cloud.GCP:
        return f"gpudr-drill-{hashlib.sha256(drill_id.encode()).hexdigest()[:12]}"
    return fit(f"gpudr-{drill_id}-reader", 64 if cloud == Cloud.AWS else 128)


# --- who runs the drill ------------------------------------------------------------------------

# GCP: an IAM member, allowed to act as the reader service account.
_GCP_MEMBER_RE = re.compile(r"^(user|serviceAccount|group):[^\s:@]+@[^\s:@]+$")
# AWS: the caller's ARN as `sts get-caller-identity` returns it (an IAM user, a role session),
# or an IAM role's own ARN: the one principal the reader role trusts.
_AWS_PRINCIPAL_RE = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):(?P<service>iam|sts)::(?P<account>\d{12}):"
    r"(?P<kind>user|role|assumed-role)/(?P<name>[\w+=,.@/-]+)$"
)


def _aws_principal(operator: str) -> re.Match[str] | None:
    match = _AWS_PRINCIPAL_RE.match(operator)
    if match is None:
        return None
    session = match["kind"] == "assumed-role"
    # A role session is `sts` and ROLE/SESSION (no path: STS drops it); users and roles are `iam`.
    if (match["service"] == "sts") != session or (session and match["name"].count("/") != 1):
        return None
    return match


def operator_cloud(operator: str) -> Cloud | None:
    """The cloud whose principal `operator` names; None when it is neither form."""
    if _aws_principal(operator):
        return Cloud.AWS
    if _GCP_MEMBER_RE.match(operator):
        return Cloud.GCP
    return None


def check_operator(operator: str) -> None:
    """ValueError unless `operator` is an AWS principal ARN or a GCP IAM member."""
    if operator_cloud(operator) is None:
        raise ValueError(
            f'operator "{operator}" is neither an AWS principal ARN (arn:aws:iam::ACCOUNT:user/'
            "NAME, ...:role/NAME, arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION) nor a GCP IAM "
            "member (user:EMAIL, serviceAccount:EMAIL, group:EMAIL)"
        )


def aws_trusted(operator: str) -> tuple[str, tuple[str, ...]]:
    """What the AWS reader role trusts for `operator`: (the account's principal, the
    `aws:PrincipalArn` patterns it must match). A user or a role is matched exactly, path
    included. A role session (`assumed-role/ROLE/SESSION`) acts as its role, and
    `aws:PrincipalArn` is the role's ARN, path included (the IAM global condition keys
    reference); STS drops the path from the session's ARN (hashicorp/terraform-provider-aws
    #19957), hence the role with no path or any path: role names are unique in an account
    whatever their path, so both patterns name one role. ValueError for another form."""
    match = _aws_principal(operator)
    if match is None:
        raise ValueError(f'operator "{operator}" is not an AWS principal ARN')
    partition, account = match["partition"], match["account"]
    root = f"arn:{partition}:iam::{account}:root"
    if match["kind"] != "assumed-role":
        return root, (operator,)
    role = match["name"].split("/", 1)[0]
    return root, (
        f"arn:{partition}:iam::{account}:role/{role}",
        f"arn:{partition}:iam::{account}:role/*/{role}",
    )


# --- the `gpudr:drill` config object ------------------------------------------------------------


@dataclass(frozen=True)
class DrillConfig:
    """`gpudr:drill`, what the program reads in drill mode."""

    stack: str  # drill-<site>-<YYYYMMDDTHHMMSSZ>
    expires_at: str  # UTC, extended ISO 8601
    ttl_s: int
    phase: str  # infrastructure: pools at 0 | capacity: pools at their test size
    nodes: dict[str, int]  # DR pool name -> test size
    cidr: str | None = None  # the isolated network's range; None: the DR site's own
    # Who runs the drill, the one principal allowed to act as the reader, so that the drill's
    # checks run with the reader's rights and no more: GCP an IAM member (`user:...`,
    # `serviceAccount:...`), AWS a principal ARN (`aws_trusted`). None: nobody is, and on AWS
    # no reader is declared at all (the checks run with the operator's own credentials).
    operator: str | None = None

    @property
    def id(self) -> str:
        """Lower case: usable in every cloud's names and in GCP labels."""
        return self.stack.lower()

    @property
    def expires(self) -> datetime:
        return parse_ts(self.expires_at)

    @property
    def stop_at(self) -> datetime:
        """When gpudr stops the drill to leave its destroy the time it needs before the TTL: the
        destroy margin before it, or half the TTL for a TTL shorter than twice the margin."""
        margin = min(DRILL_DESTROY_MARGIN_S, self.ttl_s / 2)
        return self.expires - timedelta(seconds=margin)

    @property
    def failover(self) -> bool:
        """Pools at their test size (the components' failover sizing) in the capacity phase."""
        return self.phase == "capacity"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        return {k: str(v) if isinstance(v, Enum) else v for k, v in out.items() if v is not None}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> DrillConfig:
        """Rebuild `gpudr:drill`; ValueError names the first bad key."""
        missing = [k for k in ("stack", "expires_at", "ttl_s", "phase", "nodes") if k not in data]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        _, created = check_stack_name(str(data["stack"]))
        _check_expiry(created, parse_ts(str(data["expires_at"])))
        operator = data.get("operator")
        if operator is not None:
            check_operator(str(operator))
        if data["phase"] not in PHASES:
            raise ValueError(f'phase "{data["phase"]}" is not one of {", ".join(PHASES)}')
        nodes = data["nodes"]
        if not isinstance(nodes, Mapping) or not all(
            isinstance(v, int | float) and int(v) >= 1 for v in nodes.values()
        ):
            raise ValueError("nodes is not a mapping of pool name to a node count of at least 1")
        return DrillConfig(
            stack=str(data["stack"]),
            expires_at=str(data["expires_at"]),
            ttl_s=int(data["ttl_s"]),
            phase=str(data["phase"]),
            nodes={str(k): int(v) for k, v in nodes.items()},
            cidr=data.get("cidr"),
            operator=None if operator is None else str(operator),
        )


def _check_expiry(created: datetime, expires: datetime) -> None:
    """A drill expires after it is created and at most the longest TTL later: a stack that
    would outlive that is refused before anything is declared."""
    cap = created + timedelta(seconds=DRILL_MAX_TTL_S)
    if not created < expires <= cap:
        raise ValueError(
            f"expires_at {iso(expires)} is not after the stack's creation ({iso(created)}) and "
            f"at most {DRILL_MAX_TTL_S // 3600} h later ({iso(cap)})"
        )


def ttl_tags(drill: DrillConfig) -> dict[str, str]:
    """The TTL tags on every taggable resource (GCP labels lower-case them, which parse_ts
    reads back)."""
    return {TAG_DRILL: drill.id, TAG_EXPIRES: format_ts(drill.expires)}


def drill_clusters(site: SiteConfig, drill: DrillConfig) -> tuple[ClusterConfig, ...]:
    """The DR site's clusters as the drill declares them: every cluster standing (a
    backup/restore cluster is created, as its failover would), named from the drill id, each
    pool at the drill's test size, on demand (a drill cannot consume the DR site's capacity
    reservations: they are targeted at its own pools)."""
    out = []
    for c in site.clusters:
        pools = tuple(
            replace(
                p,
                pattern=Pattern.DRILL,
                nodes=drill.nodes.get(p.name, 1),
                standby_nodes=0,
                reserved=False,
                warm_fraction=None,
            )
            for p in c.pools
        )
        out.append(
            ClusterConfig(
                name=c.name,
                eks_name=cluster_name(drill.id, c.name, site.cloud),
                kubernetes_version=c.kubernetes_version,
                pools=pools,
                standby_control_plane=True,
                system_pool=c.system_pool,
            )
        )
    return tuple(out)


def replica_buckets(site: SiteConfig) -> tuple[BucketConfig, ...]:
    """What a drill reads: every data bucket of the DR site (replicas, and the dual-region
    buckets a GCP DR site owns). Read, never declared."""
    return tuple(b for b in site.buckets if b.role in (BucketRole.REPLICA, BucketRole.DUAL_REGION))


def drill_tags(site: SiteConfig, drill: DrillConfig, dr_role: str, **extra: str) -> dict[str, str]:
    """A drill resource's tags: the site's, with its role in the drill, and the drill id and
    expiry that `gpudr drill cleanup` (and anyone auditing the bill) finds it by."""
    return {**site_tags(site, f"drill-{dr_role}", **extra), **ttl_tags(drill)}


def drill_pool_tags(
    site: SiteConfig, drill: DrillConfig, pools: Iterable[PoolConfig]
) -> dict[str, dict[str, str]]:
    """Per drill pool: its pool tags (what gpu-standby-sizing reads) and the drill's TTL tags."""
    return {
        p.name: {**pool_tags(site, p.name, p.pattern, p.rto_s), **ttl_tags(drill)} for p in pools
    }
