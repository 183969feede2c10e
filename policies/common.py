"""Helpers every gpudr policy shares: type tokens, gpudr tags on each cloud, the data classes'
sizing facts, links between split resources, numbers and durations, and policy config.

Props arrive as the pulumi-policy engine sends them: camelCase, numbers as floats, mappings and
lists wrapped in proxies (`collections.abc.Mapping` / `Sequence`, not `dict` / `list`) that raise
`UnknownValueError` when a value is unknown during preview. Nothing here catches that error
except `UnknownGuard` and the link matchers, which say so.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from fnmatch import fnmatchcase
from typing import Any, TypeVar

from pulumi_policy import (
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.proxy import UnknownValueError

from gpudr.contract import tags
from gpudr.core import enums, sizing

_T = TypeVar("_T")

# --- type tokens (as the engine sends them; see shared/reference/pulumi-sdk-facts.md) ----------

S3_BUCKET = "aws:s3/bucket:Bucket"
S3_ENCRYPTION = (
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
)
S3_PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
S3_ACCOUNT_PUBLIC_ACCESS_BLOCK = "aws:s3/accountPublicAccessBlock:AccountPublicAccessBlock"
S3_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
S3_VERSIONING = "aws:s3/bucketVersioning:BucketVersioning"
S3_OBJECT_LOCK = "aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration"
S3_REPLICATION = "aws:s3/bucketReplicationConfig:BucketReplicationConfig"
AWS_KMS_KEY = "aws:kms/key:Key"
DATASYNC_TASK = "aws:datasync/task:Task"
DATASYNC_S3_LOCATION = "aws:datasync/s3Location:S3Location"
DX_CONNECTION = "aws:directconnect/connection:Connection"
TGW_PEERING = "aws:ec2transitgateway/peeringAttachment:PeeringAttachment"
AWS_VPN_CONNECTION = "aws:ec2/vpnConnection:VpnConnection"
AWS_VPC_PEERING = "aws:ec2/vpcPeeringConnection:VpcPeeringConnection"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"

GCS_BUCKET = "gcp:storage/bucket:Bucket"
GCS_TRANSFER_JOB = "gcp:storage/transferJob:TransferJob"
GCP_CRYPTO_KEY = "gcp:kms/cryptoKey:CryptoKey"
GCP_KEY_RING = "gcp:kms/keyRing:KeyRing"
GCP_VPN_TUNNEL = "gcp:compute/vPNTunnel:VPNTunnel"  # sic: the SDK's token
GCP_NETWORK_PEERING = "gcp:compute/networkPeering:NetworkPeering"
GCP_INTERCONNECT_ATTACHMENT = "gcp:compute/interconnectAttachment:InterconnectAttachment"
GCP_INTERCONNECT = "gcp:compute/interconnect:Interconnect"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"

AZ_STORAGE_ACCOUNT = "azure-native:storage:StorageAccount"
AZ_BLOB_SERVICE = "azure-native:storage:BlobServiceProperties"
AZ_BLOB_CONTAINER = "azure-native:storage:BlobContainer"
AZ_OBJECT_REPLICATION = "azure-native:storage:ObjectReplicationPolicy"
AZ_KEY_VAULT = "azure-native:keyvault:Vault"
AZ_VAULT_KEY = "azure-native:keyvault:Key"
AZ_VNET_PEERING = "azure-native:network:VirtualNetworkPeering"
AZ_VPN_GATEWAY = "azure-native:network:VirtualNetworkGateway"
AZ_VPN_CONNECTION = "azure-native:network:VirtualNetworkGatewayConnection"
AZ_MOVER_ENDPOINT = "azure-native:storagemover:Endpoint"
AZ_MOVER_JOB = "azure-native:storagemover:JobDefinition"
AZ_LOGIC_WORKFLOW = "azure-native:logic:Workflow"
AZ_ROLE_DEFINITION = "azure-native:authorization:RoleDefinition"
AZ_PRIVATE_ENDPOINT = "azure-native:network:PrivateEndpoint"
AZ_PRIVATE_DNS_ZONE_GROUP = "azure-native:network:PrivateDnsZoneGroup"
AZ_PRIVATE_DNS_ZONE = "azure-native:privatedns:PrivateZone"
AZ_PRIVATE_DNS_LINK = "azure-native:privatedns:VirtualNetworkLink"
AKS_AGENT_POOL = "azure-native:containerservice:AgentPool"
AKS_CLUSTER = "azure-native:containerservice:ManagedCluster"
AWS_KMS_EXTERNAL_KEY = "aws:kms/externalKey:ExternalKey"
AWS_KMS_REPLICA_KEY = "aws:kms/replicaKey:ReplicaKey"
AZ_MANAGED_HSM = "azure-native:keyvault:ManagedHsm"
AZ_MANAGED_HSM_KEY = "azure-native:keyvault:ManagedHsmKey"
AZ_ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
AZ_CONTAINER_APP_JOB = "azure-native:app:Job"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
S3_ACL = "aws:s3/bucketAcl:BucketAcl"
IAM_POLICY = "aws:iam/policy:Policy"
IAM_ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
GCS_IAM_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
GCS_IAM_BINDING = "gcp:storage/bucketIAMBinding:BucketIAMBinding"
EC2_LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
EC2_VPC = "aws:ec2/vpc:Vpc"
EC2_DEFAULT_SECURITY_GROUP = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"
# Logging: S3 server access logs, VPC and subnet flow logs, audit configs, diagnostic settings.
S3_LOGGING = "aws:s3/bucketLogging:BucketLogging"
EC2_FLOW_LOG = "aws:ec2/flowLog:FlowLog"
GCP_SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
GCP_PROJECT_AUDIT_CONFIG = "gcp:projects/iAMAuditConfig:IAMAuditConfig"  # sic: the SDK's token
AZ_DIAGNOSTIC_SETTING = "azure-native:monitor:DiagnosticSetting"
CLOUDWATCH_LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
GCP_LOG_BUCKET = "gcp:logging/projectBucketConfig:ProjectBucketConfig"
GCP_LOG_SINK = "gcp:logging/projectSink:ProjectSink"
GCP_LOG_EXCLUSION = "gcp:logging/projectExclusion:ProjectExclusion"
AZ_LOG_WORKSPACE = "azure-native:operationalinsights:Workspace"
IAM_ATTACHMENTS = (
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
    "aws:iam/userPolicyAttachment:UserPolicyAttachment",
    "aws:iam/groupPolicyAttachment:GroupPolicyAttachment",
    "aws:iam/policyAttachment:PolicyAttachment",
)

# Another SDK class for the same cloud resource, folded onto the class gpudr's components use so
# that every check covers both: pulumi-aws 7 still ships the deprecated `BucketV2` family (same
# S3 bucket, same settings resources, `BucketLoggingV2` too). azure-native's API-version modules
# (`azure-native:storage/v20240101:StorageAccount`) are folded by `canonical_type`.
TYPE_ALIASES = {
    "aws:s3/bucketV2:BucketV2": S3_BUCKET,
    "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2": (
        S3_ENCRYPTION
    ),
    "aws:s3/bucketVersioningV2:BucketVersioningV2": S3_VERSIONING,
    "aws:s3/bucketAclV2:BucketAclV2": S3_ACL,
    "aws:s3/bucketObjectLockConfigurationV2:BucketObjectLockConfigurationV2": S3_OBJECT_LOCK,
    "aws:s3/bucketLoggingV2:BucketLoggingV2": S3_LOGGING,
    # azure-native registers diagnostic settings under `monitor` and, as an alias, `insights`
    # (the ARM namespace `Microsoft.Insights`), each with API-version modules.
    "azure-native:insights:DiagnosticSetting": AZ_DIAGNOSTIC_SETTING,
}
_AZURE_API_VERSION = re.compile(r"^(azure-native:[A-Za-z0-9]+)/v[0-9a-z]+(:[A-Za-z0-9]+)$")


def canonical_type(resource_type: str) -> str:
    """The type token a policy compares with: SDK aliases and azure-native API-version modules
    folded onto the token gpudr's components register."""
    folded = _AZURE_API_VERSION.sub(r"\1\2", resource_type)
    return TYPE_ALIASES.get(folded, folded)


