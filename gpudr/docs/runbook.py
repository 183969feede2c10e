"""Runbooks: one per site pair (primary -> DR), what an on-call engineer follows to fail over and
back, rendered to markdown with jinja2 (`templates/runbook.md.j2`).

Which steps a runbook has, in which order, after which others, and how long each is expected to
take is the pair's step graph (`gpudr.core.stepgraph`), which a drill reads too. This module
gives each step its commands and checks, from the names the stack config uses
(`gpudr.build.stackconfig`) and the clouds' command lines (`gpudr.docs.cloudcli`); every
sentence of a step is in its kind's template, `templates/runbook/<kind>.md.j2`, whose macros
each word one part (the why, a check's expectation, what to do if it fails). A step the RTO
model does not time says so; no duration is made up. What gpudr cannot know (the state
backend's URL, the training job's manifest, the service's health URL) is a shell variable the
operator sets once, in the first step.

The same design renders byte-identical files: no timestamps, every collection in plan or sorted
order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2

from gpudr.build.irreversible import Irreversible, irreversible_settings
from gpudr.build.stackconfig import (
    CredentialKey,
    build_site_configs,
    stack_name,
    transfer_credential_keys,
)
from gpudr.contract import naming
from gpudr.contract.naming import (
    GPU_TAINT,
    POOL_LABEL,
    agent_pool_name,
    cci_gateway_name,
    cci_name,
    datasync_schedule,
    datasync_task_name,
    datasync_task_prefix,
)
from gpudr.contract.site import BucketConfig, ClusterConfig, InboundTransfer, PoolConfig, SiteConfig
from gpudr.contract.stack import CCI_PROVISIONED_KEY, MODE_KEY
from gpudr.core.design import DataFlow, Design, Pool, reservation
from gpudr.core.enums import (
    DUAL_REGION,
    PULLED,
    PUSHED,
    Cloud,
    LinkKind,
    Mechanism,
    Mode,
    Pattern,
    PoolKind,
)
from gpudr.core.spec import Plan, Site
from gpudr.core.stepgraph import PairFacts, StepGraph, StepNode, pair_facts, step_graph
from gpudr.core.units import fmt_duration, fmt_size
from gpudr.docs import cloudcli as cli
from gpudr.docs.cloudcli import Quoted, shell
from gpudr.docs.templating import environment

TEMPLATE = "runbook.md.j2"
STEP_TEMPLATES = "runbook"  # templates/runbook/<kind>.md.j2: the words of each kind of step
RUNBOOKS_DIR = "runbooks"
POLICY_PACK = "policies"
NOT_TIMED = "not timed by the plan"
STATUS_PAGES = {
    "aws": "https://health.aws.amazon.com/health/status",
    "gcp": "https://status.cloud.google.com",
    "azure": "https://azure.status.microsoft/en-us/status",
}
CKPT = "CKPT"  # the shell variable holding the checkpoint being restored
STAGING = "STAGING"  # the local directory a copy between clouds goes through
DISASTER_AT = "DISASTER_AT"
BACKEND_URL = "PULUMI_BACKEND_URL"
SUBSCRIPTION = "AZURE_SUBSCRIPTION_ID"


# --- the model ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One verification: a command and what its output must show."""

    expect: str
    command: str


@dataclass(frozen=True)
class Step:
    number: int
    key: str  # stable id, e.g. "capacity", "data:checkpoints", "training:train"
    phase: str  # prepare | failover | failback
    title: str
    why: str
    commands: tuple[str, ...]  # exact shell commands, in order
    expected_s: float | None  # from the design; None: the RTO model does not time this step
    duration: str  # expected_s for people, or NOT_TIMED
    basis: str  # where expected_s comes from
    checks: tuple[Check, ...]
    on_failure: tuple[str, ...]
    after: tuple[int, ...] = ()  # steps that must be done first
    parallel_with: tuple[int, ...] = ()  # steps that may run at the same time
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SiteRef:
    name: str
    cloud: str
    region: str
    role: str
    stack: str
    project: str | None = None
    resource_group: str | None = None
    account: str | None = None


@dataclass(frozen=True)
class Target:
    """One row of the pair's verdict table (gpudr.design.Workload)."""

    workload: str
    kind: str  # data | cluster | service
    how: str  # the mechanism or the pattern
    rpo: str
    rto: str
    estimated_rpo: str
    estimated_rto: str
    meets: bool
    rpo_s: float | None
    rto_s: float | None
    estimated_rpo_s: float | None
    estimated_rto_s: float | None
    # False: the RTO holds only if on-demand GPU capacity is found (Workload.guaranteed)
    guaranteed: bool = True


@dataclass(frozen=True)
class PoolSize:
    """A DR GPU pool's node counts: full size in failover, its pattern's size in standby."""

    pool: str
    cluster: str
    kind: str  # training | service
    pattern: str
    instance_type: str
    gpus_per_node: int
    nodes: int
    standby_nodes: int


@dataclass(frozen=True)
class LinkItem:
    """One item of a dedicated link's ordering checklist: what to do, and the command, if any."""

    text: str
    command: str = ""


@dataclass(frozen=True)
class Runbook:
    plan: str
    path: str  # runbooks/<plan>-<primary>-to-<dr>.md
    primary: SiteRef
    dr: SiteRef
    targets: tuple[Target, ...]
    pools: tuple[PoolSize, ...]
    expected_recovery_s: float | None  # the slowest workload's estimated RTO
    expected_recovery: str
    slowest: str
    all_met: bool
    steps: tuple[Step, ...]
    variables: tuple[tuple[str, str], ...] = field(default=())  # (name, what to set it to)
    # The slowest workload's stages as steps: (step number, seconds), summing to the estimate.
    critical_path: tuple[tuple[int, float], ...] = field(default=())
    # What the pair's stacks cannot undo once deployed (gpudr.build.irreversible).
    irreversible: tuple[Irreversible, ...] = field(default=())
    # A dedicated link ordered from two providers (Cross-Cloud Interconnect): what it is, the
    # ordering checklist, and what it means for a failover.
    link_title: str = ""
    link_items: tuple[LinkItem, ...] = field(default=())
    link_notes: tuple[str, ...] = field(default=())

    def phase(self, name: str) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.phase == name)

    def step(self, key: str) -> Step:
        return next(s for s in self.steps if s.key == key)


# --- names, as the components derive them ---------------------------------------------------------


def runbook_path(plan: Plan, primary: Site, dr: Site) -> str:
    return f"{RUNBOOKS_DIR}/{plan.name}-{primary.name}-to-{dr.name}.md"


def kube_context(site: SiteConfig, cluster: ClusterConfig) -> str:
    """The kubeconfig context the credentials commands below create."""
    if site.cloud == "gcp":
        return f"gke_{site.project}_{site.region}_{cluster.eks_name}"
    return cluster.eks_name  # aws: --alias; azure: the cluster's name


def credentials_commands(site: SiteConfig, cluster: ClusterConfig) -> tuple[str, ...]:
    name, region = cluster.eks_name, site.region
    if site.cloud == "aws":
        return (shell(cli.eks_credentials(name, region)),)
    if site.cloud == "gcp":
        private = not site.api_public_cidrs
        return (shell(cli.gke_credentials(name, region, str(site.project), internal=private)),)
    return tuple(shell(a) for a in cli.aks_credentials(str(site.resource_group), name))


def var_name(name: str) -> str:
    """A name as part of a shell or GitHub configuration variable name (upper-case letters,
    digits, underscores)."""
    return re.sub(r"[^A-Z0-9]", "_", name.upper())


def key_var(data_class: str) -> str:
    """The shell variable naming the object of a class that is being verified."""
    return f"{var_name(data_class)}_KEY"


def new_key_var(data_class: str) -> str:
    """The shell variable naming an object written at the primary after failback."""
    return f"NEW_{key_var(data_class)}"


