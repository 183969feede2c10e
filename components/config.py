"""The stack's configuration, read once from `pulumi.Config()` and validated before any resource.

Keys (documented in Pulumi.yaml):
- `gpudr:site`  the site's whole configuration, generated from the plan by `gpudr generate`
- `gpudr:mode`  `standby` (default) or `failover`; only DR stacks read it. `drill` is set only by
  `gpudr drill` on a disposable drill stack (`drill-<site>-<timestamp>`) with `gpudr:site` from a
  DR site, and then `gpudr:drill` (gpudr.drill.DrillConfig) says what the drill declares; a
  stack named like a drill's refuses every other mode
- `gpudr:lock_weights`  Azure: lock the weights accounts' immutability (irreversible)
- `gpudr:gcs_hmac_access_id`, `gpudr:gcs_hmac_secret` (secret)  AWS DR stacks pulling from GCS
  with DataSync: the HMAC key the primary's stack created (output `transfer_credentials`)
- `gpudr:azure_sts_client_id`, `gpudr:azure_tenant_id`  GCP DR stacks pulling from Azure Blob
  with Storage Transfer Service: the federated identity the primary's stack created (output
  `azure_sts_readers`)
- `gpudr:datasync_agent_arns`  AWS DR stacks pulling from on premises: {agent name: ARN} of the
  DataSync agents the operator activated (docs/onprem.md)
- `gpudr:storage_mover_agents`  Azure DR stacks pulling from on premises: {agent name: {name,
  principal_id}} of the Storage Mover agents the operator registered; and
  `gpudr:expressroute_provisioned` (true once the provider has provisioned the circuit)
- `gpudr:cross_cloud_interconnect_provisioned`  a primary owning a Cross-Cloud Interconnect: true
  once Google reports its connections PROVISIONED and AWS its LAGs available
- `gpudr:onprem_s3_access_key`, `gpudr:onprem_s3_secret_key` (secret)  the same, from an
  S3-compatible store: the read-only key the operator created on it
- `gpudr:azcopy_identity_id`, `..._client_id`, `..._principal_id`, `..._tenant_id`  Azure DR
  stacks copying from S3 with AzCopy: the identity the AWS primary's stack created (output
  `transfer_credentials`); `gpudr:azcopy_image` the jobs' image, by digest
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import pulumi

from gpudr.contract import stack as stack_keys
from gpudr.contract.drill import MODE as DRILL_MODE
from gpudr.contract.drill import (
    DrillConfig,
    DrillNameError,
    check_not_future,
    is_drill_stack,
    looks_like_drill_stack,
    operator_cloud,
)
from gpudr.contract.site import SiteConfig
from gpudr.contract.stack import MODES
from gpudr.core.enums import Cloud


class StackConfigError(ValueError):
    """The stack config is missing or malformed; the message says which key and what to run."""


@dataclass(frozen=True)
class TransferCredentials:
    """What a DR stack's scheduled pulls sign in with, copied from the primary's outputs into
    this stack's own config (never read from the primary's state, which may be gone).

    Absent values leave the pulls undeclared with a warning naming the commands to run: the
    primary's stack can only create them once the DR stack's link anchors exist, so on a first
    deployment the DR stack goes first, then the primary, then the DR stack again."""

    gcs_hmac_access_id: str | None = None
    gcs_hmac_secret: pulumi.Output[str] | None = None  # a secret Output, never a plain str
    azure_client_id: str | None = None
    azure_tenant_id: str | None = None
    # From on premises: {agent name: ARN}, set by the operator as each agent is activated,
    # and an S3-compatible store's read-only key (the secret a secret Output).
    datasync_agent_arns: dict[str, str] = field(default_factory=dict)
    onprem_s3_access_key: str | None = None
    onprem_s3_secret_key: pulumi.Output[str] | None = None
    # Into Azure: the registered Storage Mover agents, and whether the circuit is provisioned.
    storage_mover_agents: dict[str, dict[str, str]] = field(default_factory=dict)
    expressroute_provisioned: bool = False
    # A primary owning a Cross-Cloud Interconnect: whether Google and AWS provisioned its ports.
    cci_provisioned: bool = False
    # Into Azure from S3 (AzCopy jobs): the identity the AWS primary's stack created, by
    # config key (gpudr:azcopy_identity_id, ..._client_id, ..._principal_id, ..._tenant_id),
    # and the job image by digest (gpudr:azcopy_image, checked on load).
    azcopy_identity: dict[str, str] = field(default_factory=dict)
    azcopy_image: str | None = None


@dataclass(frozen=True)
class StackConfig:
    site: SiteConfig
    mode: str
    lock_weights: bool = False  # Azure: lock the weights accounts' immutability (irreversible)
    credentials: TransferCredentials = field(default_factory=TransferCredentials)
    drill: DrillConfig | None = None  # set only in drill mode

    @property
    def failover(self) -> bool:
        return self.site.role == "dr" and self.mode == "failover"


def load() -> StackConfig:
    config = pulumi.Config(stack_keys.CONFIG_NAMESPACE)
    raw = config.get_object(stack_keys.SITE)
    if not isinstance(raw, dict):
        raise StackConfigError(
            "gpudr:site is not set for this stack; run `gpudr generate PLAN.yaml` and select a "
            "stack it wrote under stacks/"
        )
    try:
        site = SiteConfig.from_dict(raw)
    except (KeyError, TypeError) as exc:
        raise StackConfigError(
            f"gpudr:site is malformed ({exc}); regenerate it with `gpudr generate PLAN.yaml`"
        ) from exc
    if site.cloud not in ("aws", "gcp", "azure"):
        raise StackConfigError(
            f'gpudr:site cloud "{site.cloud}" is not one of aws, gcp, azure; regenerate the stack'
        )
    mode = config.get(stack_keys.MODE) or stack_keys.DEFAULT_MODE.value
    if mode not in MODES:
        raise StackConfigError(f'gpudr:mode "{mode}" is not allowed; use one of {", ".join(MODES)}')
    if mode == "failover" and site.role != "dr":
        raise StackConfigError(
            "gpudr:mode failover is set on a primary stack; the switch belongs on the DR stack"
        )
    _drill_stack_is_a_drill(mode)
    drill = _drill(config, site, mode) if mode == DRILL_MODE else None
    lock = config.get_bool(stack_keys.LOCK_WEIGHTS) or False
    access_id = config.get(stack_keys.GCS_HMAC_ACCESS_ID)
    secret = stack_keys.GCS_HMAC_SECRET
    if config.get(secret) is not None and not _is_secret(config, secret):
        raise StackConfigError(
            "gpudr:gcs_hmac_secret is stored in plain text; set it again with "
            "`pulumi config set --secret gpudr:gcs_hmac_secret ...`"
        )
    for name, is_secret in stack_keys.ONPREM_S3_CREDENTIALS:
        if is_secret and config.get(name) is not None and not _is_secret(config, name):
            raise StackConfigError(
                f"gpudr:{name} is stored in plain text; set it again with "
                f"`pulumi config set --secret gpudr:{name} ...`"
            )
    credentials = TransferCredentials(
        onprem_s3_access_key=config.get(stack_keys.ONPREM_S3_ACCESS_KEY),
        onprem_s3_secret_key=config.get_secret(stack_keys.ONPREM_S3_SECRET_KEY),
        gcs_hmac_access_id=access_id,
        gcs_hmac_secret=config.get_secret(secret),
        azure_client_id=config.get(stack_keys.AZURE_STS_CLIENT_ID),
        azure_tenant_id=config.get(stack_keys.AZURE_TENANT_ID),
        datasync_agent_arns=_agent_arns(config),
        storage_mover_agents=_storage_mover_agents(config),
        expressroute_provisioned=config.get_bool(stack_keys.EXPRESSROUTE_PROVISIONED) or False,
        cci_provisioned=config.get_bool(stack_keys.CCI_PROVISIONED) or False,
        azcopy_identity={
            name: value
            for name, _ in stack_keys.AZCOPY_CREDENTIALS
            if (value := config.get(name)) is not None
        },
        azcopy_image=_azcopy_image(config),
    )
    return StackConfig(
        site=site, mode=mode, lock_weights=lock, credentials=credentials, drill=drill
    )


def _azcopy_image(config: pulumi.Config) -> str | None:
    """`gpudr:azcopy_image`: the AzCopy jobs' image, by digest only."""
    image = config.get(stack_keys.AZCOPY_IMAGE)
    if image is not None and (problem := stack_keys.image_error(image)):
        raise StackConfigError(problem)
    return image