def kind(resource: PolicyResource) -> str:
    """`canonical_type` of a resource."""
    return canonical_type(resource.resource_type)


# Where a data class's objects live: the resources that carry its gpudr tags.
DATA_BUCKET_TYPES = (S3_BUCKET, GCS_BUCKET, AZ_STORAGE_ACCOUNT)
DATA_ROLES = tuple(str(r) for r in tags.DATA_ROLES)

# --- gpudr tags: the schema and its reader are the contract's (gpudr.contract.tags) ----------

PREFIX = tags.PREFIX


def cloud_of(resource_type: str) -> str:
    """`aws`, `gcp`, `azure`, or the token's package for anything else."""
    package = resource_type.split(":", 1)[0]
    return "azure" if package == "azure-native" else package


def tag_map(resource_type: str, props: Mapping[str, Any]) -> Mapping[str, Any]:
    """The resource's tags (AWS, Azure) or labels (GCP; a GKE node pool's are its nodes'
    `resourceLabels`), or an empty mapping."""
    if cloud_of(resource_type) == "gcp":
        found = (
            get(props, "nodeConfig", "resourceLabels") if resource_type == GKE_NODE_POOL else None
        )
        found = found if found is not None else props.get("labels")
    else:
        found = props.get("tags")
    return found if isinstance(found, Mapping) else {}