@dataclass(frozen=True)
class PoolVars:
    """The shell variables the operator sets for one pool's workload (step "variables")."""

    prefix: str

    @property
    def manifest_dr(self) -> str:
        return f"{self.prefix}_MANIFEST_DR"

    @property
    def manifest_primary(self) -> str:
        return f"{self.prefix}_MANIFEST_PRIMARY"

    @property
    def namespace(self) -> str:
        return f"{self.prefix}_NAMESPACE"

    @property
    def selector(self) -> str:
        return f"{self.prefix}_SELECTOR"

    @property
    def hostname(self) -> str:
        return f"{self.prefix}_HOSTNAME"

    @property
    def dr_health(self) -> str:
        return f"{self.prefix}_DR_HEALTH_URL"

    @property
    def primary_health(self) -> str:
        return f"{self.prefix}_PRIMARY_HEALTH_URL"


def pool_vars(pool: str) -> PoolVars:
    return PoolVars(var_name(pool))


def export(name: str, placeholder: str) -> str:
    """Sets a variable to what the operator fills in."""
    return f"export {name}='<{placeholder}>'"


# --- commands: pulumi, kubectl, curl --------------------------------------------------------------


def pulumi_up(stack: str) -> str:
    return f"pulumi up -s {stack} --policy-pack {POLICY_PACK}"


def pulumi_preview(stack: str, *, refresh: bool = False) -> str:
    return f"pulumi preview -s {stack}{' --refresh' if refresh else ''} --policy-pack {POLICY_PACK}"


def set_mode(mode: str, stack: str) -> str:
    return f"pulumi config set {MODE_KEY} {mode} -s {stack}"


def stack_mode(stack: str) -> str:
    return f"pulumi stack output mode -s {stack}"


def ready_nodes(ctx: str, pool: str) -> str:
    return (
        f"kubectl --context {ctx} get nodes -l {POOL_LABEL}={pool} --no-headers "
        "| awk '$2 == \"Ready\"' | wc -l"
    )


def gpus_per_node(ctx: str, pool: str) -> str:
    return (
        f"kubectl --context {ctx} get nodes -l {POOL_LABEL}={pool} -o custom-columns="
        "'NAME:.metadata.name,GPUS:.status.allocatable.nvidia\\.com/gpu'"
    )


def _pods(ctx: str, v: PoolVars, verb: str = "get pods") -> str:
    return f'kubectl --context {ctx} {verb} -n "${v.namespace}" -l "${v.selector}"'


def _pod_logs(ctx: str, v: PoolVars, word: str) -> str:
    return f"{_pods(ctx, v, 'logs')} --tail=200 | grep -i {word}"


def _apply(ctx: str, manifest: str, verb: str = "apply") -> str:
    return f'kubectl --context {ctx} {verb} -f "${manifest}"'


def _http_status(url: str) -> str:
    return f"curl -sS -o /dev/null -w '%{{http_code}}\\n' \"{url}\""


def _resolve(hostname_var: str) -> str:
    return f'dig +short "${hostname_var}"'


# --- commands: storage, clusters and pools, per cloud ---------------------------------------------


def storage_url(site: SiteConfig, bucket: BucketConfig) -> str:
    return cli.storage_url(site.cloud, bucket)


def list_newest(site: SiteConfig, bucket: BucketConfig) -> str:
    """The 20 newest objects, oldest of them first."""
    if site.cloud == "aws":
        return f"{shell(cli.s3_list(bucket, site.region))} | sort | tail -n 20"
    if site.cloud == "gcp":
        return f"{shell(cli.gcs_list(bucket))} | grep -v '^TOTAL' | sort -k 2 | tail -n 20"
    newest = "sort_by(@, &properties.lastModified)[-20:].[properties.lastModified, name]"
    return shell(cli.blob_list(bucket, newest, "table"))


def describe_object(site: SiteConfig, bucket: BucketConfig, key: str) -> str:
    """The stored checksums, size and time of one object (no data read)."""
    if site.cloud == "aws":
        return shell(cli.s3_head_object(bucket.name, key, site.region, checksums=True))
    if site.cloud == "gcp":
        return shell(
            cli.gcs_describe_object(bucket, key, "yaml(crc32c_hash,md5_hash,size,update_time)")
        )
    shown = (
        "{md5:properties.contentSettings.contentMd5,size:properties.contentLength,"
        "modified:properties.lastModified}"
    )
    return shell(cli.blob_show(bucket, key, shown))


def hash_object(site: SiteConfig, bucket: BucketConfig, key: str) -> str:
    """Read one object and hash it: what a manifest's sha256 is compared with."""
    return f"{shell(cli.read_object(site.cloud, bucket, key, site.region))} | sha256sum"


def bucket_reachable(site: SiteConfig, bucket: BucketConfig) -> str:
    if site.cloud == "aws":
        return shell(cli.s3_head_bucket(bucket, site.region))
    if site.cloud == "gcp":
        return shell(cli.gcs_describe_bucket(bucket, "value(name)"))
    return shell(cli.blob_container(bucket))


def cluster_status(site: SiteConfig, cluster: ClusterConfig) -> Check:
    """The cluster's status, and what it prints for one that runs."""
    name, region = cluster.eks_name, site.region
    if site.cloud == "aws":
        argv = cli.eks_cluster_status(name, region)
    elif site.cloud == "gcp":
        argv = cli.gke_cluster_status(name, region, str(site.project))
    else:
        argv = cli.aks_cluster_status(str(site.resource_group), name)
    return Check(cli.CLUSTER_RUNNING[site.cloud], shell(argv))


def pool_size_command(site: SiteConfig, cluster: ClusterConfig, pool: PoolConfig) -> str:
    """The node pool's configured size, as the components set it (`contract.site.pool_size`)."""
    name, region = cluster.eks_name, site.region
    if site.cloud == "aws":
        return shell(cli.eks_nodegroup(name, pool.name, region, Quoted("nodegroup.scalingConfig")))
    if site.cloud == "gcp":
        bounds = "value(autoscaling.totalMinNodeCount,autoscaling.totalMaxNodeCount)"
        return shell(cli.gke_node_pool(pool.name, name, region, str(site.project), bounds))
    counts = "{count:count,minCount:minCount,maxCount:maxCount}"
    agent = agent_pool_name(pool.name)
    return shell(cli.aks_node_pool(str(site.resource_group), name, agent, counts, "table"))


def pool_trouble(site: SiteConfig, cluster: ClusterConfig, pool: PoolConfig) -> str:
    """Where the reason a pool did not reach its size is shown."""
    name, region = cluster.eks_name, site.region
    if site.cloud == "aws":
        return shell(cli.eks_nodegroup(name, pool.name, region, Quoted("nodegroup.health.issues")))
    if site.cloud == "gcp":
        return shell(cli.gke_operations(region, str(site.project)))
    agent = agent_pool_name(pool.name)
    return shell(
        cli.aks_node_pool(str(site.resource_group), name, agent, "provisioningState", "tsv")
    )


def _copy(cloud: str, source: str, target: str, regions: Sequence[str], *, keep: bool) -> str:
    """One cloud's copy of what `target` lacks, never deleting there; `keep`: never overwriting
    there either. One of the two is a bucket's URL, the other a bucket's or a local directory."""
    if cloud == "aws":
        # Back into a bucket from local disk, the sizes tell what is there (times differ).
        size_only = keep and len(regions) == 1
        return shell(cli.s3_sync(source, target, *regions, size_only=size_only))
    if cloud == "gcp":
        return shell(cli.gcs_rsync(source, target, no_clobber=keep))
    # A container's content, not the container; its URL is quoted, as always.
    into = Quoted(target) if target.startswith("https://") else target
    return shell(cli.azcopy_copy(f"{source}/*", into, overwrite=not keep))


# --- per mechanism: the scheduled pulls -----------------------------------------------------------


# Pulls whose runs are Container Apps jobs (AzCopy): paused by taking away the identity their
# runs sign in as, to AWS and to Blob alike, so no run can copy from the primary.
JOB_PULLS = (Mechanism.AZCOPY,)
# The shell variable the pause and its undoing read the identity's resource id from.
AZCOPY_IDENTITY_VAR = "AZCOPY_IDENTITY"


def pull_var(f: DataFlow) -> str:
    """The shell variable holding one class's job (Storage Transfer, AzCopy) or task
    (DataSync)."""
    job = f.mechanism in (Mechanism.STS, *JOB_PULLS)
    return f"{'JOB' if job else 'TASK'}_{var_name(f.data_class)}"


