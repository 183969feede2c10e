"""Run every site stack of a design offline and return what each registered, as plain dicts."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gpudr.app.offline.mocks import GpudrMocks
from gpudr.app.offline.mocks_aws import OFFLINE_ACCOUNT as MOCK_ACCOUNT
from gpudr.app.offline.run import StackRun, run_stack, unwrap_secret
from gpudr.build.stackconfig import stack_config_values, stack_name
from gpudr.contract.stack import (
    AZCOPY_IMAGE_KEY,
    CONFIG_NAMESPACE,
    DATASYNC_AGENT_ARNS_KEY,
    EXPRESSROUTE_PROVISIONED_KEY,
    ONPREM_S3_ACCESS_KEY,
    ONPREM_S3_SECRET_KEY,
    STORAGE_MOVER_AGENTS_KEY,
)
from gpudr.contract.stack import key as config_key
from gpudr.core.design import Design
from gpudr.core.enums import Mechanism, StorageKind
from gpudr.core.spec import OnPremSite

# What the operator sets on a DR stack reading an S3-compatible store on premises, offline.
OFFLINE_S3_KEY = {
    config_key(ONPREM_S3_ACCESS_KEY): "OFFLINEACCESSKEY",
    config_key(ONPREM_S3_SECRET_KEY): "offline-not-a-real-secret",
}


# Where the offline AzCopy image is "pushed": a registry name that resolves nowhere.
OFFLINE_REGISTRY = "gpudr-offline.azurecr.io"


class ProgramError(RuntimeError):
    """The Pulumi program failed for a stack; the message names the stack."""


def credential_config(outputs: Mapping[str, Any], dr_site: str) -> tuple[dict[str, str], list[str]]:
    """What the operator copies from a primary's `transfer_credentials` output into the DR
    stack `dr_site`: (`{"gpudr:<key>": value}`, the keys set with `--secret`).

    Generic over the keys: whatever the primary exported for this DR site. A value is secret if
    it, or anything holding it, was exported as a secret (Pulumi marks a whole output secret as
    soon as one value in it is), so it is never passed as plain config."""
    exported, all_secret = unwrap_secret(outputs.get("transfer_credentials") or {})
    site_values, site_secret = unwrap_secret((exported or {}).get(dr_site) or {})
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, raw in site_values.items():
        value, secret = unwrap_secret(raw)
        full = f"{CONFIG_NAMESPACE}:{key}"
        config[full] = str(value)
        if secret or site_secret or all_secret:
            secret_keys.append(full)
    return config, secret_keys


def pushed_image(design: Design, dr_site: str) -> dict[str, str]:
    """The image an operator pushes for an Azure DR site's AzCopy jobs (docker/azcopy) and sets
    by digest (`gpudr:azcopy_image`): an offline registry, and a digest derived from the plan
    and the site, so that every run registers the same. Nothing is pushed."""
    digest = hashlib.sha256(f"gpudr-offline/{design.plan.name}/{dr_site}".encode()).hexdigest()
    return {AZCOPY_IMAGE_KEY: f"{OFFLINE_REGISTRY}/gpudr-azcopy@sha256:{digest}"}


def activated_agents(onprem: OnPremSite, region: str) -> dict[str, Any]:
    """The config an operator sets on a DR stack once the on-premises agents are activated
    (`gpudr:datasync_agent_arns`): ARNs in the offline account, derived from the agent's name
    so that every run registers the same ones. Nothing is activated; the runbook's checklist
    says how."""
    arns = {
        a.name: f"arn:aws:datasync:{region}:{MOCK_ACCOUNT}:agent/agent-"
        + hashlib.sha256(a.name.encode()).hexdigest()[:17]
        for a in onprem.agents
    }
    return {DATASYNC_AGENT_ARNS_KEY: arns}


def registered_agents(onprem: OnPremSite) -> dict[str, Any]:
    """The config an operator sets on an Azure DR stack once the Storage Mover agents are
    registered on premises and the provider has provisioned the ExpressRoute circuit: agent
    names and Arc identities derived from each agent's name, so that every run registers the
    same ones. Nothing is registered; the runbook's checklist says how."""
    agents = {
        a.name: {
            "name": f"{onprem.name}-{a.name}",
            "principal_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"gpudr-offline/{a.name}")),
        }
        for a in onprem.agents
    }
    return {STORAGE_MOVER_AGENTS_KEY: agents, EXPRESSROUTE_PROVISIONED_KEY: True}


