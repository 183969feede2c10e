"""The clouds' command lines, written once: what the runbooks print for an engineer to run and
the storage URLs a drill's probes (`gpudr.app.drill.probes`) name the replicas by, so that a
drill report and its runbook point at the same thing.

Each function returns one command as an argv tuple, unquoted, ready for `subprocess`; `shell`
renders one as the runbooks print it. Options that only shape the output (`--query`,
`--format`, `--output`) are parameters: the same operation as a table or as JSON.

Names (buckets, clusters, node pools, resource groups) come in as the stack config
(`gpudr.contract`) or a drill spells them; nothing here derives one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpudr.contract.site import BucketConfig

Argv = tuple[str, ...]

# What each cloud's cluster status command prints for a cluster that runs.
CLUSTER_RUNNING = {"aws": "ACTIVE", "gcp": "RUNNING", "azure": "Succeeded"}


class Quoted(str):
    """A word the runbooks have always printed in single quotes, though the shell would take it
    bare (a JMESPath query, an Azure URL): quoting it makes no difference to what runs."""

    __slots__ = ()


# --- shell text -----------------------------------------------------------------------------------

# The characters `shlex.quote` leaves bare.
_BARE = re.compile(r"[\w@%+=:,./-]+")


def _word(word: str) -> str:
    if isinstance(word, Quoted):
        return f"'{word}'"
    if word.startswith("-") and "=" in word:
        # `--format='value(status)'`: an option's value is quoted on its own, as people write it.
        option, value = word.split("=", 1)
        return f"{option}={_word(value)}"
    if "$" in word or "'" in word:
        # Double quotes: "$CHECKPOINTS_KEY" stays a variable the shell expands.
        if any(c in word for c in '"\\`'):
            raise ValueError(f"cannot quote {word!r} for the shell")
        return f'"{word}"'
    if _BARE.fullmatch(word):
        return word
    return f"'{word}'"


def shell(argv: Sequence[str]) -> str:
    """One command as a line of shell: a word with `$` in double quotes (the variable expands),
    a word the shell would split or glob in single quotes, the rest bare."""
    return " ".join(_word(w) for w in argv)


def _cmd(line: str, *more: str, **values: str) -> Argv:
    """A command as it is typed: `line`'s words, a `{name}` in one replaced by its value (a
    whole-word value stays one word, spaces and all, and keeps its type), then `more` words."""
    words = tuple(
        values[w[1:-1]] if w[0] + w[-1] == "{}" and w[1:-1] in values else w.format(**values)
        for w in line.split()
    )
    return (*words, *more)


def _shape(query: str | None, output: str | None) -> Argv:
    """The output options: what a person reads, or a probe parses, of the same answer."""
    return (
        *(("--query", query) if query is not None else ()),
        *(("--output", output) if output else ()),
    )


# --- storage --------------------------------------------------------------------------------------


def storage_url(cloud: str, bucket: BucketConfig) -> str:
    if cloud == "aws":
        return f"s3://{bucket.name}"
    if cloud == "gcp":
        return f"gs://{bucket.name}"
    return f"https://{bucket.storage_account}.blob.core.windows.net/{bucket.name}"


def object_url(cloud: str, bucket: BucketConfig, key: str) -> str:
    return f"{storage_url(cloud, bucket)}/{key}"


def read_object(cloud: str, bucket: BucketConfig, key: str, region: str) -> Argv:
    """One object's bytes on standard output (hashed by the runbook, streamed by a probe)."""
    url = object_url(cloud, bucket, key)
    if cloud == "aws":
        return _cmd("aws s3 cp {url} - --region {region}", url=url, region=region)
    if cloud == "gcp":
        return _cmd("gcloud storage cat {url}", url=url)
    # One connection: a parallel download seeks, and standard output cannot.
    return _blob("download", bucket, key) + _cmd(
        "--file /dev/stdout --max-connections 1 --no-progress --output none"
    )


# AWS S3


def s3_list(bucket: BucketConfig, region: str) -> Argv:
    """For people: every object, one line each (time, size, key)."""
    return _cmd("aws s3 ls s3://{b}/ --recursive --region {r}", b=bucket.name, r=region)


def s3_head_object(
    bucket: str, key: str, region: str, *, checksums: bool = False, query: str | None = None
) -> Argv:
    """An object's metadata: stored checksums (with `checksums`), size, replication status."""
    mode = " --checksum-mode ENABLED" if checksums else ""
    line = "aws s3api head-object --bucket {b} --key {k}" + mode + " --region {r}"
    return _cmd(line, *_shape(query, None), b=bucket, k=key, r=region)