def azcopy_identity_lookup(dr: SiteConfig) -> str:
    """Sets AZCOPY_IDENTITY to the resource id of the identity the DR site's AzCopy jobs run
    as: found by its names (the primary's stack created it in the DR region, in a group of its
    own), so neither stack's state is needed."""
    group = naming.azcopy_identity_group(dr.system, dr.site)
    name = naming.azcopy_identity_name(dr.system, dr.site)
    return f"{AZCOPY_IDENTITY_VAR}=$({shell(cli.managed_identity_id(group, name))})"


def pull_lookup(dr: SiteConfig, bucket: BucketConfig, f: DataFlow, t: InboundTransfer) -> str:
    """Sets `pull_var(f)`. Storage Transfer names its jobs itself, so the job is found by the
    description gpudr writes (it names the sink); DataSync tasks and AzCopy jobs carry gpudr's
    name (the AzCopy job's is checked to exist)."""
    if f.mechanism in JOB_PULLS:
        name = naming.azcopy_job_name(dr.system, dr.site, bucket.data_class)
        argv = cli.containerapp_job(str(dr.resource_group), name, "name")
        return f"{pull_var(f)}=$({shell(argv)})"
    if f.mechanism == Mechanism.STS:
        argv = cli.sts_jobs(str(dr.project), bucket)
    else:
        prefix = datasync_task_prefix(dr.system, dr.site, bucket.data_class)
        argv = cli.datasync_tasks(dr.region, datasync_task_name(prefix, t.source_site))
    return f"{pull_var(f)}=$({shell(argv)})"


def pull_schedule(dr: SiteConfig, f: DataFlow, t: InboundTransfer, enabled: bool) -> str:
    var = f"${pull_var(f)}"
    if f.mechanism in JOB_PULLS:
        # A Container Apps job's schedule cannot be disabled: its runs lose their identity
        # instead (and the running one is stopped), so none can sign in to AWS or write Blob.
        group, identity = str(dr.resource_group), f"${AZCOPY_IDENTITY_VAR}"
        verb = "identity-assign" if enabled else "identity-remove"
        change = shell(cli.containerapp_job(group, var, verb, identity))
        if enabled:
            return change
        return f"{shell(cli.containerapp_job(group, var, 'stop'))}; {change}"
    if f.mechanism == Mechanism.STS:
        return shell(cli.sts_job_status(var, str(dr.project), enable=enabled))
    expression = datasync_schedule(t.schedule_s)
    return shell(cli.datasync_schedule(var, dr.region, expression, enable=enabled))


def pull_status(dr: SiteConfig, f: DataFlow) -> str:
    var = f"${pull_var(f)}"
    if f.mechanism in JOB_PULLS:
        return shell(cli.containerapp_job(str(dr.resource_group), var, "identity-type"))
    if f.mechanism == Mechanism.STS:
        return shell(cli.sts_job_status(var, str(dr.project)))
    return shell(cli.datasync_status(var, dr.region))


def pull_runs(dr: SiteConfig, f: DataFlow, limit: int) -> str:
    """The newest runs, newest first (Storage Transfer) or all executions (DataSync)."""
    var = f"${pull_var(f)}"
    if f.mechanism in JOB_PULLS:
        return shell(cli.containerapp_job(str(dr.resource_group), var, "executions"))
    if f.mechanism == Mechanism.STS:
        return shell(cli.sts_runs(var, limit))
    return shell(cli.datasync_runs(var, dr.region))


def pull_run_now(dr: SiteConfig, f: DataFlow) -> str:
    var = f"${pull_var(f)}"
    if f.mechanism in JOB_PULLS:
        return shell(cli.containerapp_job(str(dr.resource_group), var, "start"))
    if f.mechanism == Mechanism.STS:
        return shell(cli.sts_run(var, str(dr.project)))
    return shell(cli.datasync_run(var, dr.region))


# --- the words ------------------------------------------------------------------------------------


def _paragraphs(text: str) -> list[str]:
    """A macro's output as paragraphs: blank lines part them, a line break inside one is a
    space (so templates can wrap their lines)."""
    return [
        " ".join(line.strip() for line in block.splitlines() if line.strip())
        for block in re.split(r"\n\s*\n", text)
        if block.strip()
    ]


class Words:
    """One step kind's template (`templates/runbook/<kind>.md.j2`) with the pair's step numbers:
    in it, `step("capacity")` is "step 9"."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def _render(self, macro: str, data: dict[str, Any]) -> str:
        return str(getattr(self._module, macro)(**data))

    def text(self, macro: str, **data: Any) -> str:
        """One paragraph: a title, a why, one check's expectation."""
        found = _paragraphs(self._render(macro, data))
        if len(found) != 1:
            raise ValueError(f"macro {macro} wrote {len(found)} paragraphs, not one")
        return found[0]

    def items(self, macro: str, **data: Any) -> tuple[str, ...]:
        """A list, one item per paragraph: what to do if a step fails, its notes."""
        return tuple(_paragraphs(self._render(macro, data)))


def _words(graph: StepGraph) -> Callable[[str], Words]:
    env = environment(trim=True)
    numbers = {s.key: s.number for s in graph.steps}

    def step(key: str) -> str:
        if key not in numbers:
            raise ValueError(f"runbook text refers to a missing step {key}")
        return f"step {numbers[key]}"

    modules: dict[str, Words] = {}

    def words(kind: str) -> Words:
        if kind not in modules:
            template: jinja2.Template = env.get_template(f"{STEP_TEMPLATES}/{kind}.md.j2")
            modules[kind] = Words(template.make_module(vars={"step": step}))
        return modules[kind]

    return words


# --- building -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Body:
    """What a step says and runs, besides its place in the graph."""

    title: str
    why: str
    commands: tuple[str, ...] = ()
    checks: tuple[Check, ...] = ()
    on_failure: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Pair:
    """Everything one runbook reads, gathered once."""

    design: Design
    primary: Site
    dr: Site
    pcfg: SiteConfig
    dcfg: SiteConfig
    facts: PairFacts
    graph: StepGraph
    credentials: tuple[CredentialKey, ...]
    words: Callable[[str], Words]

    @property
    def plan(self) -> Plan:
        return self.design.plan

    @property
    def flows(self) -> tuple[DataFlow, ...]:
        return self.facts.flows

    @property
    def pools(self) -> tuple[Pool, ...]:
        return self.facts.pools

    @property
    def dr_stack(self) -> str:
        return stack_name(self.plan, self.dr)

    @property
    def primary_stack(self) -> str:
        return stack_name(self.plan, self.primary)

    def dr_bucket(self, data_class: str) -> BucketConfig:
        return next(b for b in self.dcfg.buckets if b.data_class == data_class)

    def primary_bucket(self, data_class: str) -> BucketConfig:
        found = self.find_primary_bucket(data_class)
        if found is None:
            raise KeyError(f"no {data_class} bucket at {self.primary.name}")
        return found

    def find_primary_bucket(self, data_class: str) -> BucketConfig | None:
        return next((b for b in self.pcfg.buckets if b.data_class == data_class), None)

    def flow(self, data_class: str) -> DataFlow:
        found = self.facts.flow(data_class)
        if found is None:
            raise KeyError(f"no {data_class} flow for {self.facts.name}")
        return found

    def dr_cluster(self, name: str) -> ClusterConfig:
        return next(c for c in self.dcfg.clusters if c.name == name)

    def primary_cluster(self, name: str) -> ClusterConfig:
        return next(c for c in self.pcfg.clusters if c.name == name)

    def dr_pool(self, pool: str) -> tuple[ClusterConfig, PoolConfig]:
        p = next(q for q in self.pools if q.name == pool)
        cluster = self.dr_cluster(p.cluster)
        return cluster, next(q for q in cluster.pools if q.name == pool)

    def pool(self, name: str) -> Pool:
        return next(p for p in self.pools if p.name == name)

    def has(self, key: str) -> bool:
        return self.graph.find(key) is not None

    def trainings(self) -> tuple[Pool, ...]:
        return self.facts.of_kind(PoolKind.TRAINING)