def run_design(
    design: Design,
    sites: Iterable[str] | None = None,
    progress: Callable[[str], None] | None = None,
    on_stack: Callable[[dict[str, Any]], None] | None = None,
    garbage_limit: int | None = None,
) -> list[dict[str, Any]]:
    """Run the wanted sites' stacks, as a user deploys them: primaries first, then each DR stack
    with what its primary exported for it (`transfer_credentials`) in its own config, secrets as
    secret config. A DR stack on another cloud than its primary cannot sign in to pull without
    it, so when only that DR stack is wanted its primary runs too, and is not listed.

    `on_stack` is given each wanted stack's record as soon as it has run (the policy pack can
    judge the primary while the DR stack runs). `garbage_limit`: as `run_stack` takes it."""
    plan = design.plan
    order = list(plan.sites)
    wanted = set(sites) if sites is not None else set(order)
    needed = set(wanted)
    for name in wanted:
        site = plan.sites[name]
        primary = plan.sites.get(site.protects or "")
        if site.role == "dr" and primary is not None and primary.cloud != site.cloud:
            needed.add(primary.name)
    # Primaries before DR stacks; within each, the plan's order.
    ordered = sorted(needed, key=lambda n: (plan.sites[n].role != "primary", order.index(n)))
    exported: dict[str, Mapping[str, Any]] = {}  # primary site -> its stack outputs
    records: dict[str, dict[str, Any]] = {}
    for name in ordered:
        site = plan.sites[name]
        stack = stack_name(plan, site)
        if progress:
            progress(f"running the program for stack {stack} under mocks")
        config = stack_config_values(design, site)
        secret_keys: list[str] = []
        if site.role == "dr" and site.protects in exported:
            copied, secret_keys = credential_config(exported[site.protects], site.name)
            config.update(copied)
        if any(f.mechanism == Mechanism.AZCOPY for f in design.flows if f.dr == site.name):
            config.update(pushed_image(design, site.name))
        if site.protects in plan.onprem:
            onprem = plan.onprem[site.protects]
            if site.cloud == "azure":
                config.update(registered_agents(onprem))
            else:
                config.update(activated_agents(onprem, site.region))
            if onprem.storage.kind == StorageKind.S3_COMPATIBLE:
                # The read-only key the operator creates on the store: an offline stand-in.
                config.update(OFFLINE_S3_KEY)
                secret_keys.append(config_key(ONPREM_S3_SECRET_KEY))
        try:
            run = run_stack(
                stack,
                config,
                GpudrMocks(default_region=site.region),
                secret_keys=secret_keys,
                garbage_limit=garbage_limit,
            )
        except Exception as exc:  # the program's own error, reported with its stack
            raise ProgramError(f"stack {stack}: {type(exc).__name__}: {exc}") from exc
        if site.role == "primary":
            exported[name] = run.outputs
        records[name] = _stack_record(design, name, run, config)
        if on_stack is not None and name in wanted:
            on_stack(records[name])
    return [records[name] for name in order if name in wanted]


def _stack_record(
    design: Design, name: str, run: StackRun, config: Mapping[str, Any]
) -> dict[str, Any]:
    plan = design.plan
    site = plan.sites[name]
    return {
        "name": stack_name(plan, site),
        "site": site.name,
        "cloud": site.cloud,
        "region": site.region,
        "role": site.role,
        "mode": config.get("gpudr:mode", "n/a"),
        "resources": [
            r.record()
            # Registration order depends on the event loop; URN order is stable.
            for r in sorted(run.registrations, key=lambda r: r.urn)
        ],
    }


__all__ = ["ProgramError", "credential_config", "run_design"]