def gpudr_tag(resource_type: str, props: Mapping[str, Any], name: str) -> str | None:
    """The value of gpudr tag `name` (`rpo-s`, `dr-role`, ...) on this resource."""
    return tags.read_tag(cloud_of(resource_type), tag_map(resource_type, props), name)


def tag_is(resource_type: str, props: Mapping[str, Any], name: str, *expected: str) -> bool:
    """Whether tag `name` holds one of `expected` (compared as GCP writes them on GCP)."""
    return tags.tag_is(cloud_of(resource_type), tag_map(resource_type, props), name, *expected)


def is_data_bucket(resource: PolicyResource) -> bool:
    """An S3 bucket, GCS bucket or Azure storage account that gpudr tags as a data class's
    copy (`gpudr:dr-role` data-source, data-replica or data-dual-region)."""
    return kind(resource) in DATA_BUCKET_TYPES and tag_is(
        resource.resource_type, resource.props, "dr-role", *DATA_ROLES
    )


def ancestor_types(resource: PolicyResource) -> set[str]:
    """The types of the resource's parents, components included: from the parent chain the
    engine sends, and from the URN's type chain (`<parent type>$<type>`), which names them
    even when a parent is not among the resources sent."""
    found: set[str] = set()
    parent = resource.parent
    while parent is not None:
        found.add(parent.resource_type)
        parent = parent.parent
    parts = resource.urn.split("::")
    if len(parts) >= 4:
        found.update(parts[2].split("$")[:-1])
    return found


def tag_number(resource: PolicyResource, name: str) -> float | None:
    """Tag `name` as a number; None when absent or `none`."""
    return number(gpudr_tag(resource.resource_type, resource.props, name))


# --- values ---------------------------------------------------------------------------------

number = tags.number


def get(value: Any, *path: str | int) -> Any:
    """`value[p0][p1]...`, None as soon as a step is missing or of the wrong kind. An unknown
    value on the way raises `UnknownValueError`, as the engine's proxies do."""
    for step in path:
        if isinstance(step, str):
            if not isinstance(value, Mapping):
                return None
            value = value.get(step)
        else:
            if isinstance(value, str) or not isinstance(value, Sequence):
                return None
            if not -len(value) <= step < len(value):
                return None
            value = value[step]
    return value


def items(value: Any) -> list[Any]:
    """A list or the engine's list proxy as a list; one value as a one-item list; None as []."""
    if value is None:
        return []
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return [value]