def _pair(design: Design, primary: Site, dr: Site) -> _Pair:
    configs = build_site_configs(design)
    graph = step_graph(design, primary.name, dr.name)
    return _Pair(
        design=design,
        primary=primary,
        dr=dr,
        pcfg=configs[primary.name],
        dcfg=configs[dr.name],
        facts=pair_facts(design, primary.name, dr.name),
        graph=graph,
        credentials=transfer_credential_keys(design, dr),
        words=_words(graph),
    )


def _site_ref(plan: Plan, site: Site, cfg: SiteConfig) -> SiteRef:
    return SiteRef(
        name=site.name,
        cloud=site.cloud,
        region=site.region,
        role=site.role,
        stack=stack_name(plan, site),
        project=site.project,
        resource_group=cfg.resource_group,
        account=site.account,
    )


def _targets(pair: _Pair) -> tuple[Target, ...]:
    return tuple(
        Target(
            workload=w.name,
            kind=w.kind,
            how=w.mechanism or w.pattern or "-",
            rpo=fmt_duration(w.rpo_s),
            rto=fmt_duration(w.rto_s),
            estimated_rpo=fmt_duration(w.estimated_rpo_s),
            estimated_rto=fmt_duration(w.estimated_rto_s),
            meets=w.meets,
            rpo_s=w.rpo_s,
            rto_s=w.rto_s,
            estimated_rpo_s=w.estimated_rpo_s,
            estimated_rto_s=w.estimated_rto_s,
            guaranteed=w.guaranteed,
        )
        for w in pair.design.workloads
        if w.pair == pair.facts.name
    )


def _variables(pair: _Pair) -> list[tuple[str, str]]:
    w = pair.words("variables")
    out = [(BACKEND_URL, w.text("backend", stack=pair.dr_stack, region=pair.primary.region))]
    if "azure" in (pair.dr.cloud, pair.primary.cloud):
        out.append((SUBSCRIPTION, w.text("subscription")))
    sites = {"dr": pair.dr.name, "primary": pair.primary.name}
    for p in pair.pools:
        v = pool_vars(p.name)
        named = [(v.namespace, "namespace"), (v.selector, "selector")]
        if p.kind == PoolKind.TRAINING:
            named = [
                (v.manifest_dr, "manifest_dr"),
                (v.manifest_primary, "manifest_primary"),
                *named,
            ]
        else:
            named += [(v.hostname, "hostname"), (v.dr_health, "dr_health")]
            named.append((v.primary_health, "primary_health"))
            if p.pattern != Pattern.ACTIVE_ACTIVE:
                named.append((v.manifest_dr, "manifest_dr"))
        out += [(name, w.text(what, kind=p.kind, pool=p.name, **sites)) for name, what in named]
    if pair.graph.of_kind("fb-copy") and pair.primary.cloud != pair.dr.cloud:
        out.append((STAGING, w.text("staging")))
    return out


def _login(cfg: SiteConfig, w: Words) -> tuple[tuple[str, ...], tuple[Check, ...]]:
    """Signing in to one site's cloud, and the check that it worked."""
    commands: tuple[str, ...]
    if cfg.cloud == "aws":
        commands = (f"{shell(cli.aws_login())}  # {w.text('aws_login')}",)
        check = shell(cli.aws_identity())
    elif cfg.cloud == "gcp":
        commands = tuple(shell(a) for a in cli.gcloud_login())
        check = shell(cli.gcp_project(str(cfg.project)))
    else:
        commands = tuple(shell(a) for a in cli.az_login(f"${SUBSCRIPTION}"))
        check = shell(cli.az_resource_group(str(cfg.resource_group)))
    expect = w.text("signed_in", cloud=cfg.cloud, account=cfg.account, project=cfg.project)
    return commands, (Check(expect, check),)


def _kube_access_help(cfg: SiteConfig, w: Words) -> tuple[str, ...]:
    return w.items(
        "kube_access",
        cloud=cfg.cloud,
        private=None if cfg.api_public_cidrs else cfg.cidr,
        entries=[shell(cli.eks_access_entries(c.eks_name, cfg.region)) for c in cfg.clusters],
    )


def _ready(w: Words, cfg: SiteConfig, cluster: ClusterConfig, pool: str, nodes: int) -> Check:
    return Check(
        w.text("ready", nodes=nodes, pool=pool, site=None),
        ready_nodes(kube_context(cfg, cluster), pool),
    )


def _pool_size(
    w: Words, cfg: SiteConfig, cluster: ClusterConfig, pool: PoolConfig, sizes: tuple[int, int, int]
) -> Check:
    floor, desired, top = sizes
    expect = w.text(
        "pool_size",
        cloud=cfg.cloud,
        pool=agent_pool_name(pool.name) if cfg.cloud == "azure" else pool.name,
        floor=floor,
        desired=desired,
        top=top,
    )
    return Check(expect, pool_size_command(cfg, cluster, pool))


# --- prepare --------------------------------------------------------------------------------------


def _variables_step(pair: _Pair, node: StepNode) -> Body:
    w = pair.words("variables")
    variables = _variables(pair)
    names = " ".join(n for n, _ in variables)
    unset = f'for v in {names}; do [ -n "${{!v}}" ] || echo "$v is not set"; done'
    return Body(
        title=w.text("title"),
        why=w.text("why"),
        commands=tuple(export(name, what) for name, what in variables),
        checks=(Check(w.text("all_set"), unset),),
        on_failure=w.items("on_failure"),
    )


def _cloud_login_step(pair: _Pair, node: StepNode) -> Body:
    w = pair.words("cloud-login")
    commands, checks = _login(pair.dcfg, pair.words("shared"))
    return Body(
        title=w.text("title", cloud=pair.dr.cloud),
        why=w.text("why", dr=pair.dr, primary=pair.primary),
        commands=commands,
        checks=checks,
        on_failure=w.items("on_failure"),
    )


def _pulumi_login_step(pair: _Pair, node: StepNode) -> Body:
    w, stack = pair.words("pulumi-login"), pair.dr_stack
    checks = [
        Check(
            w.text("backend", var=BACKEND_URL, region=pair.primary.region),
            "pulumi whoami --verbose",
        ),
        Check(w.text("mode"), f"pulumi config get {MODE_KEY} -s {stack}"),
    ]
    if pair.credentials:
        keys = [(c.key, c.secret) for c in pair.credentials]
        checks.append(Check(w.text("credentials", keys=keys), f"pulumi config -s {stack}"))
    return Body(
        title=w.text("title"),
        why=w.text("why", up=f"pulumi up -s {stack}"),
        commands=(f'pulumi login "${BACKEND_URL}"',),
        checks=tuple(checks),
        on_failure=w.items(
            "on_failure",
            stack=stack,
            copies=[c.command(stack) for c in pair.credentials],
        ),
        notes=w.items("notes", stack=stack),
    )


def _kubectl_step(pair: _Pair, node: StepNode) -> Body:
    w, dcfg = pair.words("kubectl"), pair.dcfg
    standing = [c for c in dcfg.clusters if c.standby_control_plane]
    return Body(
        title=w.text("title", clusters=len(standing)),
        why=w.text("why"),
        commands=tuple(cmd for c in standing for cmd in credentials_commands(dcfg, c)),
        checks=tuple(
            Check(
                w.text("nodes", cluster=c.name),
                f"kubectl --context {kube_context(dcfg, c)} get nodes -L {POOL_LABEL}",
            )
            for c in standing
        ),
        on_failure=_kube_access_help(dcfg, pair.words("shared")),
    )


# --- failover -------------------------------------------------------------------------------------


def _declare_step(pair: _Pair, node: StepNode) -> Body:
    w, p, pcfg = pair.words("declare"), pair.primary, pair.pcfg
    checks = [
        Check(w.text("cluster_down", cluster=c.eks_name), cluster_status(pcfg, c).command)
        for c in pcfg.clusters
    ]
    checks += [Check(w.text("bucket_down"), bucket_reachable(pcfg, b)) for b in pcfg.buckets[:1]]
    return Body(
        title=w.text("title", site=p),
        why=w.text("why"),
        commands=(export(DISASTER_AT, w.text("disaster_at")),),
        checks=tuple(checks),
        on_failure=w.items(
            "on_failure", status=STATUS_PAGES[p.cloud], region=p.region, pools=bool(pair.pools)
        ),
    )


