"""Runbooks: one per site pair (primary -> DR), what an on-call engineer follows to fail over and
back, rendered to markdown with jinja2 (`templates/runbook.md.j2`).

Everything a runbook says comes from the design: the names are the ones the stack config uses
(`gpudr.stackconfig`), the expected durations are the design's RTO stages per pool and its data
RTO and RPO estimates per flow, formatted with `gpudr.units.fmt_duration`. A step the RTO model
does not time says so; no duration is made up. What gpudr cannot know (the state backend's URL,
the training job's manifest, the service's health URL) is a shell variable the operator sets
once, in the first step.

Order follows the plan's dependencies: the disaster is declared; the data is verified at the DR
site while its GPU capacity scales; training restarts from the verified checkpoint once both are
done; services are checked against the verified weights before traffic moves. Failback copies
back what the DR site wrote, brings the primary up, moves work and traffic back, and only then
shrinks the DR site to its standby size and restarts replication.

The same design renders byte-identical files: no timestamps, every collection in plan or sorted
order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpudr.build.stackconfig import (
    CredentialKey,
    build_site_configs,
    stack_name,
    transfer_credential_keys,
)
from gpudr.contract.naming import (
    GPU_TAINT,
    POOL_LABEL,
    agent_pool_name,
    datasync_schedule,
    datasync_task_name,
    datasync_task_prefix,
)
from gpudr.contract.site import BucketConfig, ClusterConfig, InboundTransfer, PoolConfig, SiteConfig
from gpudr.core.design import DataFlow, Design, Pool
from gpudr.core.spec import Plan, Site
from gpudr.core.units import fmt_duration, fmt_size
from gpudr.docs.templating import environment

TEMPLATE = "runbook.md.j2"
RUNBOOKS_DIR = "runbooks"
POLICY_PACK = "policies"
NOT_TIMED = "not timed by the plan"
PHASES = ("prepare", "failover", "failback")
# In a step's prose, `{step:<key>}` becomes "step <number>".
STEP_REF = re.compile(r"\{step:([^}]+)\}")
CLASS_ORDER = ("checkpoints", "datasets", "weights")
STATUS_PAGES = {
    "aws": "https://health.aws.amazon.com/health/status",
    "gcp": "https://status.cloud.google.com",
    "azure": "https://azure.status.microsoft/en-us/status",
}


# --- the model ----------------------------------------------------------------------------------


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

    def phase(self, name: str) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.phase == name)

    def step(self, key: str) -> Step:
        return next(s for s in self.steps if s.key == key)


# --- names, as the components derive them --------------------------------------------------------


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
        return (f"aws eks update-kubeconfig --name {name} --region {region} --alias {name}",)
    if site.cloud == "gcp":
        private = "" if site.api_public_cidrs else " --internal-ip"
        return (
            f"gcloud container clusters get-credentials {name} --region {region} "
            f"--project {site.project}{private}",
        )
    return (
        f"az aks get-credentials --resource-group {site.resource_group} --name {name}",
        # Entra ID only (local accounts are disabled): kubectl signs in through kubelogin.
        "kubelogin convert-kubeconfig -l azurecli",
    )


def var_name(name: str) -> str:
    """A name as part of a shell or GitHub configuration variable name (upper-case letters,
    digits, underscores)."""
    return re.sub(r"[^A-Z0-9]", "_", name.upper())


# --- per cloud: storage -------------------------------------------------------------------------


def storage_url(site: SiteConfig, bucket: BucketConfig) -> str:
    if site.cloud == "aws":
        return f"s3://{bucket.name}"
    if site.cloud == "gcp":
        return f"gs://{bucket.name}"
    return f"https://{bucket.storage_account}.blob.core.windows.net/{bucket.name}"


def list_newest(site: SiteConfig, bucket: BucketConfig) -> str:
    """The 20 newest objects, oldest of them first."""
    if site.cloud == "aws":
        return (
            f"aws s3 ls s3://{bucket.name}/ --recursive --region {site.region} | sort | tail -n 20"
        )
    if site.cloud == "gcp":
        return (
            f"gcloud storage ls -l 'gs://{bucket.name}/**' | grep -v '^TOTAL' | sort -k 2 "
            "| tail -n 20"
        )
    return (
        f"az storage blob list --account-name {bucket.storage_account} --container-name "
        f"{bucket.name} --auth-mode login --num-results '*' --query "
        "'sort_by(@, &properties.lastModified)[-20:].[properties.lastModified, name]' "
        "--output table"
    )


def key_var(data_class: str) -> str:
    """The shell variable naming the object of a class that is being verified."""
    return f"{var_name(data_class)}_KEY"


def describe_object(site: SiteConfig, bucket: BucketConfig, key: str) -> str:
    """The stored checksums, size and time of one object (no data read)."""
    if site.cloud == "aws":
        return (
            f'aws s3api head-object --bucket {bucket.name} --key "{key}" --checksum-mode ENABLED '
            f"--region {site.region}"
        )
    if site.cloud == "gcp":
        return (
            f'gcloud storage objects describe "gs://{bucket.name}/{key}" '
            "--format='yaml(crc32c_hash,md5_hash,size,update_time)'"
        )
    return (
        f"az storage blob show --account-name {bucket.storage_account} --container-name "
        f'{bucket.name} --name "{key}" --auth-mode login --query '
        "'{md5:properties.contentSettings.contentMd5,size:properties.contentLength,"
        "modified:properties.lastModified}'"
    )


def hash_object(site: SiteConfig, bucket: BucketConfig, key: str) -> str:
    """Read one object and hash it: what a manifest's sha256 is compared with."""
    if site.cloud == "aws":
        return f'aws s3 cp "s3://{bucket.name}/{key}" - --region {site.region} | sha256sum'
    if site.cloud == "gcp":
        return f'gcloud storage cat "gs://{bucket.name}/{key}" | sha256sum'
    return (
        f"az storage blob download --account-name {bucket.storage_account} --container-name "
        f'{bucket.name} --name "{key}" --file /tmp/gpudr-verify --auth-mode login --output none '
        "&& sha256sum /tmp/gpudr-verify"
    )


def bucket_reachable(site: SiteConfig, bucket: BucketConfig) -> str:
    if site.cloud == "aws":
        return f"aws s3api head-bucket --bucket {bucket.name} --region {site.region}"
    if site.cloud == "gcp":
        return f"gcloud storage buckets describe gs://{bucket.name} --format='value(name)'"
    return (
        f"az storage container show --account-name {bucket.storage_account} --name "
        f"{bucket.name} --auth-mode login --query name --output tsv"
    )


def cluster_status(site: SiteConfig, cluster: ClusterConfig) -> Check:
    name, region = cluster.eks_name, site.region
    if site.cloud == "aws":
        return Check(
            "ACTIVE",
            f"aws eks describe-cluster --name {name} --region {region} --query cluster.status",
        )
    if site.cloud == "gcp":
        return Check(
            "RUNNING",
            f"gcloud container clusters describe {name} --region {region} "
            f"--project {site.project} --format='value(status)'",
        )
    return Check(
        "Succeeded",
        f"az aks show --resource-group {site.resource_group} --name {name} "
        "--query provisioningState --output tsv",
    )


# --- per cloud: GPU pools -----------------------------------------------------------------------


def pool_size_check(
    site: SiteConfig, cluster: ClusterConfig, pool: PoolConfig, floor: int, desired: int, top: int
) -> Check:
    """The node pool's configured size, as components/pools.py sets it."""
    name, region = cluster.eks_name, site.region
    if site.cloud == "aws":
        return Check(
            f"node group {pool.name}: minSize {floor}, desiredSize {desired}, maxSize {top}",
            f"aws eks describe-nodegroup --cluster-name {name} --nodegroup-name {pool.name} "
            f"--region {region} --query 'nodegroup.scalingConfig'",
        )
    if site.cloud == "gcp":
        return Check(
            f"node pool {pool.name}: totalMinNodeCount {floor}, totalMaxNodeCount {top} "
            f"(printed as `{floor} {top}`)",
            f"gcloud container node-pools describe {pool.name} --cluster {name} "
            f"--region {region} --project {site.project} "
            "--format='value(autoscaling.totalMinNodeCount,autoscaling.totalMaxNodeCount)'",
        )
    agent = agent_pool_name(pool.name)
    return Check(
        f"node pool {agent}: minCount {floor}, maxCount {top}",
        f"az aks nodepool show --resource-group {site.resource_group} --cluster-name {name} "
        f"--name {agent} --query '{{count:count,minCount:minCount,maxCount:maxCount}}' "
        "--output table",
    )


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