def is_true(value: Any) -> bool:
    """True for `True` or the string `"true"` (some providers take booleans as strings)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def same(value: Any, expected: str) -> bool:
    """Case-insensitive string equality (Azure enums arrive in either case)."""
    return isinstance(value, str) and value.strip().lower() == expected.lower()


_ISO_DURATION = re.compile(
    r"^P(?:(?P<y>\d+(?:\.\d+)?)Y)?(?:(?P<mo>\d+(?:\.\d+)?)M)?(?:(?P<w>\d+(?:\.\d+)?)W)?"
    r"(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<mi>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)
_ISO_UNITS = {"y": 365 * 86400, "mo": 30 * 86400, "w": 7 * 86400, "d": 86400}
_ISO_UNITS.update({"h": 3600, "mi": 60, "s": 1})


def duration_s(value: Any) -> float | None:
    """Seconds from `"7776000s"` (Google's duration strings), `"P90D"` / `"PT1H"` (ISO 8601, a
    year counted as 365 days and a month as 30), or a plain number of seconds; else None."""
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("s") and number(text[:-1]) is not None:
            return number(text[:-1])
        match = _ISO_DURATION.match(text.upper())
        if match and text.upper() not in ("P", "PT"):
            return float(sum(float(v) * _ISO_UNITS[k] for k, v in match.groupdict().items() if v))
    return number(value)


_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$", re.I)
_RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86400}


def rate_expression_s(value: Any) -> float | None:
    """The interval of an EventBridge `rate(N hours)` schedule; None for cron or anything else."""
    if not isinstance(value, str):
        return None
    match = _RATE.match(value.strip())
    if not match:
        return None
    return float(int(match.group(1)) * _RATE_UNITS[match.group(2).lower().rstrip("s")])


def json_document(value: Any) -> Mapping[str, Any] | None:
    """An IAM-style policy document given as a JSON string or as a mapping."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def mbps(value: float) -> str:
    if math.isinf(value):
        return "unbounded"
    return f"{value / 1000:.2f} Gbps" if value >= 1000 else f"{value:.0f} Mbps"


def seconds(value: float) -> str:
    """`2h`, `1h30m`, `45m`, `30s`, as the plan spec writes durations."""
    if math.isinf(value):
        return "never"
    whole = round(value)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    out = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return out + (f"{secs}s" if secs or not out else "")


def describe(resource: PolicyResource) -> str:
    """How a message names a resource: its name and type (the URN goes with the report)."""
    return f"{resource.name} ({resource.resource_type})"


# --- the stack and links between split resources ----------------------------------------------


class Stack:
    """The stack's resources, indexed by type, with the links between split resources."""

    def __init__(self, resources: Sequence[PolicyResource]) -> None:
        self.resources = list(resources)
        self._by_type: dict[str, list[PolicyResource]] = {}
        self._by_urn: dict[str, PolicyResource] = {}
        for r in self.resources:
            self._by_type.setdefault(kind(r), []).append(r)
            self._by_urn[r.urn] = r

    def of_type(self, *resource_types: str) -> list[PolicyResource]:
        return [r for t in resource_types for r in self._by_type.get(t, [])]

    def data_buckets(self) -> list[PolicyResource]:
        return [r for r in self.of_type(*DATA_BUCKET_TYPES) if is_data_bucket(r)]

    def buckets(self) -> list[PolicyResource]:
        """Every bucket and storage account, gpudr-tagged or not, of any SDK class."""
        return self.of_type(*DATA_BUCKET_TYPES)

    def linked(
        self,
        target: PolicyResource,
        resource_type: str,
        prop: str,
        target_keys: Sequence[str],
        value_of: Callable[[PolicyResource], Any] | None = None,
    ) -> list[PolicyResource]:
        """Resources of `resource_type` whose property `prop` names `target` (see `links_to`)."""
        return [
            r
            for r in self.of_type(resource_type)
            if links_to(r, prop, target, target_keys, value_of)
        ]


def links_to(
    resource: PolicyResource,
    prop: str,
    target: PolicyResource,
    target_keys: Sequence[str],
    value_of: Callable[[PolicyResource], Any] | None = None,
) -> bool:
    """Whether `resource.<prop>` refers to `target`.

    The engine's property dependencies decide when they name any resource for `prop` (the
    program passed an Output of that resource). Otherwise the value must equal one of
    `target`'s `target_keys` props (a name passed as a plain string). An unknown value during
    preview cannot match: it counts as no link, here only.
    """
    deps = resource.property_dependencies.get(prop) or []
    if deps:
        return any(d.urn == target.urn for d in deps)
    try:
        value = value_of(resource) if value_of else resource.props.get(prop)
        if not isinstance(value, str) or not value:
            return False
        names = {target.props.get(k) for k in target_keys}
    except UnknownValueError:
        return False
    return value in {n for n in names if isinstance(n, str) and n}


def depends_on_type(resource: PolicyResource, prop: str, *resource_types: str) -> bool:
    """Whether `prop` was computed from a resource of one of `resource_types` (e.g. a bucket's
    encryption from a KMS key), which shows what an unknown value will be."""
    return any(
        d.resource_type in resource_types for d in resource.property_dependencies.get(prop, [])
    )