def _pause_pulls_step(pair: _Pair, node: StepNode) -> Body:
    w, dcfg = pair.words("pause-pulls"), pair.dcfg
    scheduled = [f for f in pair.flows if f.mechanism in PULLED]
    commands: list[str] = []
    checks = []
    if any(f.mechanism in JOB_PULLS for f in scheduled):
        commands.append(azcopy_identity_lookup(dcfg))
    for f in scheduled:
        b = pair.dr_bucket(f.data_class)
        for t in b.inbound:
            commands += [pull_lookup(dcfg, b, f, t), pull_schedule(dcfg, f, t, enabled=False)]
        disabled = w.text("disabled", data_class=f.data_class, mechanism=f.mechanism)
        checks.append(Check(disabled, pull_status(dcfg, f)))
    return Body(
        title=w.text("title"),
        why=w.text("why", mirrors=any(f.data_class == "checkpoints" for f in scheduled)),
        commands=tuple(commands),
        checks=tuple(checks),
        on_failure=w.items("on_failure", jobs=any(f.mechanism in JOB_PULLS for f in scheduled)),
        notes=w.items("notes", stack=pair.dr_stack),
    )


def _freshness(pair: _Pair, f: DataFlow, w: Words) -> Check:
    """How old the newest object may be: the plan's estimated RPO, measured from the loss."""
    return Check(
        w.text(
            "fresh",
            mechanism=f.mechanism,
            estimate=f.estimate.estimated_s,
            target=f.rpo_s,
            disaster=f"${DISASTER_AT}",
        ),
        "",
    )


def _replica_checks(pair: _Pair, f: DataFlow, b: BucketConfig, w: Words) -> list[Check]:
    """The object's stored checksums, and what the mechanism itself reports about the copy."""
    dcfg, ref = pair.dcfg, f"${key_var(f.data_class)}"
    if f.mechanism not in (Mechanism.CRR_RTC, Mechanism.CRR):
        checks = [Check(w.text("stored"), describe_object(dcfg, b, ref))]
    else:
        checks = [Check(w.text("replica"), describe_object(dcfg, b, ref))]
        source = pair.primary_bucket(f.data_class)
        status = cli.s3_head_object(
            source.name, ref, pair.primary.region, query="ReplicationStatus"
        )
        checks.append(Check(w.text("replicated"), shell(status)))
    if f.mechanism in DUAL_REGION:
        checks.append(
            Check(
                w.text(
                    "rpo_setting", setting=cli.gcs_rpo(turbo=f.mechanism == Mechanism.GCS_TURBO)
                ),
                shell(cli.gcs_describe_bucket(b, "value(rpo)")),
            )
        )
    if f.mechanism in PULLED:
        interval = f.schedule.interval_s if f.schedule else None
        for t in b.inbound:
            runs = pull_lookup(dcfg, b, f, t) + " && " + pull_runs(dcfg, f, 5)
            checks.append(
                Check(
                    w.text(
                        "pulled",
                        mechanism=f.mechanism,
                        interval=interval,
                        disaster=f"${DISASTER_AT}",
                    ),
                    runs,
                )
            )
    if f.mechanism == Mechanism.DATASYNC:
        execution = f"<{w.text('newest_execution')}>"
        checks.append(
            Check(w.text("verified"), shell(cli.datasync_execution(execution, dcfg.region)))
        )
    if f.mechanism == Mechanism.AZURE_OR:
        policies = cli.blob_replication_policies(b, str(dcfg.resource_group))
        checks.append(Check(w.text("or_policy"), shell(policies)))
    return checks


def _integrity_checks(pair: _Pair, f: DataFlow, b: BucketConfig, w: Words) -> list[Check]:
    """The object read and hashed; weights also locked against deletion."""
    dcfg, ref = pair.dcfg, f"${key_var(f.data_class)}"
    checks = []
    if f.data_class in ("checkpoints", "weights"):
        checks.append(Check(w.text("sha256", ref=ref), hash_object(dcfg, b, ref)))
    if f.data_class == "weights" and dcfg.cloud == "aws":
        retention = cli.s3_object_retention(b, ref, dcfg.region)
        checks.append(Check(w.text("object_lock"), shell(retention)))
    if f.data_class == "weights" and dcfg.cloud == "gcp":
        lock = cli.gcs_describe_bucket(b, "yaml(retention_policy)")
        checks.append(Check(w.text("bucket_lock"), shell(lock)))
    return checks


def _data_step(pair: _Pair, node: StepNode) -> Body:
    w, dcfg = pair.words("data"), pair.dcfg
    f = pair.flow(str(node.subject))
    b = pair.dr_bucket(f.data_class)
    key = key_var(f.data_class)
    if f.data_class == "checkpoints":
        picks = [export(CKPT, w.text("ckpt_prefix")), export(key, w.text("ckpt_object", ckpt=CKPT))]
    else:
        picks = [export(key, w.text("pick", data_class=f.data_class))]
    est = f.estimate.estimated_s
    ckpt = pair.plan.checkpoints
    return Body(
        title=w.text("title", data_class=f.data_class, site=pair.dr.name),
        why=w.text(
            "why",
            url=storage_url(dcfg, b),
            data_class=f.data_class,
            mechanism=f.mechanism,
            scaling=pair.has("capacity"),
        ),
        commands=(list_newest(dcfg, b), *picks),
        checks=(
            _freshness(pair, f, w),
            *_replica_checks(pair, f, b, w),
            *_integrity_checks(pair, f, b, w),
        ),
        on_failure=w.items(
            "on_failure",
            data_class=f.data_class,
            dual_region=f.mechanism in DUAL_REGION,
            regions=(pair.primary.region, pair.dr.region),
            keep=ckpt.keep if ckpt else None,
            interval=ckpt.interval_s if ckpt else None,
            dual_write=f.mechanism == Mechanism.DUAL_WRITE,
            age=est,
            cloud=dcfg.cloud,
        ),
        notes=w.items(
            "notes",
            data_class=f.data_class,
            dual_write=f.mechanism == Mechanism.DUAL_WRITE,
            primary=pair.primary.name,
            dr=pair.dr.name,
            size=fmt_size(pair.plan.datasets.size_b) if pair.plan.datasets else None,
        ),
    )


def _capacity_step(pair: _Pair, node: StepNode) -> Body:
    w, shared, dcfg, stack = pair.words("capacity"), pair.words("shared"), pair.dcfg, pair.dr_stack
    created = sorted({c.name for c in dcfg.clusters if not c.standby_control_plane})
    commands = [set_mode(Mode.FAILOVER, stack), pulumi_up(stack)]
    commands += [cmd for c in created for cmd in credentials_commands(dcfg, pair.dr_cluster(c))]
    checks = [Check(w.text("mode"), stack_mode(stack))]
    for p in pair.pools:
        cluster, pool = pair.dr_pool(p.name)
        checks += [
            _pool_size(shared, dcfg, cluster, pool, (pool.nodes, pool.nodes, pool.nodes)),
            _ready(shared, dcfg, cluster, pool.name, pool.nodes),
            Check(
                w.text("gpus", gpus=pool.gpus_per_node, pool=pool.name),
                gpus_per_node(kube_context(dcfg, cluster), pool.name),
            ),
        ]
    trouble = dict.fromkeys(pool_trouble(dcfg, *pair.dr_pool(p.name)) for p in pair.pools)
    return Body(
        title=w.text("title", site=pair.dr.name),
        why=w.text("why", stack=stack, pools=pair.pools, created=bool(created)),
        commands=tuple(commands),
        checks=tuple(checks),
        on_failure=w.items(
            "on_failure",
            trouble=list(trouble),
            cloud=dcfg.cloud,
            # Whether a capacity reservation exists for every pool's VM size at this cloud.
            reservable=all(reservation(dcfg.cloud, p.instance_type) for p in pair.pools),
        ),
    )


