"""A stack's configuration keys: what `gpudr generate` writes, what an operator sets with
`pulumi config set`, and what the program reads (components/config.py). Pulumi.yaml documents
each key for users; this module is where the code takes them from.

Standard library only: the Pulumi program reads this module.
"""

from __future__ import annotations

import re

from gpudr.core.enums import Mode

CONFIG_NAMESPACE = "gpudr"
# `drill` is set only by `gpudr drill`, on a disposable drill stack configured from a DR site.
MODES = tuple(Mode)
DEFAULT_MODE = Mode.STANDBY


def key(name: str) -> str:
    """The full config key of one of gpudr's keys: `gpudr:<name>`."""
    return f"{CONFIG_NAMESPACE}:{name}"


# The keys' short names, as `pulumi.Config("gpudr")` reads them, and their full keys.
SITE = "site"
MODE = "mode"
DRILL = "drill"
LOCK_WEIGHTS = "lock_weights"
SITE_KEY = key(SITE)
MODE_KEY = key(MODE)
DRILL_KEY = key(DRILL)
LOCK_WEIGHTS_KEY = key(LOCK_WEIGHTS)

# What a DR stack copies from its primary's `transfer_credentials` output into its own config
# (short names, as the output and `pulumi config set` spell them), and whether each is secret.
GCS_HMAC_ACCESS_ID = "gcs_hmac_access_id"
GCS_HMAC_SECRET = "gcs_hmac_secret"
AZURE_STS_CLIENT_ID = "azure_sts_client_id"
AZURE_TENANT_ID = "azure_tenant_id"
# DataSync from GCS signs in with an HMAC key pair; Storage Transfer from Azure Blob as a
# federated identity.
DATASYNC_CREDENTIALS = ((GCS_HMAC_ACCESS_ID, False), (GCS_HMAC_SECRET, True))
AZURE_STS_CREDENTIALS = ((AZURE_STS_CLIENT_ID, False), (AZURE_TENANT_ID, False))

# AzCopy into an Azure DR site from S3: the user-assigned identity the AWS primary's stack created
# for the DR site's jobs (its resource id, client id and principal (object) id, and its
# tenant), which the primary's read role trusts. Not secret: ids, no key.
AZCOPY_IDENTITY_ID = "azcopy_identity_id"
AZCOPY_CLIENT_ID = "azcopy_client_id"
AZCOPY_PRINCIPAL_ID = "azcopy_principal_id"
AZCOPY_TENANT_ID = "azcopy_tenant_id"
AZCOPY_CREDENTIALS = (
    (AZCOPY_IDENTITY_ID, False),
    (AZCOPY_CLIENT_ID, False),
    (AZCOPY_PRINCIPAL_ID, False),
    (AZCOPY_TENANT_ID, False),
)
# ... and the image its jobs run (docker/azcopy/Dockerfile), pushed by the operator and named by
# digest: `<registry>/<repository>@sha256:<64 hex>`. A tag could be moved to another image.
AZCOPY_IMAGE = "azcopy_image"
AZCOPY_IMAGE_KEY = key(AZCOPY_IMAGE)
IMAGE_BY_DIGEST = re.compile(r"[a-z0-9][a-z0-9.:-]*(/[a-z0-9._-]+)+@sha256:[0-9a-f]{64}")


def image_error(value: str) -> str | None:
    """Why `gpudr:azcopy_image` is refused (one line), or None when it names an image by digest."""
    if IMAGE_BY_DIGEST.fullmatch(value):
        return None
    return (
        f"{AZCOPY_IMAGE_KEY} {value!r} does not name an image by digest; push "
        "docker/azcopy/Dockerfile's image and set `<registry>/<repository>@sha256:<64 hex>` "
        "(`docker buildx imagetools inspect <tag>` prints the digest)"
    )