def pool_trouble(site: SiteConfig, cluster: ClusterConfig, pool: PoolConfig) -> str:
    """Where the reason a pool did not reach its size is shown."""
    name, region = cluster.eks_name, site.region
    if site.cloud == "aws":
        return (
            f"aws eks describe-nodegroup --cluster-name {name} --nodegroup-name {pool.name} "
            f"--region {region} --query 'nodegroup.health.issues'"
        )
    if site.cloud == "gcp":
        return (
            f"gcloud container operations list --region {region} --project {site.project} "
            "--sort-by='~startTime' --limit=5"
        )
    return (
        f"az aks nodepool show --resource-group {site.resource_group} --cluster-name {name} "
        f"--name {agent_pool_name(pool.name)} --query provisioningState --output tsv"
    )


# --- per mechanism: replication state ------------------------------------------------------------


def pull_var(f: DataFlow) -> str:
    """The shell variable holding one class's job (Storage Transfer) or task (DataSync)."""
    return f"{'JOB' if f.mechanism == 'sts' else 'TASK'}_{var_name(f.data_class)}"


def pull_lookup(dr: SiteConfig, bucket: BucketConfig, f: DataFlow, t: InboundTransfer) -> str:
    """Sets `pull_var(f)`. Storage Transfer names its jobs itself, so the job is found by the
    description gpudr writes (it names the sink); DataSync tasks carry gpudr's name."""
    var = pull_var(f)
    if f.mechanism == "sts":
        return (
            f"{var}=$(gcloud transfer jobs list --project {dr.project} "
            f"--filter='description~gs://{bucket.name}' --format='value(name)')"
        )
    task = datasync_task_name(
        datasync_task_prefix(dr.system, dr.site, bucket.data_class), t.source_site
    )
    return (
        f"{var}=$(aws datasync list-tasks --region {dr.region} "
        f"--query \"Tasks[?Name=='{task}'].TaskArn\" --output text)"
    )


def pull_schedule(dr: SiteConfig, f: DataFlow, t: InboundTransfer, enabled: bool) -> str:
    var = pull_var(f)
    if f.mechanism == "sts":
        status = "enabled" if enabled else "disabled"
        return f'gcloud transfer jobs update "${var}" --status={status} --project {dr.project}'
    status = "ENABLED" if enabled else "DISABLED"
    expression = datasync_schedule(t.schedule_s)
    return (
        f'aws datasync update-task --task-arn "${var}" --region {dr.region} --schedule '
        f'\'{{"ScheduleExpression":"{expression}","Status":"{status}"}}\''
    )


def pull_status(dr: SiteConfig, f: DataFlow) -> str:
    var = pull_var(f)
    if f.mechanism == "sts":
        return (
            f'gcloud transfer jobs describe "${var}" --project {dr.project} '
            "--format='value(status)'"
        )
    return (
        f'aws datasync describe-task --task-arn "${var}" --region {dr.region} '
        "--query 'Schedule.Status'"
    )


def pull_runs(dr: SiteConfig, f: DataFlow, limit: int) -> str:
    """The newest runs, newest first (Storage Transfer) or all executions (DataSync)."""
    var = pull_var(f)
    if f.mechanism == "sts":
        return (
            f'gcloud transfer operations list --job-names="${var}" --limit={limit} '
            "--format='table(name,metadata.status,metadata.startTime,metadata.endTime)'"
        )
    return (
        f'aws datasync list-task-executions --task-arn "${var}" --region {dr.region} --output table'
    )


def pull_run_now(dr: SiteConfig, f: DataFlow) -> str:
    var = pull_var(f)
    if f.mechanism == "sts":
        return f'gcloud transfer jobs run "${var}" --project {dr.project}'
    return f'aws datasync start-task-execution --task-arn "${var}" --region {dr.region}'


# --- building ------------------------------------------------------------------------------------


@dataclass
class _Draft:
    key: str
    phase: str
    title: str
    why: str
    commands: list[str]
    expected_s: float | None
    basis: str
    checks: list[Check]
    on_failure: list[str]
    after: list[str]
    parallel_with: list[str]
    notes: list[str]


class _Steps:
    """Collects steps by key; `after` and `parallel_with` name keys, resolved to numbers."""

    def __init__(self) -> None:
        self.drafts: list[_Draft] = []

    def add(
        self,
        key: str,
        phase: str,
        title: str,
        why: str,
        commands: Iterable[str] = (),
        expected_s: float | None = None,
        basis: str = "",
        checks: Iterable[Check] = (),
        on_failure: Iterable[str] = (),
        after: Iterable[str] = (),
        parallel_with: Iterable[str] = (),
        notes: Iterable[str] = (),
    ) -> None:
        if any(d.key == key for d in self.drafts):
            raise ValueError(f"duplicate runbook step {key}")
        self.drafts.append(
            _Draft(
                key,
                phase,
                title,
                why,
                list(commands),
                expected_s,
                basis,
                list(checks),
                list(on_failure),
                list(after),
                list(parallel_with),
                list(notes),
            )
        )

    def build(self) -> tuple[Step, ...]:
        ordered = sorted(self.drafts, key=lambda d: PHASES.index(d.phase))  # stable
        numbers = {d.key: i + 1 for i, d in enumerate(ordered)}

        def resolve(keys: Sequence[str]) -> tuple[int, ...]:
            return tuple(sorted({numbers[k] for k in keys if k in numbers}))

        def ref(text: str) -> str:
            def number(m: re.Match[str]) -> str:
                if m.group(1) not in numbers:
                    raise ValueError(f"runbook text refers to a missing step {m.group(1)}")
                return f"step {numbers[m.group(1)]}"

            return STEP_REF.sub(number, text)

        out = []
        for d in ordered:
            after = resolve(d.after)
            if any(n >= numbers[d.key] for n in after):
                raise ValueError(f"runbook step {d.key} depends on a later step")
            out.append(
                Step(
                    number=numbers[d.key],
                    key=d.key,
                    phase=d.phase,
                    title=d.title,
                    why=ref(d.why),
                    commands=tuple(d.commands),
                    expected_s=d.expected_s,
                    duration=NOT_TIMED if d.expected_s is None else fmt_duration(d.expected_s),
                    basis=ref(d.basis),
                    checks=tuple(Check(ref(c.expect), c.command) for c in d.checks),
                    on_failure=tuple(ref(t) for t in d.on_failure),
                    after=after,
                    parallel_with=tuple(n for n in resolve(d.parallel_with) if n != numbers[d.key]),
                    notes=tuple(ref(t) for t in d.notes),
                )
            )
        return tuple(out)


@dataclass(frozen=True)
class _Pair:
    """Everything one runbook reads, gathered once."""

    design: Design
    primary: Site
    dr: Site
    pcfg: SiteConfig
    dcfg: SiteConfig
    flows: tuple[DataFlow, ...]
    pools: tuple[Pool, ...]
    credentials: tuple[CredentialKey, ...]

    @property
    def plan(self) -> Plan:
        return self.design.plan

    @property
    def dr_stack(self) -> str:
        return stack_name(self.plan, self.dr)

    @property
    def primary_stack(self) -> str:
        return stack_name(self.plan, self.primary)

    def dr_bucket(self, data_class: str) -> BucketConfig:
        return next(b for b in self.dcfg.buckets if b.data_class == data_class)

    def primary_bucket(self, data_class: str) -> BucketConfig | None:
        return next((b for b in self.pcfg.buckets if b.data_class == data_class), None)

    def flow(self, data_class: str) -> DataFlow | None:
        return next((f for f in self.flows if f.data_class == data_class), None)

    def dr_cluster(self, name: str) -> ClusterConfig:
        return next(c for c in self.dcfg.clusters if c.name == name)

    def primary_cluster(self, name: str) -> ClusterConfig | None:
        return next((c for c in self.pcfg.clusters if c.name == name), None)

    def dr_pool(self, pool: Pool) -> tuple[ClusterConfig, PoolConfig]:
        cluster = self.dr_cluster(pool.cluster)
        return cluster, next(p for p in cluster.pools if p.name == pool.name)

    @property
    def detection_s(self) -> float:
        return self.plan.recovery.detection_s

    @property
    def copies_back(self) -> tuple[DataFlow, ...]:
        """Flows whose DR copy the DR site writes to during a failover, and which live in two
        places (a dual-region bucket is one bucket in both regions: nothing to copy)."""
        written = set()
        if any(p.kind == "training" for p in self.pools):
            written.add("checkpoints")
        if any(p.kind == "service" for p in self.pools) or self.flow("weights"):
            written.add("weights")
        return tuple(
            f for f in self.flows if f.data_class in written and not f.mechanism.startswith("gcs-")
        )


