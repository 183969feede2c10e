"""`gpudr drill --dry-run`: the drill stack's program run offline under the mocks (no CLI, no
credentials), and what it would create and run, as text.

The program runs in the capacity phase: the stack at its largest, every pool at its test size
(the infrastructure phase declares the same resources with the pools at 0).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.drill import DrillSetup
from gpudr.contract.tags import TAG_DRILL, TAG_EXPIRES
from gpudr.core.enums import Cloud
from gpudr.core.units import fmt_duration, fmt_size
from gpudr.docs.drillreport import rate, usd


def run(setup: DrillSetup) -> StackRun:
    return run_stack(
        setup.stack, setup.config("capacity"), GpudrMocks(default_region=setup.site.region)
    )


def _policy_actions(policy: Any) -> str:
    doc = json.loads(policy) if isinstance(policy, str) else policy or {}
    actions: list[str] = []
    for st in doc.get("Statement", []):
        found = st.get("Action", [])
        actions += [found] if isinstance(found, str) else list(found)
    return "allows " + ", ".join(actions)


def _scaling(lo: Any, hi: Any, now: Any = None) -> str:
    def n(x: Any) -> str:
        return "-" if x is None else str(int(x))

    return f"nodes {n(lo)}..{n(hi)}" + ("" if now is None else f" (desired {n(now)})")


def _trusts(inputs: dict[str, Any]) -> str:
    """Who may assume a role, when its trust narrows the principal by `aws:PrincipalArn`."""
    policy = inputs.get("assumeRolePolicy")
    doc = json.loads(policy) if isinstance(policy, str) else policy or {}
    arns = [
        arn
        for st in doc.get("Statement", [])
        for arn in (st.get("Condition") or {}).get("ArnLike", {}).get("aws:PrincipalArn", [])
    ]
    return f", assumable by {' or '.join(arns)} only" if arns else ""


def _routes(inputs: dict[str, Any]) -> str:
    out = []
    for r in inputs.get("routes") or []:
        via = next((k for k in ("natGatewayId", "gatewayId", "transitGatewayId") if r.get(k)), "?")
        out.append(f"{r.get('cidrBlock')} via {via.removesuffix('Id')}")
    return "routes " + ", ".join(out) if out else "no routes"


# type token -> what to say about it, from its registered inputs.
_SETTINGS: dict[str, Callable[[dict[str, Any]], str]] = {
    "aws:ec2/vpc:Vpc": lambda i: f"cidr {i.get('cidrBlock')}",
    "aws:ec2/subnet:Subnet": lambda i: f"{i.get('cidrBlock')} in {i.get('availabilityZone')}",
    "aws:ec2/routeTable:RouteTable": _routes,
    "aws:eks/cluster:Cluster": lambda i: (
        f"name {i.get('name')}, k8s {i.get('version')}, public API "
        f"{'yes' if (i.get('vpcConfig') or {}).get('endpointPublicAccess') else 'no'}"
    ),
    "aws:eks/nodeGroup:NodeGroup": lambda i: (
        f"{', '.join(i.get('instanceTypes') or [])}, "
        + _scaling(
            (i.get("scalingConfig") or {}).get("minSize"),
            (i.get("scalingConfig") or {}).get("maxSize"),
            (i.get("scalingConfig") or {}).get("desiredSize"),
        )
    ),
    "aws:iam/role:Role": lambda i: f"name {i.get('name') or '(generated)'}{_trusts(i)}",
    "aws:iam/rolePolicy:RolePolicy": lambda i: _policy_actions(i.get("policy")),
    "aws:ec2/vpcEndpoint:VpcEndpoint": lambda i: f"{i.get('vpcEndpointType')} to S3 in-region",
    "gcp:compute/network:Network": lambda i: f"name {i.get('name')}",
    "gcp:compute/subnetwork:Subnetwork": lambda i: f"{i.get('ipCidrRange')}",
    "gcp:compute/router:Router": lambda i: f"name {i.get('name')} (for Cloud NAT only)",
    "gcp:container/cluster:Cluster": lambda i: f"name {i.get('name')}, private nodes",
    "gcp:container/nodePool:NodePool": lambda i: (
        f"{(i.get('nodeConfig') or {}).get('machineType')}, "
        + _scaling(
            (i.get("autoscaling") or {}).get("totalMinNodeCount"),
            (i.get("autoscaling") or {}).get("totalMaxNodeCount"),
        )
    ),
    "gcp:serviceaccount/account:Account": lambda i: f"id {i.get('accountId')}",
    "gcp:storage/bucketIAMMember:BucketIAMMember": lambda i: (
        f"{i.get('role')} on {i.get('bucket')}"
    ),
    "gcp:serviceaccount/iAMMember:IAMMember": lambda i: f"{i.get('role')} for {i.get('member')}",
    "azure-native:resources:ResourceGroup": lambda i: f"name {i.get('resourceGroupName')}",
    "azure-native:network:VirtualNetwork": lambda i: (
        f"name {i.get('virtualNetworkName')}, "
        f"{', '.join((i.get('addressSpace') or {}).get('addressPrefixes') or [])}"
    ),
    "azure-native:containerservice:ManagedCluster": lambda i: f"name {i.get('resourceName')}",
    "azure-native:containerservice:AgentPool": lambda i: (
        f"{i.get('vmSize')}, " + _scaling(i.get("minCount"), i.get("maxCount"), i.get("count"))
    ),
    "azure-native:managedidentity:UserAssignedIdentity": lambda i: f"name {i.get('resourceName')}",
    "azure-native:authorization:RoleAssignment": lambda i: (
        f"role {str(i.get('roleDefinitionId')).rsplit('/', 1)[-1]} on "
        f"{str(i.get('scope')).rsplit('/', 1)[-1]}"
    ),
}


def settings(r: Registration) -> str:
    describe = _SETTINGS.get(r.type)
    return describe(r.inputs) if describe else ""


def render(setup: DrillSetup, result: StackRun) -> str:
    """What the drill of `setup` would create and do, for a terminal."""
    site = setup.site
    tags = setup.stack_tags()
    lines = [
        f"Drill of {site.site} ({site.cloud} {site.region}), plan {setup.plan}: stack "
        f"{setup.stack}, TTL {fmt_duration(setup.drill.ttl_s)} (expires "
        f"{setup.drill.expires_at})",
        "Dry run: the drill program ran offline under mocks; nothing was created.",
        f"Every taggable resource carries {TAG_DRILL}={tags[TAG_DRILL]} and "
        f"{TAG_EXPIRES}={tags[TAG_EXPIRES]}; so does the stack (stack tags).",
        *_reader(setup),
        "",
        *_resources(result),
        "",
        *_steps(setup),
        *_not_run(setup),
        "",
        *_cost(setup),
    ]
    return "\n".join(lines) + "\n"


def _reader(setup: DrillSetup) -> list[str]:
    """Who may act as the reader: the operator, named or (in a real drill) found."""
    cloud, operator = setup.site.cloud, setup.drill.operator
    if cloud not in (Cloud.AWS, Cloud.GCP):
        return []
    if operator:
        return [f"Reader: only {operator} may act as it."]
    found = "STS GetCallerIdentity" if cloud == Cloud.AWS else "gcloud's account"
    what = "no reader role is declared" if cloud == Cloud.AWS else "nobody may act as the reader"
    return [
        f"Reader: no operator named, so {what}; a real drill names the caller ({found}), or "
        "pass --operator. With none, the checks read the replicas with your own credentials."
    ]


def _resources(result: StackRun) -> list[str]:
    """Every resource the program registered, by type and name, with its settings."""
    lines = [f"Resources it would create ({len(result.resources)}, pools at their test size):"]
    rows = sorted(result.resources, key=lambda r: (r.type, r.name))
    width = max((len(r.type) for r in rows), default=0)
    for r in rows:
        text = settings(r)
        lines.append(f"  {r.type.ljust(width)}  {r.name}" + (f"  [{text}]" if text else ""))
    return lines


def _steps(setup: DrillSetup) -> list[str]:
    """The drill's steps, numbered, from creating the stack to removing it."""
    lines = ["Steps, in order, with the plan's targets:"]
    n = 1
    lines.append(
        f"  {n}. create stack {setup.stack}, config: the {setup.site.site} stack's, gpudr:mode "
        "drill, gpudr:drill; stack tags as above"
    )
    for s in setup.stages:
        n += 1
        step = f" (runbook step {s.runbook_step})" if s.runbook_step else ""
        if not s.runs:
            lines.append(f"  {n}. {s.key}: skipped, {s.basis}")
            continue
        target = f"target {fmt_duration(s.target_s)}" if s.target_s is not None else "per class"
        lines.append(f"  {n}. {s.key}{step}: {s.title}; {target}")
        lines += [f"       {detail}" for detail in _stage_details(setup, s.key)]
    lines.append(f"  {n + 1}. destroy the stack: always (success, failure, error, Ctrl-C)")
    lines.append(f"  {n + 2}. remove the stack, once destroyed")
    return lines