def _agent_arns(config: pulumi.Config) -> dict[str, str]:
    """`gpudr:datasync_agent_arns`: a map of agent name to ARN (each ARN is checked where it is
    used, components/aws/onprem.py)."""
    raw = config.get_object(stack_keys.DATASYNC_AGENT_ARNS)
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise StackConfigError(
            f"{stack_keys.DATASYNC_AGENT_ARNS_KEY} is not a map of agent name to ARN; set each "
            f"with `pulumi config set --path '{stack_keys.DATASYNC_AGENT_ARNS_KEY}.<agent>' <arn>`"
        )
    return dict(raw)


def _storage_mover_agents(config: pulumi.Config) -> dict[str, dict[str, str]]:
    """`gpudr:storage_mover_agents`: agent name -> {name, principal_id} (each value is checked
    where it is used, components/azure/onprem.py)."""
    raw = config.get_object(stack_keys.STORAGE_MOVER_AGENTS)
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(
        isinstance(k, str)
        and isinstance(v, dict)
        and all(isinstance(x, str) and isinstance(y, str) for x, y in v.items())
        for k, v in raw.items()
    ):
        key = stack_keys.STORAGE_MOVER_AGENTS_KEY
        raise StackConfigError(
            f"{key} is not a map of agent name to {{name, principal_id}}; set each with "
            f"`pulumi config set --path '{key}.<agent>.name' <registered agent name>`"
        )
    return {k: dict(v) for k, v in raw.items()}