def _pair(design: Design, primary: Site, dr: Site) -> _Pair:
    configs = build_site_configs(design)

    def order(f: DataFlow) -> int:
        return CLASS_ORDER.index(f.data_class)

    return _Pair(
        design=design,
        primary=primary,
        dr=dr,
        pcfg=configs[primary.name],
        dcfg=configs[dr.name],
        flows=tuple(
            sorted(
                (f for f in design.flows if f.primary == primary.name and f.dr == dr.name),
                key=order,
            )
        ),
        pools=tuple(p for p in design.pools if p.primary == primary.name and p.dr == dr.name),
        credentials=transfer_credential_keys(design, dr),
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
    name = f"{pair.primary.name}->{pair.dr.name}"
    rows = []
    for w in pair.design.workloads:
        if w.pair != name:
            continue
        rows.append(
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
            )
        )
    return tuple(rows)


def _variables(pair: _Pair) -> list[tuple[str, str]]:
    out = [
        (
            "PULUMI_BACKEND_URL",
            f"the state backend of {pair.dr_stack}; it must not live in {pair.primary.region}",
        )
    ]
    if pair.dr.cloud == "azure" or pair.primary.cloud == "azure":
        out.append(("AZURE_SUBSCRIPTION_ID", "the subscription of the Azure site(s)"))
    for p in pair.pools:
        v = var_name(p.name)
        if p.kind == "training":
            out += [
                (f"{v}_MANIFEST_DR", f"the {p.name} training job's manifest for {pair.dr.name}"),
                (f"{v}_MANIFEST_PRIMARY", f"the same job's manifest for {pair.primary.name}"),
                (f"{v}_NAMESPACE", "the namespace the job runs in"),
                (f"{v}_SELECTOR", "a label selector of the job's pods, e.g. app=trainer"),
            ]
        else:
            out += [
                (f"{v}_NAMESPACE", f"the namespace {p.name} runs in"),
                (f"{v}_SELECTOR", f"a label selector of {p.name}'s pods"),
                (f"{v}_HOSTNAME", f"the DNS name clients use for {p.name}"),
                (f"{v}_DR_HEALTH_URL", f"{p.name}'s health check URL at {pair.dr.name}"),
                (
                    f"{v}_PRIMARY_HEALTH_URL",
                    f"{p.name}'s health check URL at {pair.primary.name}",
                ),
            ]
            if p.pattern != "active-active":
                out.append((f"{v}_MANIFEST_DR", f"{p.name}'s manifest for {pair.dr.name}"))
    if pair.copies_back and pair.primary.cloud != pair.dr.cloud:
        out.append(
            (
                "STAGING",
                "a local directory, on a host in the DR region, with room for what is copied "
                "back (failback)",
            )
        )
    return out


# --- prepare -------------------------------------------------------------------------------------


def _cloud_login(cfg: SiteConfig) -> tuple[list[str], list[Check]]:
    if cfg.cloud == "aws":
        account = f"account {cfg.account}" if cfg.account else "the account that owns the stack"
        return (
            ["aws sso login  # or however your organisation signs in to AWS"],
            [Check(f'"Account" is {account}', "aws sts get-caller-identity")],
        )
    if cfg.cloud == "gcp":
        return (
            [
                "gcloud auth login",
                # The Pulumi GCP provider signs in with application default credentials.
                "gcloud auth application-default login",
            ],
            [
                Check(
                    f"prints {cfg.project}",
                    f"gcloud projects describe {cfg.project} --format='value(projectId)'",
                )
            ],
        )
    return (
        ["az login", 'az account set --subscription "$AZURE_SUBSCRIPTION_ID"'],
        [
            Check(
                "Succeeded",
                f"az group show --name {cfg.resource_group} --query properties.provisioningState "
                "--output tsv",
            )
        ],
    )


def _prepare(pair: _Pair, steps: _Steps, variables: list[tuple[str, str]]) -> None:
    dr, dcfg = pair.dr, pair.dcfg
    steps.add(
        "variables",
        "prepare",
        "Set what gpudr does not know",
        "Later commands use these variables; set them once in the shell you work in.",
        commands=[f"export {name}='<{what}>'" for name, what in variables],
        checks=[
            Check(
                "no line printed (every variable is set)",
                "for v in " + " ".join(n for n, _ in variables) + '; do [ -n "${!v}" ] '
                '|| echo "$v is not set"; done',
            )
        ],
        on_failure=["Set the missing variable; ask the owning team if you do not know it."],
    )
    commands, checks = _cloud_login(dcfg)
    steps.add(
        "cloud-login",
        "prepare",
        f"Sign in to {dr.cloud} (the DR cloud)",
        f"Every failover command runs against {dr.cloud} {dr.region}; nothing needs "
        f"{pair.primary.region}.",
        commands=commands,
        checks=checks,
        on_failure=[
            "Use the break-glass identity of the DR account/project/subscription if single "
            "sign-on depends on the primary region."
        ],
    )
    pulumi_checks = [
        Check(
            f"`Backend URL` is $PULUMI_BACKEND_URL, not in {pair.primary.region}",
            "pulumi whoami --verbose",
        ),
        Check(
            "`standby` (or `failover` if someone already switched)",
            f"pulumi config get gpudr:mode -s {pair.dr_stack}",
        ),
    ]
    notes = [
        "Work in a checkout of this repository: `pulumi` reads `Pulumi.yaml` and "
        f"`stacks/Pulumi.{pair.dr_stack}.yaml` from it and runs the program in `.venv` "
        "(`make setup` creates it)."
    ]
    on_failure = [
        "Backend unreachable: it lives in the failed region or depends on it; use the DR copy "
        "of the state (see the README, 'Deploying for real').",
        f"`error: no stack named '{pair.dr_stack}'`: you are logged in to the wrong backend.",
    ]
    if pair.credentials:
        listed = ", ".join(
            f"`{c.key}`" + (" (shown as `[secret]`)" if c.secret else "") for c in pair.credentials
        )
        pulumi_checks.append(
            Check(
                f"lists {listed}: the sign-in of the scheduled pulls, copied from the primary",
                f"pulumi config -s {pair.dr_stack}",
            )
        )
        on_failure.append(
            "A credential key is missing: copy it with the commands below if the primary's state "
            "backend answers. Without it, the next `pulumi up` on the DR stack removes the "
            "scheduled pulls (never the data). "
            + " ".join(f"`{c.command(pair.dr_stack)}`" for c in pair.credentials)
        )
    steps.add(
        "pulumi-login",
        "prepare",
        "Log in to the DR stack's state backend",
        f"`pulumi up -s {pair.dr_stack}` is the failover switch; its state must be readable "
        "with the primary region gone.",
        commands=['pulumi login "$PULUMI_BACKEND_URL"'],
        checks=pulumi_checks,
        on_failure=on_failure,
        notes=notes,
    )
    standing = [c for c in dcfg.clusters if c.standby_control_plane]
    if standing:
        commands = [cmd for c in standing for cmd in credentials_commands(dcfg, c)]
        checks = [
            Check(
                f"lists the {c.name} cluster's nodes (an empty list is fine for a pilot light)",
                f"kubectl --context {kube_context(dcfg, c)} get nodes -L {POOL_LABEL}",
            )
            for c in standing
        ]
        steps.add(
            "kubectl",
            "prepare",
            f"Get kubectl access to the DR cluster{'s' if len(standing) > 1 else ''}",
            "Every kubectl command below names its context: the primary's cluster may still be "
            "in your kubeconfig.",
            commands=commands,
            checks=checks,
            on_failure=_kube_access_help(dcfg),
        )


def _kube_access_help(cfg: SiteConfig) -> list[str]:
    out = []
    if not cfg.api_public_cidrs:
        out.append(
            f"The API server is private: run kubectl from a host inside {cfg.cidr} (or a "
            "network peered with it)."
        )
    if cfg.cloud == "aws":
        for c in cfg.clusters:
            out.append(
                "`Unauthorized`: your IAM principal needs an EKS access entry (the deployer has "
                "one); this lists them: "
                f"`aws eks list-access-entries --cluster-name {c.eks_name} --region {cfg.region}`"
            )
    if cfg.cloud == "gcp":
        out.append("`gke-gcloud-auth-plugin` must be installed for kubectl to sign in.")
    if cfg.cloud == "azure":
        out.append(
            "`Forbidden`: you need an Azure Kubernetes Service RBAC role on the cluster "
            "(local accounts are disabled)."
        )
    return out


