"""AzCopy jobs copying an AWS primary's buckets into an Azure DR site's replica containers.

One Azure Container Apps job per data class, on the cron schedule the plan chose, in one
Container Apps environment (Consumption workload profile, no ingress: jobs take no requests).
Each run signs in as the user-assigned identity the AWS primary's stack created for this site
(gpudr/contract/azcopy_job.py says what a run does): to AWS by exchanging its Entra token for a
read-only role session, to Blob through a Storage Blob Data Contributor grant on its replica
container alone. The identity's ids and the image come from this stack's own config; without
them nothing is declared (components/azure/site.py warns with the commands).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import app, authorization, monitor

from components.azure.arm import assignment_name, role_definition_id
from components.azure.logs import DIAGNOSTIC_SETTING
from gpudr.contract import azcopy_job as job_env
from gpudr.contract.azcopy import cron_expression
from gpudr.contract.grants import STORAGE_BLOB_DATA_CONTRIBUTOR
from gpudr.contract.naming import azcopy_environment_name, azcopy_job_name
from gpudr.contract.site import InboundTransfer
from gpudr.contract.stack import (
    AZCOPY_CLIENT_ID,
    AZCOPY_IDENTITY_ID,
    AZCOPY_PRINCIPAL_ID,
)
from gpudr.core.enums import AWS_MAX_SESSION_S, AZCOPY_JOB_MEMORY_GIB, AZCOPY_JOB_VCPU

# The Consumption workload profile every workload-profiles environment has: billed per second
# of what a run is allocated, nothing while no run is going.
CONSUMPTION = "Consumption"
# A failed run is not retried: its replica may run until the next scheduled run (its timeout is
# the interval, at most the 12 h session), so a retry could overlap that run, and two copies (and
# two checkpoint mirror-deletes) would race. The next run copies what this one missed; the RPO
# estimate already counts a whole interval between runs.
RETRY_LIMIT = 0


@dataclass(frozen=True)
class AzcopyTarget:
    """One class's replica container and the pull into it."""

    data_class: str
    account_name: pulumi.Input[str]
    account_id: pulumi.Input[str]
    container: str
    transfer: InboundTransfer
    tags: dict[str, str]


@dataclass(frozen=True)
class AzcopyPullArgs:
    system: str
    site: str
    resource_group_name: pulumi.Input[str]
    location: str
    subscription_id: pulumi.Input[str]
    log_workspace_id: pulumi.Input[str]
    # {config key: value}: gpudr:azcopy_identity_id, _client_id, _principal_id (checked by
    # the site before any resource is declared)
    identity: Mapping[str, str]
    image: str  # by digest (gpudr:azcopy_image, checked on load)
    targets: Sequence[AzcopyTarget]
    tags: dict[str, str]
    # Failover: a job's identity, which the runbook's pause step removes so that no run can sign
    # in to the dead or compromised primary, is left as it is found. A `pulumi up` during the
    # failover then never gives it back; the failback's up in standby, with --refresh, does.
    hold_schedules: bool = False


def replica_timeout_s(interval_s: int) -> int:
    """How long one run may last: within its AWS session, and before the next run is due."""
    return min(AWS_MAX_SESSION_S, int(interval_s))


def role_arn(transfer: InboundTransfer) -> str:
    """The primary's read role, by name in its account (both from the plan)."""
    return f"arn:aws:iam::{transfer.source_account}:role/{transfer.role_name}"


def container_scope(account_id: pulumi.Input[str], container: str) -> pulumi.Output[str]:
    return pulumi.Output.concat(account_id, "/blobServices/default/containers/", container)