def _training_step(pair: _Pair, node: StepNode) -> Body:
    w, dcfg = pair.words("training"), pair.dcfg
    cluster, pool = pair.dr_pool(str(node.subject))
    ctx, v = kube_context(dcfg, cluster), pool_vars(pool.name)
    ckpt = pair.has("data:checkpoints")
    ckpt_url = storage_url(dcfg, pair.dr_bucket("checkpoints")) if ckpt else None
    checks = [Check(w.text("running", pool=pool.name), f"{_pods(ctx, v)} -o wide")]
    if ckpt:
        checks.append(Check(w.text("restored", ckpt=CKPT), _pod_logs(ctx, v, "checkpoint")))
    if ckpt and pair.plan.checkpoints:
        interval = pair.plan.checkpoints.interval_s
        newest = list_newest(dcfg, pair.dr_bucket("checkpoints"))
        checks.append(Check(w.text("new_checkpoint", ckpt=CKPT, interval=interval), newest))
    return Body(
        title=str(node.title),
        why=w.text(
            "why",
            manifest=v.manifest_dr,
            label=POOL_LABEL,
            taint=GPU_TAINT,
            pool=pool,
            ckpt=CKPT,
            checkpoints=ckpt_url,
            datasets=storage_url(dcfg, pair.dr_bucket("datasets"))
            if pair.has("data:datasets")
            else None,
        ),
        commands=(_apply(ctx, v.manifest_dr),),
        checks=tuple(checks),
        on_failure=w.items("on_failure", describe=_pods(ctx, v, "describe pods"), ckpt=ckpt),
    )


def _service_step(pair: _Pair, node: StepNode) -> Body:
    w, dcfg = pair.words("service"), pair.dcfg
    p = pair.pool(str(node.subject))
    cluster, pool = pair.dr_pool(p.name)
    ctx, v = kube_context(dcfg, cluster), pool_vars(p.name)
    serving = p.pattern == Pattern.ACTIVE_ACTIVE
    weights = f"${key_var('weights')}" if pair.has("data:weights") else None
    checks = [
        Check(w.text("running", pool=pool.name), f"{_pods(ctx, v)} -o wide"),
        Check(w.text("healthy"), _http_status(f"${v.dr_health}")),
    ]
    if weights:
        checks.append(Check(w.text("version", weights=weights), _pod_logs(ctx, v, "weights")))
    return Body(
        title=str(node.title),
        why=w.text(
            "why",
            pool=pool,
            serving=serving,
            site=pair.dr.name,
            weights=weights,
            label=POOL_LABEL,
            taint=GPU_TAINT,
        ),
        commands=() if serving else (_apply(ctx, v.manifest_dr),),
        checks=tuple(checks),
        on_failure=w.items("on_failure", describe=_pods(ctx, v, "describe pods"), weights=weights),
    )


def _traffic_step(pair: _Pair, node: StepNode) -> Body:
    w, p = pair.words("traffic"), pair.pool(str(node.subject))
    v = pool_vars(p.name)
    return Body(
        title=str(node.title),
        why=w.text(
            "why",
            hostname=v.hostname,
            pool=p.name,
            site=pair.dr.name,
            shift=p.chosen.stages["traffic_shift"],
        ),
        commands=(f"# {w.text('change', hostname=v.hostname, pool=p.name, site=pair.dr.name)}",),
        checks=(
            Check(w.text("resolves", pool=p.name, site=pair.dr.name), _resolve(v.hostname)),
            Check(w.text("serves"), _http_status(f"https://${v.hostname}/")),
        ),
        on_failure=w.items("on_failure", pool=p.name),
    )


# --- failback -------------------------------------------------------------------------------------


def _primary_healthy_step(pair: _Pair, node: StepNode) -> Body:
    w, shared, p, pcfg = (
        pair.words("fb-primary-healthy"),
        pair.words("shared"),
        pair.primary,
        pair.pcfg,
    )
    commands: tuple[str, ...] = ()
    checks: list[Check] = []
    if p.cloud != pair.dr.cloud:
        commands, login = _login(pcfg, shared)
        checks += login
    commands += tuple(cmd for c in pcfg.clusters for cmd in credentials_commands(pcfg, c))
    checks += [cluster_status(pcfg, c) for c in pcfg.clusters]
    checks += [
        Check(w.text("answers", data_class=b.data_class), bucket_reachable(pcfg, b))
        for b in pcfg.buckets
    ]
    for q in pair.trainings():
        cluster = pair.primary_cluster(q.cluster)
        checks.append(
            Check(
                w.text("not_restarted", pool=q.name, primary=p.name, dr=pair.dr.name),
                _pods(kube_context(pcfg, cluster), pool_vars(q.name)),
            )
        )
    preview = pulumi_preview(pair.primary_stack, refresh=True)
    checks.append(Check(w.text("preview"), preview))
    return Body(
        title=w.text("title", site=p),
        why=w.text("why", status=STATUS_PAGES[p.cloud]),
        commands=commands,
        checks=tuple(checks),
        on_failure=(*w.items("on_failure"), *_kube_access_help(pcfg, shared)),
    )


def _stop_dr_training_step(pair: _Pair, node: StepNode) -> Body:
    w, dcfg = pair.words("fb-stop-dr-training"), pair.dcfg
    where = [
        (kube_context(dcfg, pair.dr_pool(q.name)[0]), pool_vars(q.name)) for q in pair.trainings()
    ]
    return Body(
        title=w.text("title", site=pair.dr.name),
        why=w.text("why"),
        commands=tuple(_apply(ctx, v.manifest_dr, "delete") for ctx, v in where),
        checks=tuple(Check(w.text("stopped"), _pods(ctx, v)) for ctx, v in where),
        on_failure=w.items("on_failure"),
    )


def _copy_back(pair: _Pair, f: DataFlow, w: Words) -> tuple[list[str], list[Check]]:
    """Copy what the DR site holds for one class back into the primary's bucket, never deleting
    and never overwriting at the destination, and the check that nothing is left to copy."""
    dcfg, pcfg = pair.dcfg, pair.pcfg
    source = storage_url(dcfg, pair.dr_bucket(f.data_class))
    target = storage_url(pcfg, pair.primary_bucket(f.data_class))
    login = shell(cli.azcopy_login())
    if dcfg.cloud == pcfg.cloud:
        up = _copy(pcfg.cloud, source, target, (dcfg.region, pcfg.region), keep=True)
        commands = [login, up] if pcfg.cloud == "azure" else [up]
    else:
        # Across clouds no CLI signs in to both: stage on local disk, each side with its own CLI
        # and its usual sign-in (no access key of one cloud stored for the other's tools).
        local = f"${STAGING}/{f.data_class}"
        commands = [f'mkdir -p "{local}"', *([login] if dcfg.cloud == "azure" else [])]
        commands.append(_copy(dcfg.cloud, source, local, (dcfg.region,), keep=False))
        up = _copy(pcfg.cloud, local, target, (pcfg.region,), keep=True)
        if pcfg.cloud == "azure" and login not in commands:
            commands.append(login)
        commands.append(up)
    dry = " --dryrun" if pcfg.cloud == "aws" else " --dry-run"
    return commands, [Check(w.text("nothing_left", cloud=pcfg.cloud), up + dry)]


def _copy_step(pair: _Pair, node: StepNode) -> Body:
    w, f = pair.words("fb-copy"), pair.flow(str(node.subject))
    dst = pair.primary_bucket(f.data_class)
    commands, checks = _copy_back(pair, f, w)
    key = f"${key_var(f.data_class)}"
    checks.append(
        Check(
            w.text("sha256", ref=key, data_class=f.data_class),
            hash_object(pair.pcfg, dst, key),
        )
    )
    spec = pair.plan.checkpoints
    staged = (
        spec.keep * spec.size_b / spec.compression_ratio
        if f.data_class == "checkpoints" and spec and pair.primary.cloud != pair.dr.cloud
        else None
    )
    return Body(
        title=w.text("title", data_class=f.data_class, dr=pair.dr.name, primary=pair.primary.name),
        why=w.text(
            "why",
            data_class=f.data_class,
            dr=pair.dr.name,
            primary=pair.primary.name,
            source=storage_url(pair.dcfg, pair.dr_bucket(f.data_class)),
            target=storage_url(pair.pcfg, dst),
            staging=STAGING,
            keep=spec.keep if spec else None,
            staged=fmt_size(staged) if staged is not None else None,
        ),
        commands=tuple(commands),
        checks=tuple(checks),
        on_failure=w.items("on_failure"),
        notes=w.items(
            "notes",
            pushed=f.mechanism in (Mechanism.CRR_RTC, Mechanism.CRR),
            data_class=f.data_class,
        ),
    )