# A DR stack pulling from on premises: {agent name: agent ARN}, set by the operator once each
# agent VM is activated (`pulumi config set --path 'gpudr:datasync_agent_arns.<name>' <arn>`).
DATASYNC_AGENT_ARNS = "datasync_agent_arns"
DATASYNC_AGENT_ARNS_KEY = key(DATASYNC_AGENT_ARNS)
# ... and from an S3-compatible store there: the read-only access key its agents sign in with,
# which the operator creates on the store (the secret as a secret, never a plain value).
ONPREM_S3_ACCESS_KEY = "onprem_s3_access_key"
ONPREM_S3_SECRET_KEY = "onprem_s3_secret_key"
ONPREM_S3_CREDENTIALS = ((ONPREM_S3_ACCESS_KEY, False), (ONPREM_S3_SECRET_KEY, True))

# An Azure DR stack pulling from on premises: {agent name: {name, principal_id}} of the Storage
# Mover agents the operator registered with Azure Arc (the agent resource's name and the Arc
# machine's identity), and whether the provider has provisioned the ExpressRoute circuit (the
# private peering and the connection deploy only then).
STORAGE_MOVER_AGENTS = "storage_mover_agents"
STORAGE_MOVER_AGENTS_KEY = key(STORAGE_MOVER_AGENTS)
EXPRESSROUTE_PROVISIONED = "expressroute_provisioned"
EXPRESSROUTE_PROVISIONED_KEY = key(EXPRESSROUTE_PROVISIONED)
# A primary's stack owning a Cross-Cloud Interconnect: true once Google reports its connections
# PROVISIONED and AWS its LAGs available (the VLAN attachments, virtual interfaces and BGP
# sessions deploy only then; before, the stack orders the ports and says what to do).
CCI_PROVISIONED = "cross_cloud_interconnect_provisioned"
CCI_PROVISIONED_KEY = key(CCI_PROVISIONED)

# `pulumi config set` writes these into the generated stack file. `gpudr generate` keeps their
# values when it rewrites the file and `--check` does not count them as drift: regenerating during
# a failover must not switch the DR stack back to standby, and a credential copied from the
# primary's outputs (a secret, encrypted by the stack's secrets provider) must survive.
OPERATOR_KEYS = (
    MODE_KEY,
    LOCK_WEIGHTS_KEY,
    DATASYNC_AGENT_ARNS_KEY,
    STORAGE_MOVER_AGENTS_KEY,
    EXPRESSROUTE_PROVISIONED_KEY,
    CCI_PROVISIONED_KEY,
    AZCOPY_IMAGE_KEY,
    *(
        key(name)
        for name, _ in (
            *DATASYNC_CREDENTIALS,
            *AZURE_STS_CREDENTIALS,
            *ONPREM_S3_CREDENTIALS,
            *AZCOPY_CREDENTIALS,
        )
    ),
)
# The operator keys whose value is a secret: a stack file may hold them only as the secrets
# provider's ciphertext (`{secure: ...}`); `gpudr generate --check` refuses a plain value.
SECRET_KEYS = tuple(
    key(name)
    for name, secret in (*DATASYNC_CREDENTIALS, *AZURE_STS_CREDENTIALS, *ONPREM_S3_CREDENTIALS)
    if secret
)
# Top-level keys the Pulumi CLI writes for the stack's secrets provider (`pulumi stack init`).
SECRETS_PROVIDER_KEYS = ("secretsprovider", "encryptedkey", "encryptionsalt")


def copy_credential_command(
    primary_stack: str, dr_site: str, name: str, secret: bool, dr_stack: str
) -> str:
    """The command that copies one value of the primary stack's `transfer_credentials` output
    (`{dr site: {key: value}}`) into the DR stack's config key `gpudr:<name>`. The value goes
    through a pipe, never a file, an argument or the shell history; `jq -j` adds no trailing
    newline, which would become part of the value."""
    flag = " --secret" if secret else ""
    return (
        f"pulumi stack output transfer_credentials --show-secrets --json -s {primary_stack} "
        f'| jq -j \'.["{dr_site}"]["{name}"]\' '
        f"| pulumi config set{flag} {key(name)} -s {dr_stack}"
    )
