"""What an Azure DR site's end of an on-premises link is made of, shared by the components that
declare it, the policy pack that checks it and the runbook that tells the operator what to do
on premises: the private path the Storage Mover agents upload through, and how their jobs are
started on the plan's intervals. Stdlib only (the contract layer).

Why a private path: the agents write to the replica accounts' Blob endpoints. Over ExpressRoute
private peering only private addresses in the DR virtual network are reachable, so without a
private endpoint per account (and on-premises DNS answering the account's name with it) the
uploads would take the internet, not the link the plan sized. Microsoft's Storage Mover
networking prerequisites (learn.microsoft.com/azure/storage-mover, 2025-10-22) describe this
set-up: private endpoints for the target storage account, reached over ExpressRoute or VPN.

Why a Logic App: a Storage Mover job definition runs when something starts it. The service's own
schedule (API 2025-12-01: Daily, Weekly or Monthly) is not in the azure-native SDK's default
API version and runs at most daily, while checkpoints are pulled every few hours. A Consumption
Logic App with a Recurrence trigger and its managed identity calls the job definition's
`startJob` action at the plan's interval, declared in the stack where the pack can read it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

# Azure's Private Link DNS zone for Blob endpoints: a private endpoint's A record lives there,
# and `<account>.blob.core.windows.net` is a CNAME to `<account>.privatelink.blob...`.
BLOB_PRIVATE_ZONE = "privatelink.blob.core.windows.net"
# The public zone on-premises DNS forwards to the resolver's inbound endpoint (Microsoft's
# guidance for on-premises clients of private endpoints: forward the public zone, not the
# privatelink one, so that the CNAME chain resolves through Azure DNS).
BLOB_PUBLIC_ZONE = "blob.core.windows.net"
# The private endpoint's sub-resource for the Blob service of a storage account.
BLOB_GROUP = "blob"
# What a DNS Private Resolver endpoint's subnet is delegated to (at least a /28).
DNS_RESOLVER_DELEGATION = "Microsoft.Network/dnsResolvers"

# The job definition action the schedule calls, the API version it calls it with (the one the
# azure-native SDK declares the job definitions with), and the audience of its token.
START_JOB_API_VERSION = "2024-07-01"
ARM_AUDIENCE = "https://management.azure.com/"
JOB_DEFINITIONS = "Microsoft.StorageMover/storageMovers/projects/jobDefinitions"
START_JOB_ACTIONS = (f"{JOB_DEFINITIONS}/read", f"{JOB_DEFINITIONS}/startJob/action")
# Recurrence frequencies a Logic App trigger takes, in seconds (the schedules gpudr declares use
# Hour: the planner's intervals are whole hours).
RECURRENCE_S = {"Second": 1, "Minute": 60, "Hour": 3600, "Day": 86400, "Week": 604800}


def start_job_path(group: str, mover: str, project: str, job: str) -> str:
    """The ARM path (after /subscriptions/<id>) of a job definition's startJob action."""
    return (
        f"/resourceGroups/{group}/providers/Microsoft.StorageMover/storageMovers/{mover}"
        f"/projects/{project}/jobDefinitions/{job}/startJob?api-version={START_JOB_API_VERSION}"
    )


def schedule_name(mover: str, job: str) -> str:
    """The Logic App that starts one job definition (a workflow name: at most 80 characters)."""
    return f"{mover}-{job}-every"[:80]


def upload_subnets(cidr: str) -> tuple[str, str, str]:
    """(private endpoints' /27, the resolver's inbound /28, the inbound endpoint's address),
    carved from the end of the DR site's range just below its GatewaySubnet (the last /26):
    the /27 before it, then the /28 before that. The inbound address is fixed (the /28's first
    usable one: Azure keeps .0-.3) so the runbook can name it before anything is deployed."""
    net = ipaddress.IPv4Network(cidr)
    if net.prefixlen > 24:
        raise ValueError(
            f"site cidr {cidr}: an ExpressRoute DR site needs room for its GatewaySubnet, "
            "private endpoints and DNS resolver at the end of its range; use a /24 or larger"
        )
    endpoints = list(net.subnets(new_prefix=27))[-3]
    inbound = list(net.subnets(new_prefix=28))[-7]
    first_usable = ipaddress.ip_address(int(inbound.network_address) + 4)
    return str(endpoints), str(inbound), str(first_usable)