def s3_object_retention(bucket: BucketConfig, key: str, region: str) -> Argv:
    line = "aws s3api get-object-retention --bucket {b} --key {k} --region {r}"
    return _cmd(line, b=bucket.name, k=key, r=region)


def s3_head_bucket(bucket: BucketConfig, region: str) -> Argv:
    return _cmd("aws s3api head-bucket --bucket {b} --region {r}", b=bucket.name, r=region)


def s3_replication_rules(bucket: BucketConfig, region: str) -> Argv:
    line = "aws s3api get-bucket-replication --bucket {b} --region {r} --query {q} --output text"
    rules = "ReplicationConfiguration.Rules[].[ID,Status]"
    return _cmd(line, b=bucket.name, r=region, q=rules)


def s3_sync(source: str, target: str, *regions: str, size_only: bool = False) -> Argv:
    """Copies what the target lacks, never deleting there. `regions`: the source's and the
    target's when both are buckets, else the one bucket's."""
    where: Argv = ("--region", regions[-1])
    if len(regions) == 2:
        where = ("--source-region", regions[0], *where)
    flags = ("--size-only",) if size_only else ()
    return _cmd("aws s3 sync {s} {t}", *flags, *where, s=source, t=target)


# Google Cloud Storage


def gcs_list(bucket: BucketConfig) -> Argv:
    """For people: every object, one line each (size, time, URL), and a TOTAL line."""
    return _cmd("gcloud storage ls -l gs://{b}/**", b=bucket.name)


def gcs_describe_object(bucket: BucketConfig, key: str, fmt: str) -> Argv:
    url = object_url("gcp", bucket, key)
    return _cmd("gcloud storage objects describe {url} --format={fmt}", url=url, fmt=fmt)


def gcs_describe_bucket(bucket: BucketConfig, fmt: str) -> Argv:
    return _cmd("gcloud storage buckets describe gs://{b} --format={fmt}", b=bucket.name, fmt=fmt)


def gcs_rsync(source: str, target: str, *, no_clobber: bool = True) -> Argv:
    """Copies what the target lacks; `no_clobber`: never overwrites there."""
    flags = ("--no-clobber",) if no_clobber else ()
    return _cmd("gcloud storage rsync {s} {t} --recursive", *flags, s=source, t=target)


def gcs_rpo(*, turbo: bool) -> str:
    """A dual-region bucket's `rpo`, as Cloud Storage reports it."""
    return "ASYNC_TURBO" if turbo else "DEFAULT"


# Azure Blob Storage (shared keys are disabled: every command signs in as the caller)


def _blob(verb: str, bucket: BucketConfig, key: str | None = None) -> Argv:
    line = "az storage blob {verb} --account-name {a} --container-name {c}"
    named = ("--name", key) if key is not None else ()
    a, c = str(bucket.storage_account), bucket.name
    return _cmd(line, *named, "--auth-mode", "login", verb=verb, a=a, c=c)


def blob_list(bucket: BucketConfig, query: str, output: str) -> Argv:
    return (*_blob("list", bucket), "--num-results", "*", *_shape(query, output))


def blob_show(bucket: BucketConfig, key: str, query: str, output: str | None = None) -> Argv:
    return _blob("show", bucket, key) + _shape(query, output)


def blob_container(bucket: BucketConfig) -> Argv:
    line = (
        "az storage container show --account-name {a} --name {c} --auth-mode login --query name "
        "--output tsv"
    )
    return _cmd(line, a=str(bucket.storage_account), c=bucket.name)


def blob_replication_policies(bucket: BucketConfig, resource_group: str) -> Argv:
    line = (
        "az storage account or-policy list --account-name {a} --resource-group {g} --output table"
    )
    return _cmd(line, a=str(bucket.storage_account), g=resource_group)


def azcopy_login() -> Argv:
    return _cmd("azcopy login")


def azcopy_copy(source: str, target: str, *, overwrite: bool = True) -> Argv:
    """`source` ends in `/*` (the container's content, not the container itself)."""
    flags = () if overwrite else ("--overwrite=false",)
    return _cmd("azcopy copy {s} {t} --recursive", *flags, s=source, t=target)


# --- clusters and GPU pools -----------------------------------------------------------------------


def eks_credentials(cluster: str, region: str) -> Argv:
    """Adds the cluster to the kubeconfig as context `cluster`."""
    line = "aws eks update-kubeconfig --name {n} --region {r} --alias {n}"
    return _cmd(line, n=cluster, r=region)