class AzcopyPull(pulumi.ComponentResource):
    job_names: pulumi.Output[dict[str, str]]  # data class -> job name

    def __init__(
        self, name: str, args: AzcopyPullArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:transfer:AzcopyPull", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        environment = app.ManagedEnvironment(
            f"{name}-environment",
            environment_name=azcopy_environment_name(args.system, args.site),
            resource_group_name=args.resource_group_name,
            location=args.location,
            workload_profiles=[
                app.WorkloadProfileArgs(name=CONSUMPTION, workload_profile_type=CONSUMPTION)
            ],
            # Console and system logs through a diagnostic setting (below) to the site's
            # workspace: no workspace key is handed to the environment.
            app_logs_configuration=app.AppLogsConfigurationArgs(destination="azure-monitor"),
            tags=args.tags,
            opts=child,
        )
        monitor.DiagnosticSetting(
            f"{name}-logs",
            name=DIAGNOSTIC_SETTING,
            resource_uri=environment.id,
            workspace_id=args.log_workspace_id,
            logs=[monitor.DiagnosticsLogSettingsArgs(category_group="allLogs", enabled=True)],
            opts=child,
        )
        names = {}
        for target in args.targets:
            names[target.data_class] = self._job(name, args, environment, target)
        self.job_names = pulumi.Output.from_input(names)
        self.register_outputs({"job_names": self.job_names})

    def _job(
        self,
        name: str,
        args: AzcopyPullArgs,
        environment: app.ManagedEnvironment,
        target: AzcopyTarget,
    ) -> str:
        t, identity = target.transfer, args.identity
        cls = target.data_class
        job_name = azcopy_job_name(args.system, args.site, cls)
        # Write, on this class's replica container only: no other container, no account keys.
        grant = authorization.RoleAssignment(
            f"{name}-{cls}-write",
            role_assignment_name=assignment_name(
                job_name, identity[AZCOPY_PRINCIPAL_ID], STORAGE_BLOB_DATA_CONTRIBUTOR
            ),
            scope=container_scope(target.account_id, target.container),
            role_definition_id=role_definition_id(
                args.subscription_id, STORAGE_BLOB_DATA_CONTRIBUTOR
            ),
            principal_id=identity[AZCOPY_PRINCIPAL_ID],
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            opts=pulumi.ResourceOptions(parent=self),
        )
        env = {
            job_env.ENV_SOURCE: t.source_bucket,
            job_env.ENV_SOURCE_REGION: t.source_region,
            job_env.ENV_ROLE_ARN: role_arn(t),
            job_env.ENV_SESSION_S: str(AWS_MAX_SESSION_S),
            job_env.ENV_MIRROR_DELETES: "true" if t.mirror_deletes else "false",
            job_env.ENV_CLIENT_ID: identity[AZCOPY_CLIENT_ID],
            job_env.ENV_LOGIN: job_env.LOGIN_MSI,
        }
        destination = pulumi.Output.from_input(target.account_name).apply(
            lambda account: job_env.blob_destination(account, target.container)
        )
        server = args.image.split("/", 1)[0]
        # An Azure Container Registry is pulled from as the same identity (it needs AcrPull
        # there: runbook); another registry must serve the image anonymously.
        registries = (
            [app.RegistryCredentialsArgs(server=server, identity=identity[AZCOPY_IDENTITY_ID])]
            if server.endswith(".azurecr.io")
            else None
        )
        app.Job(
            f"{name}-{cls}-job",
            job_name=job_name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            environment_id=environment.id,
            workload_profile_name=CONSUMPTION,
            identity=app.ManagedServiceIdentityArgs(
                type=app.ManagedServiceIdentityType.USER_ASSIGNED,
                user_assigned_identities=[identity[AZCOPY_IDENTITY_ID]],
            ),
            configuration=app.JobConfigurationArgs(
                trigger_type=app.TriggerType.SCHEDULE,
                schedule_trigger_config=app.JobConfigurationScheduleTriggerConfigArgs(
                    cron_expression=cron_expression(t.schedule_s),
                    # One replica per run: AzCopy parallelises within it, and two replicas
                    # would copy the same objects twice.
                    parallelism=1,
                    replica_completion_count=1,
                ),
                replica_timeout=replica_timeout_s(t.schedule_s),
                replica_retry_limit=RETRY_LIMIT,
                registries=registries,
            ),
            template=app.JobTemplateArgs(
                containers=[
                    app.ContainerArgs(
                        name="azcopy",
                        image=args.image,
                        command=list(job_env.COMMAND),
                        env=[
                            *(app.EnvironmentVarArgs(name=k, value=v) for k, v in env.items()),
                            app.EnvironmentVarArgs(name=job_env.ENV_DESTINATION, value=destination),
                        ],
                        resources=app.ContainerResourcesArgs(
                            cpu=AZCOPY_JOB_VCPU, memory=f"{AZCOPY_JOB_MEMORY_GIB:g}Gi"
                        ),
                    )
                ]
            ),
            tags=target.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                # The grant exists before the first run writes.
                depends_on=[grant],
                ignore_changes=["identity"] if args.hold_schedules else [],
            ),
        )
        return job_name