# --- failover ------------------------------------------------------------------------------------


def _declare(pair: _Pair, steps: _Steps) -> None:
    p, pcfg = pair.primary, pair.pcfg
    checks = [
        Check(
            f"fails or times out (the primary cluster {c.eks_name} does not answer)",
            cluster_status(pcfg, c).command,
        )
        for c in pcfg.clusters
    ]
    for b in pcfg.buckets[:1]:
        checks.append(Check("fails or times out", bucket_reachable(pcfg, b)))
    steps.add(
        "declare",
        "failover",
        f"Declare the disaster: {p.name} ({p.cloud} {p.region}) is lost",
        "The decision starts the clock. Record when the primary failed: the data age of every "
        "replica below is measured from it.",
        commands=["export DISASTER_AT='<UTC time of the first alarm, e.g. 2025-01-31T03:12:00Z>'"],
        expected_s=pair.detection_s,
        basis="detection stage: alarm to decision, recovery.detection",
        checks=checks,
        on_failure=[
            "The primary answers: this is not a regional loss. Do not fail over; work the "
            "incident at the primary.",
            f"Check {STATUS_PAGES[p.cloud]} for the provider's view of {p.region}.",
        ]
        + (
            [
                "If the primary half-works, stop training there (your job's own command) before "
                "{step:capacity}, so that only one site writes checkpoints."
            ]
            if pair.pools
            else []
        ),
        parallel_with=["variables", "cloud-login", "pulumi-login", "kubectl"],
    )


def _pause_pulls(pair: _Pair, steps: _Steps) -> None:
    scheduled = [f for f in pair.flows if f.mechanism in ("sts", "datasync")]
    if not scheduled:
        return
    commands: list[str] = []
    checks: list[Check] = []
    dcfg = pair.dcfg
    for f in scheduled:
        b = pair.dr_bucket(f.data_class)
        for t in b.inbound:
            commands += [pull_lookup(dcfg, b, f, t), pull_schedule(dcfg, f, t, enabled=False)]
        checks.append(Check(f"{f.data_class}: `DISABLED`", pull_status(dcfg, f)))
    mirrors = any(f.data_class == "checkpoints" for f in scheduled)
    why = (
        "The pulls from the primary run on a schedule. Once the DR site writes its own data, a "
        "run against a returning primary would overwrite it"
        + (
            ", and the checkpoint pull mirrors deletes: it would delete every checkpoint the DR "
            "site wrote"
            if mirrors
            else ""
        )
        + ". Stop them now; failback starts them again after the copy back."
    )
    steps.add(
        "pause-pulls",
        "failover",
        "Stop the scheduled pulls from the primary",
        why,
        commands=commands,
        checks=checks,
        on_failure=[
            "A variable is empty: that pull was never declared (its credentials were not set); "
            "nothing to stop.",
            "Already disabled by the service after repeated failures: fine.",
        ],
        after=["declare"],
        notes=[
            f"Do not run `pulumi refresh` or `pulumi up --refresh` on {pair.dr_stack} until "
            "failback: a refresh reads the disabled schedule and the next update enables it again."
        ],
    )


def _data_checks(
    pair: _Pair, f: DataFlow, b: BucketConfig
) -> tuple[list[str], list[Check], list[str]]:
    """Commands, checks and failure advice that show the DR copy of one class is usable."""
    dcfg = pair.dcfg
    key = key_var(f.data_class)
    ref = f"${key}"
    est = f.estimate.estimated_s
    age = fmt_duration(est)
    commands = [list_newest(dcfg, b)]
    checks: list[Check] = []
    advice: list[str] = []
    if f.data_class == "checkpoints":
        commands += [
            "export CKPT='<prefix of the newest complete checkpoint in the listing>'",
            f"export {key}='<one object of $CKPT; repeat the checks for each object it has>'",
        ]
    elif f.data_class == "weights":
        commands.append(f"export {key}='<the weights version to serve, as the registry names it>'")
    else:
        commands.append(f"export {key}='<the newest object in the listing>'")
    if est is None:
        checks.append(
            Check(
                f"the listing shows objects; {f.mechanism} guarantees no replication time, so "
                "their age is whatever it is (the plan sets no RPO it could miss)",
                "",
            )
        )
    elif est == 0:
        checks.append(
            Check(
                "the listing holds every version the registry lists as published: the writer "
                "reported a publish only once both copies existed (RPO 0)",
                "",
            )
        )
    else:
        checks.append(
            Check(
                f"the newest object in the listing was written after $DISASTER_AT minus {age} "
                f"(the plan's estimated RPO; target {fmt_duration(f.rpo_s)})",
                "",
            )
        )
    if f.mechanism in ("crr-rtc", "crr"):
        checks.append(
            Check(
                '"ReplicationStatus": "REPLICA" and the stored checksum',
                describe_object(dcfg, b, ref),
            )
        )
        source = pair.primary_bucket(f.data_class)
        if source is not None:
            checks.append(
                Check(
                    "only if the primary region still answers: `COMPLETED` (replicated)",
                    f'aws s3api head-object --bucket {source.name} --key "{ref}" '
                    f"--region {pair.primary.region} --query ReplicationStatus",
                )
            )
    else:
        checks.append(
            Check(
                "size and stored checksums match your manifest where it records them",
                describe_object(dcfg, b, ref),
            )
        )
    if f.mechanism.startswith("gcs-"):
        checks.append(
            Check(
                f"`{_rpo_setting(f)}`",
                f"gcloud storage buckets describe gs://{b.name} --format='value(rpo)'",
            )
        )
        advice.append(
            f"One bucket spans {pair.primary.region} and {pair.dr.region}: objects written just "
            "before the loss may not have reached this region; use the newest complete one."
        )
    if f.mechanism in ("sts", "datasync"):
        interval = f.schedule.interval_s if f.schedule else None
        runs = "run" if f.mechanism == "sts" else "execution"
        for t in b.inbound:
            checks.append(
                Check(
                    f"the newest `SUCCESS` {runs} started no more than "
                    f"{fmt_duration(interval)} (the schedule) before $DISASTER_AT; what it "
                    "copied is as old as its start",
                    pull_lookup(dcfg, b, f, t) + " && " + pull_runs(dcfg, f, 5),
                )
            )
        if f.mechanism == "datasync":
            checks.append(
                Check(
                    "`SUCCESS`, with `FilesVerified` equal to `FilesTransferred` (DataSync "
                    "checked what it copied)",
                    "aws datasync describe-task-execution --task-execution-arn "
                    f"'<the newest SUCCESS execution above>' --region {dcfg.region} --query "
                    "'{status:Status,start:StartTime,transferred:FilesTransferred,"
                    "verified:FilesVerified}'",
                )
            )
    if f.mechanism == "azure-or":
        checks.append(
            Check(
                "the object replication policy is listed",
                f"az storage account or-policy list --account-name {b.storage_account} "
                f"--resource-group {dcfg.resource_group} --output table",
            )
        )
    if f.data_class in ("checkpoints", "weights"):
        checks.append(
            Check(
                f"equals the sha256 your manifest (or model registry) recorded for {ref}",
                hash_object(dcfg, b, ref),
            )
        )
    if f.data_class == "weights" and dcfg.cloud == "aws":
        checks.append(
            Check(
                '"Mode": "COMPLIANCE" (Object Lock: this version cannot be deleted)',
                f'aws s3api get-object-retention --bucket {b.name} --key "{ref}" '
                f"--region {dcfg.region}",
            )
        )
    if f.data_class == "weights" and dcfg.cloud == "gcp":
        checks.append(
            Check(
                "a retention policy that is locked (Bucket Lock)",
                f"gcloud storage buckets describe gs://{b.name} --format='yaml(retention_policy)'",
            )
        )
    c = pair.plan.checkpoints
    if f.data_class == "checkpoints" and c is not None:
        advice.append(
            "A checksum differs or an object is missing: take the previous checkpoint (the "
            f"bucket keeps the last {c.keep}) and verify it the same way; each one back loses "
            f"another {fmt_duration(c.interval_s)} of training."
        )
    if f.data_class == "weights":
        advice.append(
            "A checksum differs: serve the previous verified version. Never overwrite a locked "
            "version (it is refused, as intended)."
        )
    if f.mechanism == "dual-write" and est:
        advice.append(
            f"Newest object older than {age}: the writer stopped writing before the loss; the "
            "data is as old as its last write."
        )
    elif est:
        advice.append(
            f"Newest object older than {age}: replication was behind before the loss. There is "
            "no newer copy at the DR site: the incident lead decides whether to go on with it."
        )
    if dcfg.cloud == "azure":
        advice.append(
            "`AuthorizationPermissionMismatch`: you need Storage Blob Data Reader on the account "
            "(shared keys are disabled; `--auth-mode login` is the only way in)."
        )
    return commands, checks, advice