def gke_credentials(cluster: str, region: str, project: str, *, internal: bool) -> Argv:
    """Adds the cluster as context `gke_<project>_<region>_<cluster>`; `internal`: through its
    private endpoint."""
    line = "gcloud container clusters get-credentials {n} --region {r} --project {p}"
    flags = ("--internal-ip",) if internal else ()
    return _cmd(line, *flags, n=cluster, r=region, p=project)


def aks_credentials(resource_group: str, cluster: str) -> tuple[Argv, ...]:
    return (
        _cmd("az aks get-credentials --resource-group {g} --name {n}", g=resource_group, n=cluster),
        # Entra ID only (local accounts are disabled): kubectl signs in through kubelogin.
        _cmd("kubelogin convert-kubeconfig -l azurecli"),
    )


def eks_cluster_status(cluster: str, region: str) -> Argv:
    line = "aws eks describe-cluster --name {n} --region {r} --query cluster.status"
    return _cmd(line, n=cluster, r=region)


def gke_cluster_status(cluster: str, region: str, project: str) -> Argv:
    line = "gcloud container clusters describe {n} --region {r} --project {p} --format={f}"
    return _cmd(line, n=cluster, r=region, p=project, f="value(status)")


def aks_cluster_status(resource_group: str, cluster: str) -> Argv:
    line = "az aks show --resource-group {g} --name {n} --query provisioningState --output tsv"
    return _cmd(line, g=resource_group, n=cluster)


def eks_access_entries(cluster: str, region: str) -> Argv:
    line = "aws eks list-access-entries --cluster-name {n} --region {r}"
    return _cmd(line, n=cluster, r=region)


def eks_nodegroup(
    cluster: str, nodegroup: str, region: str, query: str | None = None, output: str | None = None
) -> Argv:
    line = "aws eks describe-nodegroup --cluster-name {n} --nodegroup-name {p} --region {r}"
    return _cmd(line, *_shape(query, output), n=cluster, p=nodegroup, r=region)


def gke_node_pool(pool: str, cluster: str, region: str, project: str, fmt: str) -> Argv:
    line = "gcloud container node-pools describe {p} --cluster {n} --region {r} --project {pr}"
    return _cmd(line, f"--format={fmt}", p=pool, n=cluster, r=region, pr=project)


def gke_operations(region: str, project: str) -> Argv:
    """The cluster operations, newest first: where a pool's failure to grow shows."""
    line = "gcloud container operations list --region {r} --project {p} --sort-by=~startTime"
    return _cmd(line, "--limit=5", r=region, p=project)


def aks_node_pool(
    resource_group: str, cluster: str, agent_pool: str, query: str | None, output: str
) -> Argv:
    line = "az aks nodepool show --resource-group {g} --cluster-name {n} --name {a}"
    return _cmd(line, *_shape(query, output), g=resource_group, n=cluster, a=agent_pool)


# --- sign-in --------------------------------------------------------------------------------------


def aws_login() -> Argv:
    return _cmd("aws sso login")


def aws_identity() -> Argv:
    return _cmd("aws sts get-caller-identity")


def gcloud_login() -> tuple[Argv, ...]:
    return (
        _cmd("gcloud auth login"),
        # The Pulumi GCP provider signs in with application default credentials.
        _cmd("gcloud auth application-default login"),
    )


def gcp_project(project: str) -> Argv:
    return _cmd("gcloud projects describe {p} --format={f}", p=project, f="value(projectId)")


def az_login(subscription: str) -> tuple[Argv, ...]:
    return (_cmd("az login"), _cmd("az account set --subscription {s}", s=subscription))


def az_resource_group(resource_group: str) -> Argv:
    line = "az group show --name {g} --query properties.provisioningState --output tsv"
    return _cmd(line, g=resource_group)


# --- scheduled pulls: Storage Transfer jobs (GCS), DataSync tasks (S3), Storage Mover jobs (Blob) -


def sts_jobs(project: str, sink: BucketConfig) -> Argv:
    """The job pulling into `sink`: Storage Transfer names jobs itself, gpudr's description
    names the sink."""
    line = "gcloud transfer jobs list --project {p} --filter=description~gs://{b} --format={f}"
    return _cmd(line, p=project, b=sink.name, f="value(name)")


def sts_job_status(job: str, project: str, *, enable: bool | None = None) -> Argv:
    """`enable` None: describe the job's status; else enable or disable its schedule."""
    if enable is None:
        line = "gcloud transfer jobs describe {j} --project {p} --format={f}"
        return _cmd(line, j=job, p=project, f="value(status)")
    line = "gcloud transfer jobs update {j} --status={s} --project {p}"
    return _cmd(line, j=job, s="enabled" if enable else "disabled", p=project)