def _stage_details(setup: DrillSetup, key: str) -> list[str]:
    """What a stage checks, where the title does not say it all."""
    if key == "checkpoint":
        return [
            f"re-hash up to {fmt_size(setup.verify_b)} of the latest checkpoint against the "
            "checksums recorded at upload"
        ]
    if key == "capacity":
        return ["; ".join(f"{p.pool} {p.nodes} x {p.instance_type}" for p in setup.pools)]
    if key == "data-age":
        return [
            f"{t.data_class}: "
            + (
                f"RPO {fmt_duration(t.rpo_s)}, plan's estimate {fmt_duration(t.estimated_rpo_s)}"
                if t.judged
                else "reported, not judged"
            )
            for t in setup.data
        ]
    return []


def _not_run(setup: DrillSetup) -> list[str]:
    """The runbook's steps a drill leaves out."""
    if not setup.not_run:
        return []
    lines = ["", "Not run by a drill (they need your job manifests, health URLs or DNS):"]
    for s in setup.not_run:
        lines.append(
            f"  runbook step {s.runbook_step}: {s.title} (plan: {fmt_duration(s.target_s)})"
        )
    return lines


def _cost(setup: DrillSetup) -> list[str]:
    """The most the drill can cost, line by line."""
    cost = setup.cost
    lines = [
        f"Estimated cost: at most {usd(cost.ttl_usd)} ({usd(cost.hourly_usd)}/h for the "
        f"{fmt_duration(cost.hours * 3600)} TTL, at list price):",
    ]
    for x in cost.lines:
        lines.append(f"  {x.item}: {x.quantity:g} x {rate(x.unit_usd)}/h")
    for item in cost.unpriced:
        lines.append(f"  not priced: {item}")
    return lines