def _rpo_setting(f: DataFlow) -> str:
    """A dual-region bucket's `rpo` as GCS reports it."""
    return "ASYNC_TURBO" if f.mechanism == "gcs-turbo" else "DEFAULT"


def _data(pair: _Pair, steps: _Steps) -> None:
    for f in pair.flows:
        b = pair.dr_bucket(f.data_class)
        commands, checks, advice = _data_checks(pair, f, b)
        expected = None
        if f.estimated_rto_s is not None:
            expected = max(0.0, f.estimated_rto_s - pair.detection_s)
            basis = (
                f"the plan's {f.data_class} RTO ({fmt_duration(f.estimated_rto_s)}) less "
                "detection: one node reads the working set"
            )
        else:
            basis = f"no RTO for {f.data_class} in the plan; it does not hold up recovery"
        what = {
            "checkpoints": "find the newest complete checkpoint and verify it",
            "datasets": "check the replica caught up",
            "weights": "verify the version to serve",
        }[f.data_class]
        use = {
            "checkpoints": "Training restarts from the checkpoint verified here.",
            "datasets": "Training reads them; they must have caught up.",
            "weights": "The services serve the version verified here.",
        }[f.data_class]
        scaling = (
            " If {step:capacity} has not started, start it first: this step runs while it scales."
        )
        steps.add(
            f"data:{f.data_class}",
            "failover",
            f"{f.data_class.capitalize()} at {pair.dr.name}: {what}",
            f"{storage_url(pair.dcfg, b)} holds the {f.data_class} ({f.mechanism}). {use}"
            + (scaling if pair.pools else ""),
            commands=commands,
            expected_s=expected,
            basis=basis,
            checks=checks,
            on_failure=advice,
            after=["declare"] + (["pause-pulls"] if f.mechanism in ("sts", "datasync") else []),
            parallel_with=["capacity"] + [f"data:{o.data_class}" for o in pair.flows],
            notes=_data_notes(pair, f),
        )


def _data_notes(pair: _Pair, f: DataFlow) -> list[str]:
    notes = []
    if f.mechanism == "dual-write":
        notes.append(
            f"Writers of {f.data_class} must write both copies before they report success; with "
            f"{pair.primary.name} gone none can. Point them at the {pair.dr.name} copy only "
            "until failback switches them back ({step:fb:replication})."
        )
    if f.data_class == "datasets" and pair.plan.datasets:
        notes.append(
            "The listing reads every object's metadata: on "
            f"{fmt_size(pair.plan.datasets.size_b)} of datasets it takes a while, and holds "
            "up nothing else."
        )
    return notes


def _capacity(pair: _Pair, steps: _Steps) -> None:
    if not pair.pools:
        return
    dcfg, stack = pair.dcfg, pair.dr_stack
    stages = {p.name: p.chosen.stages for p in pair.pools}
    per_pool = {n: s["infrastructure"] + s["capacity"] for n, s in stages.items()}
    expected = max(per_pool.values())
    commands = [
        f"pulumi config set gpudr:mode failover -s {stack}",
        f"pulumi up -s {stack} --policy-pack {POLICY_PACK}",
    ]
    created = sorted(
        {p.cluster for p in pair.pools if not pair.dr_cluster(p.cluster).standby_control_plane}
    )
    for name in created:
        commands += credentials_commands(dcfg, pair.dr_cluster(name))
    checks = [Check("`failover`", f"pulumi stack output mode -s {stack}")]
    for p in pair.pools:
        cluster, pool = pair.dr_pool(p)
        ctx = kube_context(dcfg, cluster)
        checks += [
            pool_size_check(dcfg, cluster, pool, pool.nodes, pool.nodes, pool.nodes),
            Check(f"{pool.nodes} ({pool.name}: nodes Ready)", ready_nodes(ctx, pool.name)),
            Check(
                f"{pool.gpus_per_node} GPUs on every {pool.name} node",
                gpus_per_node(ctx, pool.name),
            ),
        ]
    basis = "; ".join(
        f"{n} ({p.pattern}): infrastructure {fmt_duration(stages[n]['infrastructure'])} + "
        f"capacity {fmt_duration(stages[n]['capacity'])}"
        for n, p in ((q.name, q) for q in pair.pools)
    )
    sizes = ", ".join(f"{p.name} {p.standing} -> {p.nodes} nodes" for p in pair.pools)
    on_failure = [
        "`pulumi up` stopped part-way: run the same command again; it continues from its state.",
        "A mandatory policy refused the update: the message names the resource and the rule; "
        "fix the config, do not drop `--policy-pack` without the incident lead's decision.",
    ]
    trouble = list(dict.fromkeys(pool_trouble(dcfg, *pair.dr_pool(p)) for p in pair.pools))
    on_failure.append(
        "A pool stays below its size: the reason (usually no GPU capacity in the zone) shows in "
        + "; ".join(f"`{cmd}`" for cmd in trouble)
        + ". Start the workloads on the nodes there are if they allow it, and ask the provider "
        "for capacity (`reserve_capacity: true` in the plan makes it certain next time)."
    )
    if dcfg.cloud in ("gcp", "azure"):
        on_failure.append(
            "Fewer nodes than the new minimum and no error: the cluster autoscaler may add nodes "
            "only for pending pods; start the workloads (next steps) and check again."
        )
    if dcfg.cloud == "aws":
        on_failure.append(
            "Nodes Ready but no GPUs: the NVIDIA device plugin is not running on the cluster; "
            "install it (it is not part of the stack)."
        )
    steps.add(
        "capacity",
        "failover",
        f"Scale the GPU pools at {pair.dr.name} to full size",
        f"The failover switch of stack {stack}: every DR pool goes to the primary's size "
        f"({sizes}). Start it as soon as the disaster is declared; the data steps run while it "
        "scales. In the preview, expect only GPU pool sizes to change"
        + (" and the backup/restore cluster to be created" if created else "")
        + "; answer `yes`.",
        commands=commands,
        expected_s=expected,
        basis=basis,
        checks=checks,
        on_failure=on_failure,
        after=["declare", "pulumi-login"],
        parallel_with=[f"data:{f.data_class}" for f in pair.flows],
    )


def _training(pair: _Pair, steps: _Steps) -> None:
    dcfg = pair.dcfg
    data_after = [f"data:{c}" for c in ("checkpoints", "datasets") if pair.flow(c)]
    for p in pair.pools:
        if p.kind != "training":
            continue
        cluster, pool = pair.dr_pool(p)
        ctx = kube_context(dcfg, cluster)
        v = var_name(p.name)
        s = p.chosen.stages
        ckpt = pair.flow("checkpoints")
        where = (
            f"{storage_url(dcfg, pair.dr_bucket('checkpoints'))}/$CKPT"
            if ckpt
            else "its checkpoint"
        )
        datasets = storage_url(dcfg, pair.dr_bucket("datasets")) if pair.flow("datasets") else None
        needs = [
            f"a node selector `{POOL_LABEL}: {pool.name}` and a toleration for `{GPU_TAINT}`",
            f"{pool.nodes} nodes x {pool.gpus_per_node} GPUs",
            f"restore from {where} (verified in {{step:data:checkpoints}})"
            if ckpt
            else "restore from wherever the job keeps its checkpoints (the plan protects none)",
        ]
        if datasets:
            needs.append(f"read datasets from {datasets}")
        needs.append(
            "write new checkpoints to "
            + (storage_url(dcfg, pair.dr_bucket("checkpoints")) if ckpt else "the DR site")
        )
        steps.add(
            f"training:{p.name}",
            "failover",
            f"Restart training {p.name}" + (" from the verified checkpoint" if ckpt else ""),
            "The job needs both the GPUs and the verified data. Its DR manifest "
            f"(${v}_MANIFEST_DR) must have: " + "; ".join(needs) + ".",
            commands=[f'kubectl --context {ctx} apply -f "${v}_MANIFEST_DR"'],
            expected_s=s["staging"] + s["restart"],
            basis=f"staging {fmt_duration(s['staging'])} (the checkpoint read by all "
            f"{pool.nodes} nodes) + restart {fmt_duration(s['restart'])}",
            checks=[
                Check(
                    f"every pod Running, on nodes of pool {pool.name}",
                    f'kubectl --context {ctx} get pods -n "${v}_NAMESPACE" -l "${v}_SELECTOR" '
                    "-o wide",
                ),
            ]
            + (
                [
                    Check(
                        "the job restored the step of $CKPT",
                        f'kubectl --context {ctx} logs -n "${v}_NAMESPACE" -l "${v}_SELECTOR" '
                        "--tail=200 | grep -i checkpoint",
                    )
                ]
                if ckpt
                else []
            )
            + (
                [
                    Check(
                        "a checkpoint newer than $CKPT appears after one interval "
                        f"({fmt_duration(pair.plan.checkpoints.interval_s)})",
                        list_newest(dcfg, pair.dr_bucket("checkpoints")),
                    )
                ]
                if ckpt and pair.plan.checkpoints
                else []
            ),
            on_failure=[
                f'Pods Pending: `kubectl --context {ctx} describe pods -n "${v}_NAMESPACE" '
                f'-l "${v}_SELECTOR"` names the reason (missing toleration, not enough GPUs).',
                "Access denied reading the bucket: the job's identity at the DR site needs read "
                "and write on it (workload identity / pod identity is yours to bind).",
            ]
            + (
                [
                    "The restore fails its own checksum: go back to {step:data:checkpoints} and "
                    "take the previous checkpoint."
                ]
                if ckpt
                else []
            ),
            after=["capacity", *data_after],
        )