def _primary_up_step(pair: _Pair, node: StepNode) -> Body:
    w, shared, pcfg, stack = (
        pair.words("fb-primary-up"),
        pair.words("shared"),
        pair.pcfg,
        pair.primary_stack,
    )
    ready = [
        Check(
            shared.text("ready", nodes=q.nodes, pool=q.name, site=pair.primary.name),
            ready_nodes(kube_context(pcfg, c), q.name),
        )
        for c in pcfg.clusters
        for q in c.pools
    ]
    return Body(
        title=w.text("title", stack=stack),
        why=w.text(
            "why", dual_region=[f.data_class for f in pair.flows if f.mechanism in DUAL_REGION]
        ),
        commands=(pulumi_up(stack),),
        checks=(
            Check(w.text("no_changes"), f"{pulumi_preview(stack)} --expect-no-changes"),
            *ready,
        ),
        on_failure=w.items("on_failure"),
    )


def _resume_training_step(pair: _Pair, node: StepNode) -> Body:
    w, pcfg = pair.words("fb-training"), pair.pcfg
    q = pair.pool(str(node.subject))
    ctx, v = kube_context(pcfg, pair.primary_cluster(q.cluster)), pool_vars(q.name)
    dst = pair.find_primary_bucket("checkpoints")
    return Body(
        title=w.text("title", pool=q.name, site=pair.primary.name),
        why=w.text(
            "why",
            url=storage_url(pcfg, dst) if dst else None,
            manifest=v.manifest_primary,
        ),
        commands=(_apply(ctx, v.manifest_primary),),
        checks=(
            Check(w.text("running"), f"{_pods(ctx, v)} -o wide"),
            Check(w.text("restored", site=pair.dr.name), _pod_logs(ctx, v, "checkpoint")),
        ),
        on_failure=w.items("on_failure", copied=pair.has("fb:copy:checkpoints")),
    )


def _traffic_back_step(pair: _Pair, node: StepNode) -> Body:
    w, change = pair.words("fb-traffic"), pair.words("traffic")
    q, site = str(node.subject), pair.primary.name
    v = pool_vars(q)
    return Body(
        title=w.text("title", pool=q, site=site),
        why=w.text("why"),
        commands=(f"# {change.text('change', hostname=v.hostname, pool=q, site=site)}",),
        checks=(
            Check(w.text("healthy"), _http_status(f"${v.primary_health}")),
            Check(w.text("resolves", pool=q, site=site), _resolve(v.hostname)),
        ),
        on_failure=w.items("on_failure"),
    )


def _standby_step(pair: _Pair, node: StepNode) -> Body:
    w, shared, dcfg, stack = (
        pair.words("fb-standby"),
        pair.words("shared"),
        pair.dcfg,
        pair.dr_stack,
    )
    checks = [Check(w.text("mode"), stack_mode(stack))]
    removed: set[str] = set()
    for q in pair.pools:
        cluster, pool = pair.dr_pool(q.name)
        if not cluster.standby_control_plane:
            if cluster.name not in removed:
                removed.add(cluster.name)
                gone = w.text("removed", cluster=cluster.eks_name)
                checks.append(Check(gone, cluster_status(dcfg, cluster).command))
            continue
        top = pool.nodes if pool.pattern == Pattern.ACTIVE_ACTIVE else max(pool.nodes, 1)
        sizes = (pool.standby_nodes, pool.standby_nodes, top)
        checks += [
            _pool_size(shared, dcfg, cluster, pool, sizes),
            _ready(shared, dcfg, cluster, pool.name, pool.standby_nodes),
        ]
    return Body(
        title=w.text("title", site=pair.dr.name),
        why=w.text("why", pools=pair.pools),
        commands=(set_mode(Mode.STANDBY, stack), pulumi_up(stack)),
        checks=tuple(checks),
        on_failure=w.items("on_failure", site=pair.dr.name),
    )


def _replicating(pair: _Pair, f: DataFlow, w: Words) -> tuple[list[str], list[Check]]:
    """The commands that start one class's replication again, and the checks that it runs."""
    pcfg, dcfg = pair.pcfg, pair.dcfg
    b, new, cls = pair.dr_bucket(f.data_class), f"${new_key_var(f.data_class)}", f.data_class
    commands: list[str] = []
    checks: list[Check] = []
    if f.mechanism in (Mechanism.CRR_RTC, Mechanism.CRR):
        src = pair.primary_bucket(cls)
        status = cli.s3_head_object(src.name, new, pcfg.region, query="ReplicationStatus")
        checks += [
            Check(
                w.text("rules", data_class=cls), shell(cli.s3_replication_rules(src, pcfg.region))
            ),
            Check(w.text("completed", data_class=cls, lag=f.estimate.lag_s), shell(status)),
        ]
    elif f.mechanism in DUAL_REGION:
        setting = cli.gcs_rpo(turbo=f.mechanism == Mechanism.GCS_TURBO)
        rpo = shell(cli.gcs_describe_bucket(b, "value(rpo)"))
        checks.append(Check(w.text("rpo_setting", data_class=cls, setting=setting), rpo))
    elif f.mechanism in PULLED:
        if f.mechanism in JOB_PULLS:
            commands.append(azcopy_identity_lookup(dcfg))
        for t in b.inbound:
            commands += [
                pull_lookup(dcfg, b, f, t),
                pull_schedule(dcfg, f, t, enabled=True),
                pull_run_now(dcfg, f),
            ]
        checks += [
            Check(w.text("enabled", data_class=cls, mechanism=f.mechanism), pull_status(dcfg, f)),
            Check(w.text("run_ends", data_class=cls, mechanism=f.mechanism), pull_runs(dcfg, f, 1)),
        ]
    elif f.mechanism == Mechanism.AZURE_OR:
        shown = cli.blob_show(pair.primary_bucket(cls), new, "objectReplicationSourceProperties")
        checks.append(Check(w.text("or_complete", data_class=cls), shell(shown)))
    elif f.mechanism == Mechanism.DUAL_WRITE:
        both = w.text("both_copies", data_class=cls, site=pair.dr.name)
        checks.append(Check(both, describe_object(dcfg, b, new)))
    return commands, checks


def _replication_step(pair: _Pair, node: StepNode) -> Body:
    w = pair.words("fb-replication")
    exports: list[str] = []
    commands: list[str] = []
    checks: list[Check] = []
    for f in pair.flows:
        if f.mechanism in (*PUSHED, Mechanism.DUAL_WRITE):
            what = w.text("new_object", data_class=f.data_class, site=pair.primary.name)
            exports.append(export(new_key_var(f.data_class), what))
        more, verified = _replicating(pair, f, w)
        commands += more
        checks += verified
    return Body(
        title=w.text("title", primary=pair.primary.name, dr=pair.dr.name),
        why=w.text("why", restarted=bool(commands)),
        commands=(*exports, *commands),
        checks=tuple(checks),
        on_failure=w.items("on_failure", preview=pulumi_preview(pair.primary_stack)),
    )


_BODIES: dict[str, Callable[[_Pair, StepNode], Body]] = {
    "variables": _variables_step,
    "cloud-login": _cloud_login_step,
    "pulumi-login": _pulumi_login_step,
    "kubectl": _kubectl_step,
    "declare": _declare_step,
    "pause-pulls": _pause_pulls_step,
    "data": _data_step,
    "capacity": _capacity_step,
    "training": _training_step,
    "service": _service_step,
    "traffic": _traffic_step,
    "fb-primary-healthy": _primary_healthy_step,
    "fb-stop-dr-training": _stop_dr_training_step,
    "fb-copy": _copy_step,
    "fb-primary-up": _primary_up_step,
    "fb-training": _resume_training_step,
    "fb-traffic": _traffic_back_step,
    "fb-standby": _standby_step,
    "fb-replication": _replication_step,
}