def sts_runs(job: str, limit: int) -> Argv:
    line = "gcloud transfer operations list --job-names={j} --limit={n} --format={f}"
    columns = "table(name,metadata.status,metadata.startTime,metadata.endTime)"
    return _cmd(line, j=job, n=str(limit), f=columns)


def sts_run(job: str, project: str) -> Argv:
    return _cmd("gcloud transfer jobs run {j} --project {p}", j=job, p=project)


def mover_job(group: str, mover: str, project: str, job: str, verb: str) -> Argv:
    """A Storage Mover job definition: `show` it (its agent and latest run), `start-job` it
    now, or list its `job-run`s."""
    where = "-g {g} --storage-mover-name {m} --project-name {p}"
    if verb == "job-run":
        line = "az storage-mover job-run list " + where + " --job-definition-name {j} -o table"
    else:
        line = "az storage-mover job-definition " + verb + " " + where + " --name {j}"
    return _cmd(line, g=group, m=mover, p=project, j=job)


def managed_identity_id(group: str, name: str) -> Argv:
    """A user-assigned identity's resource id."""
    return _cmd("az identity show -g {g} -n {n} --query id -o tsv", g=group, n=name)


def containerapp_job(group: str, job: str, verb: str, identity: str = "") -> Argv:
    """A Container Apps job (the AzCopy pulls): `stop` its running execution, `start` one now,
    `identity-remove` or `identity-assign` the user-assigned identity its runs sign in as (the
    pause at failover, and its undoing), show its `identity-type` (`None` once removed), or
    list its `executions`."""
    where = "-g {g} -n {j}"
    if verb == "executions":
        line = "az containerapp job execution list " + where + " --query {q} -o table"
        columns = "[].{name:name,status:properties.status,start:properties.startTime}"
        return _cmd(line, g=group, j=job, q=Quoted(columns))
    if verb == "identity-type":
        line = "az containerapp job identity show " + where + " --query type -o tsv"
        return _cmd(line, g=group, j=job)
    if verb == "name":
        return _cmd("az containerapp job show " + where + " --query name -o tsv", g=group, j=job)
    if verb in ("identity-remove", "identity-assign"):
        action = verb.split("-", 1)[1]
        line = f"az containerapp job identity {action} " + where + " --user-assigned {i}"
        return _cmd(line, g=group, j=job, i=identity)
    return _cmd("az containerapp job " + verb + " " + where, g=group, j=job)


def logic_workflow(group: str, name: str, *, state: str | None = None) -> Argv:
    """`state` None: show a Logic App's state; else set it (Enabled, Disabled)."""
    if state is None:
        line = "az logic workflow show -g {g} --name {n} --query state -o tsv"
        return _cmd(line, g=group, n=name)
    return _cmd("az logic workflow update -g {g} --name {n} --state {s}", g=group, n=name, s=state)


def datasync_tasks(region: str, name: str) -> Argv:
    line = "aws datasync list-tasks --region {r} --query {q} --output text"
    return _cmd(line, r=region, q=f"Tasks[?Name=='{name}'].TaskArn")


def datasync_schedule(task: str, region: str, expression: str, *, enable: bool) -> Argv:
    status = "ENABLED" if enable else "DISABLED"
    schedule = f'{{"ScheduleExpression":"{expression}","Status":"{status}"}}'
    line = "aws datasync update-task --task-arn {t} --region {r} --schedule {s}"
    return _cmd(line, t=task, r=region, s=schedule)


def datasync_status(task: str, region: str) -> Argv:
    line = "aws datasync describe-task --task-arn {t} --region {r} --query {q}"
    return _cmd(line, t=task, r=region, q=Quoted("Schedule.Status"))


def datasync_runs(task: str, region: str) -> Argv:
    line = "aws datasync list-task-executions --task-arn {t} --region {r} --output table"
    return _cmd(line, t=task, r=region)


def datasync_run(task: str, region: str) -> Argv:
    return _cmd("aws datasync start-task-execution --task-arn {t} --region {r}", t=task, r=region)


def datasync_execution(execution: str, region: str) -> Argv:
    """One run's status, start and counts: `FilesVerified` equal to `FilesTransferred` means
    DataSync checked what it copied."""
    line = "aws datasync describe-task-execution --task-execution-arn {e} --region {r} --query {q}"
    counts = "{status:Status,start:StartTime,transferred:FilesTransferred,verified:FilesVerified}"
    return _cmd(line, e=execution, r=region, q=counts)