def _services(pair: _Pair, steps: _Steps) -> None:
    dcfg = pair.dcfg
    weights = pair.flow("weights")
    for p in pair.pools:
        if p.kind != "service":
            continue
        cluster, pool = pair.dr_pool(p)
        ctx = kube_context(dcfg, cluster)
        v = var_name(p.name)
        s = p.chosen.stages
        serving = p.pattern == "active-active"
        commands = [] if serving else [f'kubectl --context {ctx} apply -f "${v}_MANIFEST_DR"']
        verified = (
            "the version verified in {step:data:weights}"
            if weights
            else "the weights it keeps itself (the plan protects none)"
        )
        steps.add(
            f"service:{p.name}",
            "failover",
            f"{p.name}: {'check it serves' if serving else 'start it'}"
            + (f"{' with' if not serving else ''} the verified weights" if weights else ""),
            (
                f"{p.name} is active-active: its {pool.nodes} nodes at {pair.dr.name} already "
                f"serve. Check they serve {verified} before more traffic reaches them."
                if serving
                else f"{p.name} ({p.pattern}) starts on the scaled pool, loading {verified}."
            )
            + f" Pods need `{POOL_LABEL}: {pool.name}` and a toleration for `{GPU_TAINT}`.",
            commands=commands,
            expected_s=s["staging"] + s["restart"],
            basis=f"staging {fmt_duration(s['staging'])} + restart {fmt_duration(s['restart'])}"
            + (
                "; active-active: already loaded and serving"
                if serving
                else "; one node reads the weights"
            ),
            checks=[
                Check(
                    f"every pod Running and Ready, on nodes of pool {pool.name}",
                    f'kubectl --context {ctx} get pods -n "${v}_NAMESPACE" -l "${v}_SELECTOR" '
                    "-o wide",
                ),
                Check(
                    "`200`",
                    f"curl -sS -o /dev/null -w '%{{http_code}}\\n' \"${v}_DR_HEALTH_URL\"",
                ),
            ]
            + (
                [
                    Check(
                        "the weights version the service reports is $WEIGHTS_KEY, verified in "
                        "{step:data:weights}",
                        f'kubectl --context {ctx} logs -n "${v}_NAMESPACE" -l "${v}_SELECTOR" '
                        "--tail=200 | grep -i weights",
                    )
                ]
                if weights
                else []
            ),
            on_failure=[
                f'Pods not Ready: `kubectl --context {ctx} describe pods -n "${v}_NAMESPACE" '
                f'-l "${v}_SELECTOR"`.',
            ]
            + (
                [
                    "Wrong weights version: roll the deployment to $WEIGHTS_KEY before moving "
                    "traffic."
                ]
                if weights
                else []
            ),
            after=["capacity"] + (["data:weights"] if weights else []),
        )
        steps.add(
            f"traffic:{p.name}",
            "failover",
            f"{p.name}: move client traffic to {pair.dr.name}",
            "gpudr manages no DNS record or global load balancer: this switch is your own "
            f"change (DNS record, load balancer pool, or CDN origin) pointing ${v}_HOSTNAME at "
            f"{p.name} in {pair.dr.name}. The plan allows "
            f"{fmt_duration(s['traffic_shift'])} for it (recovery.traffic_shift): the record's "
            "TTL must not be longer.",
            commands=[
                f"# your DNS / load balancer change: ${v}_HOSTNAME -> {p.name} at {pair.dr.name}"
            ],
            expected_s=s["traffic_shift"],
            basis="traffic_shift stage, recovery.traffic_shift",
            checks=[
                Check(
                    f"the address or name of {p.name}'s endpoint at {pair.dr.name}",
                    f'dig +short "${v}_HOSTNAME"',
                ),
                Check(
                    "`200`, from outside both clouds",
                    f"curl -sS -o /dev/null -w '%{{http_code}}\\n' \"https://${v}_HOSTNAME/\"",
                ),
            ],
            on_failure=[
                "Clients still reach the primary: resolvers cache the old record up to its TTL; "
                "wait one TTL and check again.",
                "Errors at the DR endpoint: move the traffic back only if the primary serves; "
                f"otherwise go back to {{step:service:{p.name}}}.",
            ],
            after=[f"service:{p.name}"],
        )


# --- failback ------------------------------------------------------------------------------------


def _copy_commands(pair: _Pair, f: DataFlow) -> tuple[list[str], list[Check]]:
    """Copy what the DR site holds for one class back into the primary's bucket, never deleting
    and never overwriting at the destination, and the checks that nothing is left to copy."""
    dcfg, pcfg = pair.dcfg, pair.pcfg
    src = pair.dr_bucket(f.data_class)
    dst = pair.primary_bucket(f.data_class)
    if dst is None:
        return [], []
    s_url, d_url = storage_url(dcfg, src), storage_url(pcfg, dst)
    pair_clouds = (dcfg.cloud, pcfg.cloud)
    if pair_clouds == ("aws", "aws"):
        base = f"aws s3 sync {s_url} {d_url} --source-region {dcfg.region} --region {pcfg.region}"
        return [base], [Check("no line printed: nothing left to copy", f"{base} --dryrun")]
    if pair_clouds == ("gcp", "gcp"):
        base = f"gcloud storage rsync {s_url} {d_url} --recursive --no-clobber"
        return [base], [Check("no `Would copy` line: nothing left", f"{base} --dry-run")]
    if pair_clouds == ("azure", "azure"):
        base = f"azcopy copy '{s_url}/*' '{d_url}' --recursive --overwrite=false"
        return ["azcopy login", base], [
            Check("0 transfers listed: nothing left", f"{base} --dry-run")
        ]
    # Across clouds no CLI signs in to both: stage on local disk, each side with its own CLI
    # and its usual sign-in (no access key of one cloud stored for the other's tools).
    local = f'"$STAGING/{f.data_class}"'
    commands = [f"mkdir -p {local}"]
    if dcfg.cloud == "aws":
        commands.append(f"aws s3 sync {s_url} {local} --region {dcfg.region}")
    elif dcfg.cloud == "gcp":
        commands.append(f"gcloud storage rsync {s_url} {local} --recursive")
    else:
        commands += ["azcopy login", f"azcopy copy '{s_url}/*' {local} --recursive"]
    if pcfg.cloud == "aws":
        up = f"aws s3 sync {local} {d_url} --size-only --region {pcfg.region}"
        check = Check("no line printed: nothing left to copy", f"{up} --dryrun")
    elif pcfg.cloud == "gcp":
        up = f"gcloud storage rsync {local} {d_url} --recursive --no-clobber"
        check = Check("no `Would copy` line: nothing left", f"{up} --dry-run")
    else:
        up = f"azcopy copy \"$STAGING/{f.data_class}/*\" '{d_url}' --recursive --overwrite=false"
        if "azcopy login" not in commands:
            commands.append("azcopy login")
        check = Check("0 transfers listed: nothing left", f"{up} --dry-run")
    commands.append(up)
    return commands, [check]