class UnknownGuard:
    """Runs a stack policy's checks one resource at a time, so that a value unknown during
    preview stops only the check that needs it. `raise_first()` at the end re-raises the first
    such error: the engine then adds its advisory "can't run during preview" diagnostic next to
    the violations already reported."""

    def __init__(self) -> None:
        self.first: UnknownValueError | None = None

    @contextmanager
    def check(self) -> Iterator[None]:
        try:
            yield
        except UnknownValueError as error:
            if self.first is None:
                self.first = error

    def raise_first(self) -> None:
        if self.first is not None:
            raise self.first


def any_proven(candidates: Iterable[_T], test: Callable[[_T], bool]) -> bool:
    """Whether `test` holds for one of `candidates` (e.g. one of the settings that may cover a
    resource). A candidate whose test meets a value unknown during preview is passed over; when
    no other candidate passes, that first error is raised: the answer depends on the value."""
    unknown: UnknownValueError | None = None
    for candidate in candidates:
        try:
            if test(candidate):
                return True
        except UnknownValueError as error:
            unknown = unknown or error
    if unknown is not None:
        raise unknown
    return False


def depends_on(resource: PolicyResource, prop: str, target: PolicyResource) -> bool:
    """Whether `prop` was computed from `target` (an Output of it was passed)."""
    return any(d.urn == target.urn for d in resource.property_dependencies.get(prop) or [])


# --- policy config --------------------------------------------------------------------------


def policy_config(
    schema: PolicyConfigSchema, args: ResourceValidationArgs | StackValidationArgs
) -> dict[str, Any]:
    """The schema's defaults with the pack's config for this policy merged over them. The CLI
    sends config only when the user set some, so the defaults must be applied here."""
    merged = {key: spec["default"] for key, spec in schema.properties.items() if "default" in spec}
    merged.update({k: v for k, v in args.get_config().items() if k != "enforcementLevel"})
    return merged


# Exemptions live in the pack's config (the organisation's), never on the resource: a stack
# cannot exempt itself. Each names what it exempts and why; one without a reason exempts nothing.
EXEMPTIONS = {
    "type": "array",
    "default": [],
    "description": (
        "Resources this policy does not judge: each {resource: a URN whose project, stack and "
        "type are spelt out (the name may be a glob), or a resource name glob with at least 3 "
        "literal characters together with stack: a stack name or project/stack glob; reason: "
        "why (required, at least 10 characters)}."
    ),
    "items": {
        "type": "object",
        "required": ["resource", "reason"],
        "additionalProperties": False,
        "properties": {
            "resource": {"type": "string", "minLength": 1},
            "stack": {"type": "string", "minLength": 1},
            "reason": {"type": "string", "minLength": 10},
        },
    },
}


def config_schema(**properties: Mapping[str, Any]) -> PolicyConfigSchema:
    """A policy's config schema: its own thresholds and the shared `exemptions`."""
    merged = {key: dict(spec) for key, spec in properties.items()}
    return PolicyConfigSchema(properties={**merged, "exemptions": dict(EXEMPTIONS)})


def stack_of(urn: str) -> str:
    """The stack name in `urn:pulumi:<stack>::<project>::<type>::<name>`."""
    return urn.split("::", 1)[0].rsplit(":", 1)[-1]


_WILDCARDS = set("*?[]!")


def glob_literal(pattern: str) -> str:
    """What a glob says outright: its characters outside wildcards and brackets."""
    return re.sub(r"\[[^\]]*\]|[*?]", "", pattern)


# What every approval in the pack config needs: a reason a reviewer can read, and a glob that
# names something (`*` or `a*` would approve everything).
MIN_REASON = 10
MIN_GLOB_LITERAL = 3


def names_enough(glob: Any) -> bool:
    """A glob that spells out at least MIN_GLOB_LITERAL characters."""
    return isinstance(glob, str) and len(glob_literal(glob)) >= MIN_GLOB_LITERAL


def approval(
    config: Mapping[str, Any], key: str, matches: Callable[[Mapping[str, Any]], bool]
) -> str | None:
    """The reason of the first entry of the pack config's list `key` that has a reason of at
    least MIN_REASON characters and that `matches`; None if there is none. An entry without
    a reason approves nothing."""
    for entry in items(config.get(key)):
        if not isinstance(entry, Mapping):
            continue
        reason = entry.get("reason")
        if isinstance(reason, str) and len(reason.strip()) >= MIN_REASON and matches(entry):
            return reason
    return None


