"""Naming rules: every name gpudr derives, written once.

The planner writes these names into the stack config, the components give them to the clouds,
and the runbooks, the drills and the policy pack look resources up by them. Each name is a
function of the plan's own identifiers (system, site, region, data class), never of another
stack's state, so that a DR stack can be previewed and updated with the primary gone.

Standard library and core's enums only: the Pulumi program reads this module.
"""

from __future__ import annotations

import hashlib
import re

# Re-exported: the ASNs are the spec's too (it refuses a router ASN equal to one of them).
from gpudr.core.enums import DX_GATEWAY_ASN as DX_GATEWAY_ASN
from gpudr.core.enums import transit_gateway_asn as transit_gateway_asn

# Every GPU node carries the pool label (a pool's node selector) and the GPU taint (everything
# without a matching toleration stays off): components/*/gpu_cluster.py.
POOL_LABEL = "gpudr/pool"
GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_TAINT_VALUE = "present"
GPU_TAINT = f"{GPU_TAINT_KEY}={GPU_TAINT_VALUE}:NoSchedule"  # as kubectl and AKS write it

# The type tokens of a data class's bucket component (components/*/bucket.py): the policy pack
# requires the bucket or account under one of them to carry a data dr-role.
DATA_BUCKET_COMPONENT = "gpudr:storage:DataBucket"  # AWS and GCP
AZURE_DATA_BUCKET_COMPONENT = "gpudr:storage:AzureDataBucket"
DATA_BUCKET_COMPONENTS = (DATA_BUCKET_COMPONENT, AZURE_DATA_BUCKET_COMPONENT)