def _failback(pair: _Pair, steps: _Steps) -> None:
    p, pcfg, dcfg = pair.primary, pair.pcfg, pair.dcfg
    trainings = [q for q in pair.pools if q.kind == "training"]
    commands, checks = _cloud_login(pcfg) if p.cloud != pair.dr.cloud else ([], [])
    commands += [cmd for c in pcfg.clusters for cmd in credentials_commands(pcfg, c)]
    checks += [cluster_status(pcfg, c) for c in pcfg.clusters]
    checks += [Check(f"{b.data_class}: answers", bucket_reachable(pcfg, b)) for b in pcfg.buckets]
    for q in trainings:
        c = pair.primary_cluster(q.cluster)
        if c is not None:
            v = var_name(q.name)
            checks.append(
                Check(
                    f"no pod: training {q.name} did not restart on its own at {p.name} (it "
                    f"would write checkpoints older than {pair.dr.name}'s; stop it if it did)",
                    f'kubectl --context {kube_context(pcfg, c)} get pods -n "${v}_NAMESPACE" '
                    f'-l "${v}_SELECTOR"',
                )
            )
    checks.append(
        Check(
            "the preview proposes no replacement or deletion of a bucket, key or cluster",
            f"pulumi preview -s {pair.primary_stack} --refresh --policy-pack {POLICY_PACK}",
        )
    )
    steps.add(
        "fb:primary-healthy",
        "failback",
        f"Confirm {p.name} ({p.cloud} {p.region}) is healthy again",
        "Fail back only to a region the provider reports recovered "
        f"({STATUS_PAGES[p.cloud]}) and whose data survived: its buckets and keys are "
        "protected from deletion, so they should all be there.",
        commands=commands,
        checks=checks,
        on_failure=[
            "A bucket or key is missing, or the preview wants to replace one: stop, do not fail "
            "back; the primary's data needs repair first.",
            "The provider still reports the region degraded: stay on the DR site.",
            *_kube_access_help(pcfg),
        ],
        after=[f"{'training' if q.kind == 'training' else 'traffic'}:{q.name}" for q in pair.pools]
        or [f"data:{f.data_class}" for f in pair.flows],
    )
    if trainings:
        stop_cmds = []
        for q in trainings:
            cluster, _ = pair.dr_pool(q)
            v = var_name(q.name)
            stop_cmds.append(
                f'kubectl --context {kube_context(dcfg, cluster)} delete -f "${v}_MANIFEST_DR"'
            )
        steps.add(
            "fb:stop-dr-training",
            "failback",
            f"Stop training at {pair.dr.name} after its next checkpoint",
            "The copy back must hold the last checkpoint the DR site wrote, and nothing may "
            "write after it. Wait until a new checkpoint is complete (the job's log says so), "
            "then stop the job.",
            commands=stop_cmds,
            checks=[
                Check(
                    "no pod left",
                    f"kubectl --context {kube_context(dcfg, pair.dr_pool(q)[0])} get pods "
                    f'-n "${var_name(q.name)}_NAMESPACE" -l "${var_name(q.name)}_SELECTOR"',
                )
                for q in trainings
            ],
            on_failure=["Pods remain: delete them by selector with the same context."],
            after=["fb:primary-healthy"],
        )
    copied = []
    for f in pair.copies_back:
        commands, checks = _copy_commands(pair, f)
        if not commands:
            continue
        dst = pair.primary_bucket(f.data_class)
        assert dst is not None
        checks.append(
            Check(
                f"equals the sha256 in your manifest (registry) for ${key_var(f.data_class)}, as "
                f"in {{step:data:{f.data_class}}}",
                hash_object(pcfg, dst, f"${key_var(f.data_class)}"),
            )
        )
        size = ""
        spec = pair.plan.checkpoints
        if f.data_class == "checkpoints" and spec and pair.primary.cloud != pair.dr.cloud:
            size = (
                f" $STAGING needs room for the bucket's last {spec.keep} checkpoints, "
                f"{fmt_size(spec.keep * spec.size_b / spec.compression_ratio)} as stored."
            )
        notes = []
        if f.mechanism in ("crr-rtc", "crr"):
            notes.append(
                "S3 replication copies what lands in the primary bucket to the DR bucket again "
                "as new versions of the same objects: expected."
            )
        if f.data_class == "weights":
            notes.append(
                "Weights are immutable (Object Lock, locked retention or version immutability): "
                "a delete or an overwrite of a locked version is refused, as intended. That is "
                "why the copy never deletes and never overwrites."
            )
        key = f"fb:copy:{f.data_class}"
        copied.append(key)
        steps.add(
            key,
            "failback",
            f"Copy {f.data_class} written at {pair.dr.name} back to {p.name}",
            f"During the failover {pair.dr.name} wrote "
            + ("checkpoints" if f.data_class == "checkpoints" else "weights versions")
            + f" that {p.name} does not have ({storage_url(dcfg, pair.dr_bucket(f.data_class))}"
            f" -> {storage_url(pcfg, dst)}). The copy adds, never deletes or overwrites." + size,
            commands=commands,
            checks=checks,
            on_failure=[
                "A transfer fails with access denied: your identity needs write on the primary "
                "bucket and read on the DR bucket.",
                "A checksum differs at the primary: delete nothing; copy that object again and "
                "compare again.",
            ],
            after=["fb:primary-healthy"]
            + (["fb:stop-dr-training"] if f.data_class == "checkpoints" and trainings else []),
            parallel_with=[k for k in (f"fb:copy:{o.data_class}" for o in pair.copies_back)],
            notes=notes,
        )
    dual_region = [f.data_class for f in pair.flows if f.mechanism.startswith("gcs-")]
    steps.add(
        "fb:primary-up",
        "failback",
        f"Update the primary stack {pair.primary_stack}",
        "Brings the primary's infrastructure back to what the plan declares (GPU pools, "
        "replication rules, links) after the outage."
        + (
            f" {', '.join(dual_region)} live in one dual-region bucket: nothing to copy."
            if dual_region
            else ""
        ),
        commands=[f"pulumi up -s {pair.primary_stack} --policy-pack {POLICY_PACK}"],
        checks=[
            Check(
                "`no changes` and no policy violation: the stack is what the plan declares",
                f"pulumi preview -s {pair.primary_stack} --policy-pack {POLICY_PACK} "
                "--expect-no-changes",
            ),
            *(
                Check(
                    f"{q.nodes} ({q.name}: nodes Ready at {p.name})",
                    ready_nodes(kube_context(pcfg, c), q.name),
                )
                for c in pcfg.clusters
                for q in c.pools
            ),
        ],
        on_failure=[
            "Run the same command again: it continues from its state.",
            "No GPU capacity at the primary: stay on the DR site until there is.",
        ],
        after=["fb:primary-healthy", *copied],
    )
    resumed = []
    for q in trainings:
        c = pair.primary_cluster(q.cluster)
        if c is None:
            continue
        ctx = kube_context(pcfg, c)
        v = var_name(q.name)
        key = f"fb:training:{q.name}"
        resumed.append(key)
        dst = pair.primary_bucket("checkpoints")
        steps.add(
            key,
            "failback",
            f"Resume training {q.name} at {p.name}",
            "From the newest checkpoint copied back"
            + (f" ({storage_url(pcfg, dst)})" if dst else "")
            + f"; ${v}_MANIFEST_PRIMARY must restore from it.",
            commands=[f'kubectl --context {ctx} apply -f "${v}_MANIFEST_PRIMARY"'],
            checks=[
                Check(
                    "every pod Running",
                    f'kubectl --context {ctx} get pods -n "${v}_NAMESPACE" -l "${v}_SELECTOR" '
                    "-o wide",
                ),
                Check(
                    f"the job restored the step of the last checkpoint written at {pair.dr.name}",
                    f'kubectl --context {ctx} logs -n "${v}_NAMESPACE" -l "${v}_SELECTOR" '
                    "--tail=200 | grep -i checkpoint",
                ),
            ],
            on_failure=[
                "It restored an older step: the copy back is incomplete"
                + (
                    "; repeat {step:fb:copy:checkpoints}."
                    if "fb:copy:checkpoints" in copied
                    else "."
                )
            ],
            after=["fb:primary-up", "fb:stop-dr-training"],
        )
    moved = []
    for q in pair.pools:
        if q.kind != "service":
            continue
        v = var_name(q.name)
        key = f"fb:traffic:{q.name}"
        moved.append(key)
        steps.add(
            key,
            "failback",
            f"{q.name}: move client traffic back to {p.name}",
            "Your own DNS / load balancer change, as in the failover, in reverse. Check the "
            "primary serves the newest weights first (copied back above).",
            commands=[f"# your DNS / load balancer change: ${v}_HOSTNAME -> {q.name} at {p.name}"],
            checks=[
                Check(
                    "`200` from the primary before the switch",
                    f"curl -sS -o /dev/null -w '%{{http_code}}\\n' \"${v}_PRIMARY_HEALTH_URL\"",
                ),
                Check(
                    f"the address or name of {q.name} at {p.name}", f'dig +short "${v}_HOSTNAME"'
                ),
            ],
            on_failure=["The primary fails its health check: leave traffic at the DR site."],
            after=["fb:primary-up"],
        )
    if pair.pools:
        stack = pair.dr_stack
        stop = [f"{q.name} ({q.pattern}): {q.standing} of {q.nodes} nodes" for q in pair.pools]
        checks = [Check("`standby`", f"pulumi stack output mode -s {stack}")]
        removed: set[str] = set()
        for q in pair.pools:
            cluster, pool = pair.dr_pool(q)
            if not cluster.standby_control_plane:
                if cluster.name not in removed:
                    removed.add(cluster.name)
                    checks.append(
                        Check(
                            f"fails: the backup/restore cluster {cluster.eks_name} is removed in "
                            "standby, as the plan declares",
                            cluster_status(dcfg, cluster).command,
                        )
                    )
                continue
            top = pool.nodes if pool.pattern == "active-active" else max(pool.nodes, 1)
            checks += [
                pool_size_check(dcfg, cluster, pool, pool.standby_nodes, pool.standby_nodes, top),
                Check(
                    f"{pool.standby_nodes} ({pool.name}: nodes Ready)",
                    ready_nodes(kube_context(dcfg, cluster), pool.name),
                ),
            ]
        steps.add(
            "fb:standby",
            "failback",
            f"Shrink {pair.dr.name} back to its standby size",
            f"Standby sizes from the plan: {'; '.join(stop)}. Workloads still running on a pool "
            "that shrinks lose their nodes: nothing may run there any more.",
            commands=[
                f"pulumi config set gpudr:mode standby -s {stack}",
                f"pulumi up -s {stack} --policy-pack {POLICY_PACK}",
            ],
            checks=checks,
            on_failure=[
                "Nodes linger: the autoscaler removes a node once it is idle; find what still "
                f"runs with `kubectl get pods -A -o wide` on the {pair.dr.name} context.",
            ],
            after=["fb:primary-up", *resumed, *moved],
        )
    _replication_back(pair, steps, after=["fb:primary-up", *resumed, *moved, "fb:standby"])