def _names_something(pattern: str, stack: Any) -> bool:
    """A URN pattern whose project, stack and type are spelt out (only the name may be a
    glob); or a name pattern of at least 3 literal characters, scoped to a stack that is
    spelt out in part. `urn:*`, `*a*` or a name valid in every stack exempt too much."""
    if pattern.startswith("urn:"):
        head = pattern.rsplit("::", 1)[0]
        return "::" in pattern and glob_literal(head) == head
    literal_stack = (
        isinstance(stack, str) and len(glob_literal(stack).strip("/")) >= MIN_GLOB_LITERAL
    )
    return names_enough(pattern) and literal_stack


def exemption(config: Mapping[str, Any], urn: str) -> str | None:
    """The reason this resource is exempt from the policy, or None. `resource` is matched
    against the resource's name, or against its whole URN when it starts with `urn:` (so a
    name pattern cannot reach into the stack, project or type); `stack` against the stack
    name, or `project/stack` when it holds a `/`. A name pattern needs a stack."""
    name = urn.rsplit("::", 1)[-1]
    project = urn.split("::", 2)[1] if urn.count("::") >= 2 else ""

    def matches(entry: Mapping[str, Any]) -> bool:
        pattern, stack = entry.get("resource"), entry.get("stack")
        if not isinstance(pattern, str) or not _names_something(pattern, stack):
            return False
        if isinstance(stack, str):
            where = f"{project}/{stack_of(urn)}" if "/" in stack else stack_of(urn)
            if not fnmatchcase(where, stack):
                return False
        return fnmatchcase(urn if pattern.startswith("urn:") else name, pattern)

    return approval(config, "exemptions", matches)


def exempting(
    report: ReportViolation, config: Mapping[str, Any], own_urn: str | None = None
) -> ReportViolation:
    """`report`, minus the violations on resources the pack config exempts (`own_urn`: the
    resource a resource policy judges, whose reports carry no URN)."""

    def filtered(message: str, urn: str | None = None) -> None:
        target = urn or own_urn
        if target is None or exemption(config, target) is None:
            report(message, urn)

    return filtered


def config_number(config: Mapping[str, Any], key: str) -> float:
    value = number(config.get(key))
    if value is None:
        raise ValueError(f"policy config {key}: {config.get(key)!r} is not a number")
    return value


# --- the data classes' sizing facts (from tags, never from the planner's answer) --------------

PULLED = tuple(str(m) for m in enums.PULLED)  # scheduled by the DR site: its stack holds the job
QUOTA_BOUND = sizing.QUOTA_KEYS
DataClass = tags.BucketTags  # one data bucket's facts, as its tags state them


def data_class(resource: PolicyResource) -> tags.BucketTags | str:
    """The bucket's facts, or a message naming the tags it lacks."""
    cloud, found = cloud_of(resource.resource_type), tag_map(resource.resource_type, resource.props)
    missing = tags.missing_bucket_tags(cloud, found)
    if missing:
        return (
            f"{describe(resource)} is a gpudr data bucket without the tags {', '.join(missing)}, "
            "so its target cannot be checked; regenerate the stack with `gpudr generate` and "
            "keep the tags gpudr's components set"
        )
    return tags.read_bucket_tags(cloud, found)


def flow_of(d: tags.BucketTags) -> sizing.Flow:
    """The class's flow as the planner sizes it, rebuilt from the bucket's tags by the same
    function (`gpudr.core.sizing.flow`)."""
    return sizing.flow(
        d.data_class,
        d.mechanism,
        burst_bytes=d.burst_bytes,
        steady_gbps=d.steady_mbps / 1000,
        rpo_s=d.rpo_s,
        interval_s=d.interval_s,
        publish_window_s=d.publish_window_s,
    )


def need_mbps(d: tags.BucketTags) -> float:
    """The rate the class asks of the carrier it shares (`sizing.path_load_gbps`, as the planner
    sums it): its need for its RPO (`sizing.need_gbps` over its transfer window), or its steady
    rate when no bandwidth meets the RPO (replication-meets-rpo refuses that class)."""
    return sizing.path_load_gbps(flow_of(d)) * 1000


def default_quota_mbps(mechanism: str) -> float | None:
    quota = sizing.default_quota_gbps(mechanism)
    return None if quota is None else quota * 1000