def schedule_definition(uri: str, every_s: int) -> dict[str, object]:
    """The Logic App workflow definition that POSTs `uri` (a job definition's startJob) every
    `every_s` seconds with the workflow's managed identity. Whole hours: the planner's intervals
    are (`InboundTransfer.schedule_s`)."""
    if every_s < 3600 or every_s % 3600:
        raise ValueError(f"schedule every {every_s} s: not a whole number of hours; regenerate")
    return {
        "$schema": "https://schema.management.azure.com/providers/Microsoft.Logic/schemas/"
        "2016-06-01/workflowdefinition.json#",
        "contentVersion": "1.0.0.0",
        "triggers": {
            "every_interval": {
                "type": "Recurrence",
                "recurrence": {"frequency": "Hour", "interval": every_s // 3600},
            }
        },
        "actions": {
            "start_job": {
                "type": "Http",
                "inputs": {
                    "method": "POST",
                    "uri": uri,
                    "authentication": {"type": "ManagedServiceIdentity", "audience": ARM_AUDIENCE},
                },
                "runAfter": {},
            }
        },
        "outputs": {},
    }


# What gpudr reads in a schedule's trigger and its recurrence, and in its action: anything else
# (a start or end time, a schedule of hours, conditions, a run-after on failure, retries sent
# elsewhere) may stop or shift the runs in ways the interval does not show, so a definition
# carrying it is not read as a schedule at all (the pack then refuses the replica).
TRIGGER_KEYS = frozenset({"type", "recurrence"})
RECURRENCE_KEYS = frozenset({"frequency", "interval"})
ACTION_KEYS = frozenset({"type", "inputs", "runAfter"})
INPUT_KEYS = frozenset({"method", "uri", "authentication"})


def recurrence_s(definition: object) -> float | None:
    """The Recurrence trigger's interval in a workflow definition (a mapping: the policy
    pack's read-only view of one too), in seconds; None unless the definition has exactly one
    trigger, a Recurrence with only a frequency gpudr knows and a positive interval."""
    triggers = definition.get("triggers") if isinstance(definition, Mapping) else None
    if not isinstance(triggers, Mapping) or len(triggers) != 1:
        return None
    (trigger,) = triggers.values()
    if not isinstance(trigger, Mapping) or set(trigger) - TRIGGER_KEYS:
        return None
    rec = trigger.get("recurrence")
    if str(trigger.get("type", "")).lower() != "recurrence" or not isinstance(rec, Mapping):
        return None
    if set(rec) - RECURRENCE_KEYS:
        return None
    unit = RECURRENCE_S.get(str(rec.get("frequency")))
    interval = rec.get("interval", 1)
    if unit is None or isinstance(interval, bool) or not isinstance(interval, int | float):
        return None
    return float(interval) * unit if interval > 0 else None


def started_jobs(definition: object) -> list[str]:
    """The startJob URI a workflow definition POSTs with its managed identity, as its one
    action, run when the trigger fires (`runAfter` empty); else nothing: gpudr cannot tell
    what another definition starts, or when."""
    actions = definition.get("actions") if isinstance(definition, Mapping) else None
    if not isinstance(actions, Mapping) or len(actions) != 1:
        return []
    (action,) = actions.values()
    if not isinstance(action, Mapping) or set(action) - ACTION_KEYS or action.get("runAfter"):
        return []
    inputs = action.get("inputs")
    if str(action.get("type", "")).lower() != "http" or not isinstance(inputs, Mapping):
        return []
    if set(inputs) - INPUT_KEYS or str(inputs.get("method", "")).upper() != "POST":
        return []
    auth = inputs.get("authentication")
    if not isinstance(auth, Mapping) or auth.get("type") != "ManagedServiceIdentity":
        return []
    if auth.get("audience") != ARM_AUDIENCE:
        return []
    uri = inputs.get("uri")
    return [uri] if isinstance(uri, str) and "/startJob?" in uri else []