def _drill_stack_is_a_drill(mode: str) -> None:
    """A stack named like a drill's runs in drill mode only: in standby or failover mode it
    would declare the DR site's buckets by name, and destroying the drill would then reach for
    the production data."""
    stack = pulumi.get_stack()
    if mode != DRILL_MODE and looks_like_drill_stack(stack):
        raise StackConfigError(
            f"gpudr:mode {mode} is set on drill stack {stack}, which runs in drill mode only: "
            f"run `pulumi config set gpudr:mode drill -s {stack}`, or deploy the site from its "
            "own stack (`gpudr generate`)"
        )


def _drill(config: pulumi.Config, site: SiteConfig, mode: str) -> DrillConfig:
    """Drill mode only on a drill stack configured from a DR site: on the real DR stack it would
    replace the site (its protected data would stop the update half-way)."""
    stack = pulumi.get_stack()
    if not is_drill_stack(stack):
        raise StackConfigError(
            f"gpudr:mode {mode} is set on stack {stack}; drills run on their own disposable "
            "stacks (`gpudr drill PLAN.yaml --site <dr site>`): set gpudr:mode back to standby"
        )
    try:
        check_not_future(stack, datetime.now(UTC))
    except DrillNameError as exc:
        raise StackConfigError(f"{exc}; start drills with `gpudr drill`") from exc
    if site.role != "dr":
        raise StackConfigError(
            f"gpudr:mode {mode} needs gpudr:site of a DR site; {site.site} is a {site.role} "
            "site: drill a DR site (`gpudr drill PLAN.yaml --site <dr site>`)"
        )
    raw = config.get_object(stack_keys.DRILL)
    if not isinstance(raw, dict):
        raise StackConfigError(
            "gpudr:drill is not set on this drill stack; start drills with `gpudr drill`"
        )
    try:
        drill = DrillConfig.from_dict(raw)
    except (ValueError, TypeError) as exc:
        raise StackConfigError(
            f"gpudr:drill is malformed ({exc}); start drills with `gpudr drill`"
        ) from exc
    known = site.cloud in (Cloud.AWS, Cloud.GCP)
    if drill.operator and known and operator_cloud(drill.operator) != site.cloud:
        raise StackConfigError(
            f"gpudr:drill operator {drill.operator} is not a {site.cloud} principal; start "
            "drills with `gpudr drill` (or name yours with --operator)"
        )
    if drill.stack != stack:
        raise StackConfigError(
            f"gpudr:drill names stack {drill.stack}, not this stack ({stack}); start drills "
            "with `gpudr drill`"
        )
    return drill


def _is_secret(config: pulumi.Config, key: str) -> bool:
    """Whether the CLI passed `key` as a secret (`pulumi config set --secret`)."""
    from pulumi.runtime.config import is_config_secret

    return is_config_secret(config.full_key(key))