def _step(pair: _Pair, node: StepNode) -> Step:
    body = _BODIES[node.kind](pair, node)
    return Step(
        number=node.number,
        key=node.key,
        phase=node.phase,
        title=body.title,
        why=body.why,
        commands=body.commands,
        expected_s=node.expected_s,
        duration=NOT_TIMED if node.expected_s is None else fmt_duration(node.expected_s),
        basis=node.basis,
        checks=body.checks,
        on_failure=body.on_failure,
        after=node.after,
        parallel_with=node.parallel_with,
        notes=body.notes,
    )


# --- entry points ---------------------------------------------------------------------------------


def build_runbook(design: Design, primary: str, dr: str) -> Runbook:
    """The runbook for one primary -> DR pair of the design's plan."""
    plan = design.plan
    p, d = plan.sites[primary], plan.sites[dr]
    pair = _pair(design, p, d)  # ValueError for a pair that is not one
    graph = pair.graph
    pools = tuple(
        PoolSize(
            pool=q.name,
            cluster=q.cluster,
            kind=q.kind,
            pattern=q.pattern,
            instance_type=q.instance_type,
            gpus_per_node=q.gpus_per_node,
            nodes=q.nodes,
            standby_nodes=q.standing,
        )
        for q in pair.pools
    )
    targets = _targets(pair)
    return Runbook(
        plan=plan.name,
        path=runbook_path(plan, p, d),
        primary=_site_ref(plan, p, pair.pcfg),
        dr=_site_ref(plan, d, pair.dcfg),
        targets=targets,
        pools=pools,
        expected_recovery_s=graph.recovery_s,
        expected_recovery=fmt_duration(graph.recovery_s),
        slowest=graph.slowest or "-",
        all_met=all(t.meets for t in targets),
        steps=tuple(_step(pair, node) for node in graph.steps),
        variables=tuple(_variables(pair)),
        critical_path=graph.critical_path,
        irreversible=irreversible_settings(design, (primary, dr)),
        **_cci_section(pair),
    )


def _cci_section(pair: _Pair) -> dict[str, Any]:
    """The ordering checklist of a Cross-Cloud Interconnect, which the primary's stack owns:
    Google's AWS guide orders the Google connections first, then one AWS LAG per connection
    (defaults.yaml links.cross-cloud-interconnect); the attachments, virtual interfaces and
    BGP sessions deploy once both are provisioned (components/xcloud/cci.py)."""
    link = next((x for x in pair.pcfg.links if x.kind == LinkKind.CROSS_CLOUD_INTERCONNECT), None)
    if link is None or not link.ports:
        return {}
    sites = (pair.primary, pair.dr)
    aws = next(s for s in sites if s.cloud == Cloud.AWS)
    gcp = next(s for s in sites if s.cloud == Cloud.GCP)
    cfgs = {pair.primary.name: pair.pcfg, pair.dr.name: pair.dcfg}
    network = cfgs[gcp.name].network_name
    names = cci_name(network, aws.name)
    gateway = cci_gateway_name(pair.plan.name, aws.name, gcp.name)
    stack = stack_name(pair.plan, pair.primary)
    project, region = str(gcp.project), gcp.region
    first = f"{names}-0"
    lags = (
        f"aws directconnect describe-lags --region {aws.region} --query "
        f"\"lags[?starts_with(lagName, '{gateway}-lag-')].lagId\" --output text"
    )
    items = (
        LinkItem(
            f"Before ordering, check the remote location's constraints (the largest LAG it "
            f"takes, its BGP and subnet rules) and your quotas for {link.ports} connections: "
            "AWS's LAGs per Region, Google's Interconnects per project.",
            shell(
                [
                    "gcloud",
                    "compute",
                    "interconnects",
                    "remote-locations",
                    "describe",
                    str(link.remote_location),
                    "--project",
                    project,
                ]
            ),
        ),
        LinkItem(
            f"Order both ends: `pulumi up` on the primary's stack orders the {link.ports} Google "
            f"connections ({names}-0 .. {link.ports - 1}, alternating {link.location} and "
            f"{link.secondary_location}, remote location {link.remote_location}) and one AWS "
            f"LAG of one {link.port_gbps} Gbps port per connection at {link.aws_location} "
            f"({gateway}-lag-*), as Google's guide requires (LAGs, for LACP).",
            pulumi_up(stack),
        ),
        LinkItem(
            "For each LAG, download AWS's LOA-CFA and hand it to Google as its Cross-Cloud "
            "Interconnect guide for AWS directs, so that Google orders the cross-connect.",
            f'for lag in $({lags}); do aws directconnect describe-loa --connection-id "$lag" '
            f'--region {aws.region} --query loaContent --output text | base64 -d > "$lag-loa.pdf"; '
            "done",
        ),
        LinkItem(
            "Wait until Google reports every connection provisioned (`state: ACTIVE`) and AWS "
            "every LAG `available` (connection 0 shown; repeat for each).",
            shell(
                [
                    "gcloud",
                    "compute",
                    "interconnects",
                    "describe",
                    first,
                    "--project",
                    project,
                    "--format",
                    Quoted("value(state)"),
                ]
            ),
        ),
        LinkItem(
            "Then declare the VLAN attachments (one per connection, VLAN "
            f"{link.vlan}, on {network}-router), the transit virtual interfaces to the Direct "
            "Connect gateway and the BGP sessions:",
            f"pulumi config set {CCI_PROVISIONED_KEY} true -s {stack} && {pulumi_up(stack)}",
        ),
        LinkItem(
            "Verify every BGP session is up on both sides: each Cloud Router peer "
            "`Established`, then each transit virtual interface's BGP peer `up`.",
            shell(
                [
                    "gcloud",
                    "compute",
                    "routers",
                    "get-status",
                    f"{network}-router",
                    "--region",
                    region,
                    "--project",
                    project,
                    "--format",
                    Quoted("value(result.bgpPeerStatus[].state)"),
                ]
            )
            + "\n"
            + f"aws directconnect describe-virtual-interfaces --region {aws.region} --query "
            f"\"virtualInterfaces[?starts_with(virtualInterfaceName, '{gateway}-')]"
            '.bgpPeers[].bgpStatus" --output text',
        ),
    )
    notes = (
        f"The link carries {link.capacity_gbps:g} Gbps with one edge availability domain down "
        f"({link.ports} x {link.port_gbps} Gbps, for a need of "
        f"{link.required_gbps * link.headroom:,.2f} Gbps with headroom): a Google maintenance "
        "window or a failed domain leaves the dual writes their rate.",
        f"The primary's stack ({stack}) owns both ends; the DR stack never reads or changes the "
        "link, so a failover does not touch it. Do not destroy the primary's stack while "
        "failed over: its ports are orders, and reordering repeats the cross-connects.",
        "Before a failback resumes dual writes to the primary, check the BGP sessions (the "
        "last item above): the link must be up again at both ends.",
    )
    return {
        "link_title": "Dedicated link: GCP Cross-Cloud Interconnect to AWS",
        "link_items": items,
        "link_notes": notes,
    }


def render_runbook(runbook: Runbook, header: str) -> str:
    text = environment(trim=True).get_template(TEMPLATE).render(rb=runbook, header=header)
    # One blank line at most, one newline at the end: stable, diff-friendly output.
    return re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"


def render_runbooks(design: Design, header: str) -> dict[str, str]:
    """`{"runbooks/<plan>-<primary>-to-<dr>.md": markdown}` for every primary -> DR pair, each
    starting with `header` verbatim. The same design renders byte-identical files."""
    out: dict[str, str] = {}
    for primary, dr in design.plan.pairs():
        rb = build_runbook(design, primary.name, dr.name)
        out[rb.path] = render_runbook(rb, header)
    return dict(sorted(out.items()))