def _digest(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


# --- stacks and per-site names ---------------------------------------------------------------


def stack_name(system: str, site: str) -> str:
    """A site's Pulumi stack: `<plan name>-<site>`."""
    return f"{system}-{site}"


def bucket_name(system: str, site: str, region: str, data_class: str) -> str:
    """Globally unique and stable: the hash binds the name to system, site and region."""
    digest = _digest(system, site, region, data_class)
    return f"{system}-{site}-{data_class}-{digest[:6]}"


def kms_alias(system: str, site: str) -> str:
    return f"alias/gpudr/{system}/{site}"


def replication_role_name(system: str, site: str) -> str:
    return f"gpudr-{system}-{site}-replication"[:64]


def transit_gateway_name(system: str, site: str) -> str:
    return f"gpudr-{system}-{site}"


def network_name(system: str, site: str) -> str:
    """GCP VPC network / Azure virtual network."""
    return f"gpudr-{system}-{site}"


def cci_gateway_name(system: str, aws_site: str, gcp_site: str) -> str:
    """A Cross-Cloud Interconnect's Direct Connect gateway, and its LAGs' prefix (`-lag-<i>`)."""
    return f"gpudr-{system}-{aws_site}-cci-{gcp_site}"


def cci_name(gcp_network: str, aws_site: str) -> str:
    """The prefix of a Cross-Cloud Interconnect's Google resources (`-<i>` per connection: its
    connection, VLAN attachment, router interface and BGP peer)."""
    return f"{gcp_network}-cci-{aws_site}"


def resource_group_name(system: str, site: str) -> str:
    """Azure: the resource group a site's stack creates."""
    return f"gpudr-{system}-{site}"


def key_ring_name(system: str, site: str) -> str:
    """GCP: the Cloud KMS key ring (one per location)."""
    return f"gpudr-{system}-{site}"


def storage_account_name(system: str, site: str, region: str, data_class: str) -> str:
    """Azure storage accounts: 3-24 lowercase letters and digits, globally unique."""
    return f"gpudr{_digest(system, site, region, data_class)[:19]}"


def key_vault_name(system: str, site: str, region: str) -> str:
    """Azure Key Vault names: 3-24 letters, digits and hyphens, globally unique."""
    return f"gpudr-{_digest(system, site, region, 'vault')[:18]}"


def log_sink_name(cloud: str, system: str, site: str, region: str) -> str:
    """A site's log sink: on AWS a globally unique S3 bucket (hash as for data buckets); on GCP
    a Cloud Logging bucket id and on Azure a Log Analytics workspace, both unique only within
    their project or resource group."""
    if cloud == "aws":
        return f"{system}-{site}-logs-{_digest(system, site, region, 'logs')[:6]}"
    return f"gpudr-{system}-{site}-logs"


def cluster_name(system: str, site: str, cluster: str) -> str:
    """The physical EKS/GKE/AKS cluster name of a plan's cluster at a site."""
    return f"{system}-{site}-{cluster}"


# --- cross-cloud readers ---------------------------------------------------------------------


def sts_reader_role_name(system: str, dr_site: str) -> str:
    """The AWS role Storage Transfer Service assumes (by federation) to read the primary."""
    return f"gpudr-{system}-{dr_site}-sts-reader"[:64]


# GCP service account ids: 6-30 characters, lower case letters, digits and hyphens, starting
# with a letter and not ending with a hyphen.
GCP_ACCOUNT_ID = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")


def datasync_reader_id(system: str, dr_site: str) -> str:
    """GCP service account ids are 6-30 characters: a digest keeps them unique per plan."""
    return f"gpudr-ds-{_digest(system, dr_site, 'datasync')[:12]}"


def azure_sts_identity_name(system: str, dr_site: str) -> str:
    return f"gpudr-{system}-{dr_site}-sts-reader"[:128]


def azcopy_reader_role_name(system: str, dr_site: str) -> str:
    """The AWS role an Azure DR site's AzCopy jobs assume (by federation) to read the primary."""
    return f"gpudr-{system}-{dr_site}-azcopy-reader"[:64]


def azcopy_identity_name(system: str, dr_site: str) -> str:
    """The user-assigned identity an Azure DR site's AzCopy jobs run as (3-128 characters),
    created by the AWS primary's stack in its own resource group (`azcopy_identity_group`)."""
    return f"gpudr-{system}-{dr_site}-azcopy"[:128]


def azcopy_identity_group(system: str, dr_site: str) -> str:
    """The resource group, in the DR region, holding only that identity: the primary's stack
    owns it, apart from the DR stack's own group (`resource_group_name`)."""
    return f"gpudr-{system}-{dr_site}-azcopy-identity"[:90]


# Container Apps names: 2-32 lower-case letters, digits and hyphens, starting with a letter and
# ending with a letter or digit (jobs and managed environments alike).
CONTAINER_APPS_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$")


def azcopy_environment_name(system: str, site: str) -> str:
    """The Container Apps environment an Azure DR site's AzCopy jobs run in."""
    return f"gpudr-azcopy-{_digest(system, site, 'azcopy-env')[:12]}"


def azcopy_job_name(system: str, site: str, data_class: str) -> str:
    """One class's AzCopy job: the class in clear (the runbook and the pack read it), a digest
    of the plan and site to keep it unique in the resource group within 32 characters."""
    return f"azcopy-{data_class}-{_digest(system, site, data_class, 'azcopy')[:8]}"


# --- dual writers ------------------------------------------------------------------------------


def writer_name(system: str, site: str, data_class: str) -> str:
    """The identity a dual-written class's writer writes a site's copy as: the AWS IAM policy
    (1-128 characters) or the Azure user-assigned identity (3-128 letters, digits, hyphens and
    underscores)."""
    return f"gpudr-{system}-{site}-{data_class}-writer"[:128]


def writer_role_name(system: str, site: str, data_class: str) -> str:
    """AWS: the IAM role (1-64 characters) a dual-written class's writer assumes at a site, which
    the writer policy is attached to. `writer_name` when it fits; otherwise its first 51
    characters and a digest, so that two long names never truncate to the same role."""
    name = writer_name(system, site, data_class)
    if len(name) <= 64:
        return name
    return f"{name[:51]}-{_digest(system, site, data_class, 'writer-role')[:12]}"


def writer_account_id(system: str, site: str, data_class: str) -> str:
    """GCP: the writer's service account id (`GCP_ACCOUNT_ID`), readable by its class: the class
    in lower case letters, digits and hyphens, at most 11 of them, then a digest that keeps the
    id unique per plan and site ("weights" -> "gpudr-weights-wr-1a2b3c4d")."""
    label = "".join(c if c.isascii() and c.isalnum() else "-" for c in data_class.lower())
    label = label[:11].strip("-") or "class"
    return f"gpudr-{label}-wr-{_digest(system, site, data_class, 'writer')[:8]}"


# --- pools and scheduled pulls ---------------------------------------------------------------


def agent_pool_name(pool: str) -> str:
    """AKS Linux node pool names are 1-12 lowercase letters and digits, starting with a letter.
    gpudr lowercases the pool name, drops every other character, prefixes "p" if it would not
    start with a letter, and keeps the first 12: "svc-chat" -> "svcchat", "train" -> "train",
    "Train_H100-large" -> "trainh100lar", "8x-h100" -> "p8xh100"."""
    cleaned = "".join(c for c in pool.lower() if c.isascii() and c.isalnum())
    if not cleaned or not cleaned[0].isalpha():
        cleaned = f"p{cleaned}"
    return cleaned[:12]


def datasync_schedule(schedule_s: int) -> str:
    """A DataSync task's schedule expression for an interval of whole hours (the caller checks
    that it is one). Rate expressions want the singular for a value of 1."""
    hours = schedule_s // 3600
    return "rate(1 hour)" if hours == 1 else f"rate({hours} hours)"


def datasync_role_name(system: str, site: str, data_class: str) -> str:
    """The IAM role one replica bucket's DataSync tasks write with."""
    return f"gpudr-{system}-{site}-{data_class}-datasync"[:64]


def storage_mover_name(system: str, site: str) -> str:
    """The Azure storage mover an Azure DR site's on-premises agents register with (its
    project is named after the on-premises site, its job definitions after the data classes)."""
    return f"gpudr-{system}-{site}"


def expressroute_circuit_name(site: str) -> str:
    """The ExpressRoute circuit an Azure DR site orders for its on-premises site's link."""
    return f"{site}-er-circuit"


def datasync_task_prefix(system: str, site: str, data_class: str) -> str:
    """What the names of one replica bucket's DataSync tasks start with."""
    return f"gpudr-{system}-{site}-{data_class}"


def datasync_task_name(prefix: str, source_site: str) -> str:
    """A DataSync task's name: its bucket's `datasync_task_prefix` and the site it pulls from."""
    return f"{prefix}-from-{source_site}"


def replication_rule_id(data_class: str, dr_site: str) -> str:
    """The id of a push replication rule (S3) from a source bucket to one DR site."""
    return f"{data_class}-to-{dr_site}"


def sts_agent_pool_name(system: str, dr_site: str, onprem: str) -> str:
    """The Storage Transfer agent pool at a GCP DR site that on-premises agents join (lower
    case, digits and dashes; the runbook's `gcloud transfer agents install --pool` names it)."""
    return f"{system}-{dr_site}-from-{onprem}"


def sts_agent_account_id(onprem: str) -> str:
    """The service account the on-premises Storage Transfer agents run as (6-30 characters)."""
    return f"sts-agents-{onprem}"[:30].rstrip("-")


def sts_pool_limit_mbps(committed_gbps: float) -> int:
    """The agent pool's bandwidth limit in megabytes per second (the API's unit), shared by all
    its agents: the WAN bandwidth committed to DR, rounded down, so the transfers never take
    more of the link than the network team committed (the plan's RPOs are sized on that rate)."""
    return max(1, int(committed_gbps * 1000 // 8))