def _replication_back(pair: _Pair, steps: _Steps, after: list[str]) -> None:
    if not pair.flows:
        return
    pcfg, dcfg = pair.pcfg, pair.dcfg
    exports: list[str] = []
    commands: list[str] = []
    checks: list[Check] = []
    for f in pair.flows:
        b = pair.dr_bucket(f.data_class)
        src = pair.primary_bucket(f.data_class)
        new = f"NEW_{var_name(f.data_class)}_KEY"
        if f.mechanism in ("crr-rtc", "crr", "azure-or", "dual-write"):
            exports.append(
                f"export {new}='<a {f.data_class} object written at {pair.primary.name} after "
                "failback>'"
            )
        if f.mechanism in ("crr-rtc", "crr") and src is not None:
            checks.append(
                Check(
                    f"{f.data_class}: every rule `Enabled`",
                    f"aws s3api get-bucket-replication --bucket {src.name} --region {pcfg.region} "
                    "--query 'ReplicationConfiguration.Rules[].[ID,Status]' --output text",
                )
            )
            checks.append(
                Check(
                    f"{f.data_class}: `COMPLETED`, within {fmt_duration(f.estimate.lag_s)} of "
                    "the write (the plan's replication lag)",
                    f'aws s3api head-object --bucket {src.name} --key "${new}" '
                    f"--region {pcfg.region} --query ReplicationStatus",
                )
            )
        elif f.mechanism.startswith("gcs-"):
            checks.append(
                Check(
                    f"{f.data_class}: `{_rpo_setting(f)}` (one dual-region bucket: nothing "
                    "else to restart)",
                    f"gcloud storage buckets describe gs://{b.name} --format='value(rpo)'",
                )
            )
        elif f.mechanism in ("sts", "datasync"):
            for t in b.inbound:
                commands += [
                    pull_lookup(dcfg, b, f, t),
                    pull_schedule(dcfg, f, t, enabled=True),
                    pull_run_now(dcfg, f),
                ]
            checks.append(Check(f"{f.data_class}: `ENABLED`", pull_status(dcfg, f)))
            checks.append(
                Check(
                    f"{f.data_class}: the run just started ends `SUCCESS`",
                    pull_runs(dcfg, f, 1),
                )
            )
        elif f.mechanism == "azure-or" and src is not None:
            checks.append(
                Check(
                    f"{f.data_class}: the policy's rule shows status `complete`",
                    f"az storage blob show --account-name {src.storage_account} "
                    f'--container-name {src.name} --name "${new}" --auth-mode login '
                    "--query objectReplicationSourceProperties",
                )
            )
        elif f.mechanism == "dual-write":
            checks.append(
                Check(
                    f"{f.data_class}: the object exists at {pair.dr.name} too (every writer "
                    "writes both copies again; a writer switched to one copy during the failover "
                    "must be switched back)",
                    describe_object(dcfg, b, f"${new}"),
                )
            )
    steps.add(
        "fb:replication",
        "failback",
        f"Confirm replication {pair.primary.name} -> {pair.dr.name} runs again",
        "The DR site protects the primary again only once new data reaches it."
        + (
            " The scheduled pulls stopped in {step:pause-pulls} start again here, after the "
            "copy back: earlier, the checkpoint pull would have deleted what the DR site wrote."
            if commands
            else ""
        ),
        commands=[*exports, *commands],
        checks=checks,
        on_failure=[
            f"Not replicating: `pulumi preview -s {pair.primary_stack} --policy-pack "
            f"{POLICY_PACK}` shows what differs from the plan, and the pack's replication "
            "policies name what is missing.",
        ],
        after=after,
    )


# --- entry points --------------------------------------------------------------------------------


def build_runbook(design: Design, primary: str, dr: str) -> Runbook:
    """The runbook for one primary -> DR pair of the design's plan."""
    plan = design.plan
    p, d = plan.sites[primary], plan.sites[dr]
    if d.role != "dr" or d.protects != p.name:
        raise ValueError(f"{dr} is not a DR site of {primary} in plan {plan.name}")
    pair = _pair(design, p, d)
    variables = _variables(pair)
    steps = _Steps()
    _prepare(pair, steps, variables)
    _declare(pair, steps)
    _pause_pulls(pair, steps)
    _data(pair, steps)
    _capacity(pair, steps)
    _training(pair, steps)
    _services(pair, steps)
    _failback(pair, steps)
    targets = _targets(pair)
    timed = [(t.estimated_rto_s, t.workload) for t in targets if t.estimated_rto_s is not None]
    slowest = max(timed) if timed else None
    built = steps.build()
    numbers = {s.key: s.number for s in built}
    path = tuple(
        (numbers[key], seconds)
        for key, seconds in _critical_path(pair, slowest[1] if slowest else None)
        if key in numbers
    )
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
    return Runbook(
        plan=plan.name,
        path=runbook_path(plan, p, d),
        primary=_site_ref(plan, p, pair.pcfg),
        dr=_site_ref(plan, d, pair.dcfg),
        targets=targets,
        pools=pools,
        expected_recovery_s=slowest[0] if slowest else None,
        expected_recovery=fmt_duration(slowest[0] if slowest else None),
        slowest=slowest[1] if slowest else "-",
        all_met=all(t.meets for t in targets),
        steps=built,
        variables=tuple(variables),
        critical_path=path,
    )


def _critical_path(pair: _Pair, workload: str | None) -> list[tuple[str, float]]:
    """The steps the slowest workload's estimate is made of, with that workload's own stages."""
    for p in pair.pools:
        if p.workload_name != workload:
            continue
        s = p.chosen.stages
        out = [
            ("declare", s["detection"]),
            ("capacity", s["infrastructure"] + s["capacity"]),
        ]
        if p.kind == "training":
            return [*out, (f"training:{p.name}", s["staging"] + s["restart"])]
        return [
            *out,
            (f"service:{p.name}", s["staging"] + s["restart"]),
            (f"traffic:{p.name}", s["traffic_shift"]),
        ]
    for f in pair.flows:
        if f.data_class == workload and f.estimated_rto_s is not None:
            return [
                ("declare", pair.detection_s),
                (f"data:{f.data_class}", f.estimated_rto_s - pair.detection_s),
            ]
    return []


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
