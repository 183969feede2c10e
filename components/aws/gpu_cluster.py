"""An EKS cluster with GPU node pools: NVIDIA AMI, GPU taints, EFA and cluster placement through a
launch template, optional capacity reservations, and pool sizes set by the DR pattern and mode.
Its control-plane logs go to a log group declared with it, encrypted with the site's key."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from gpudr.contract.logs import EKS_LOG_TYPES, cloudwatch_retention_days
from gpudr.contract.naming import GPU_TAINT_KEY, GPU_TAINT_VALUE, POOL_LABEL
from gpudr.contract.site import ClusterConfig, PoolConfig, PoolSize, pool_size

NODE_POLICIES = (
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
)
CONTROL_PLANE_LOG_TYPES = EKS_LOG_TYPES  # in place on a deployed cluster


def control_plane_log_group(cluster: str) -> str:
    """The log group EKS writes a cluster's control-plane logs to: its name is fixed by EKS
    (Amazon EKS User Guide, "Send control plane logs to CloudWatch Logs")."""
    return f"/aws/eks/{cluster}/cluster"


def log_group_exists(group: str, region: str, parent: pulumi.Resource) -> bool:
    """Whether log group `group` exists already, looked up in the cluster's own region (a DR
    stack never asks another) through the component's provider."""
    found = aws.cloudwatch.get_log_groups(
        log_group_name_prefix=group, region=region, opts=pulumi.InvokeOptions(parent=parent)
    )
    return group in (found.log_group_names or [])


# Security-group rule descriptions: what each rule admits and why (EC2 allows up to 255
# characters of a-z A-Z 0-9, spaces and ._-:/()#,@[]+=&;{}!$*).
EFA_INGRESS_DESCRIPTION = (
    "EFA and NCCL traffic from GPU nodes of this pool (same group): all protocols, "
    "as the EFA user guide requires"
)
EFA_EGRESS_DESCRIPTION = (
    "EFA and NCCL traffic to GPU nodes of this pool (same group): all protocols, "
    "as the EFA user guide requires"
)


def _assume(service: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": service},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    )


@dataclass(frozen=True)
class GpuClusterArgs:
    config: ClusterConfig
    region: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    gpu_subnet_id: pulumi.Input[str]
    gpu_az: str
    key_arn: pulumi.Input[str]
    api_public_cidrs: Sequence[str]
    failover: bool
    tags: dict[str, str]
    pool_tags: dict[str, dict[str, str]]
    # The plan's log retention (`logs.retention_days` of the site's config), in days; the
    # control-plane log group keeps logs at least that long.
    log_retention_days: int


@dataclass(frozen=True)
class _Nodes:
    """What every pool of one cluster joins: the cluster, and the node role with its policies."""

    cluster: aws.eks.Cluster
    role: aws.iam.Role
    attachments: Sequence[aws.iam.RolePolicyAttachment]


class GpuCluster(pulumi.ComponentResource):
    cluster_name: pulumi.Output[str]
    pool_sizes: pulumi.Output[dict[str, int]]

    def __init__(
        self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:compute:GpuCluster", name, None, opts)
        nodes = _Nodes(
            cluster=(cluster := self._control_plane(name, args)),
            role=(role := self._node_role(name, args)),
            attachments=[
                aws.iam.RolePolicyAttachment(
                    f"{name}-node-policy-{i}",
                    role=role.name,
                    policy_arn=arn,
                    opts=pulumi.ResourceOptions(parent=self),
                )
                for i, arn in enumerate(NODE_POLICIES)
            ],
        )
        self._pod_identity_agent(name, cluster, args)
        sizes: dict[str, int] = {}
        for pool in args.config.pools:
            size = pool_size(pool, args.failover)
            sizes[pool.name] = size.desired_size
            self._pool(name, pool=pool, size=size, nodes=nodes, args=args)
        self.cluster_name = nodes.cluster.name
        self.pool_sizes = pulumi.Output.from_input(sizes)
        self.register_outputs({"cluster_name": self.cluster_name, "pool_sizes": self.pool_sizes})

    def _log_group(self, name: str, args: GpuClusterArgs) -> aws.cloudwatch.LogGroup:
        """Declared before the cluster, under the name EKS writes to: left to EKS, the group
        would be created on first write unencrypted and keeping logs (and billing them)
        forever. Encrypted with the site's key, whose policy admits CloudWatch Logs for this
        group (kms.DataKeyArgs.log_groups); kept for the plan's retention, rounded up to a
        period CloudWatch Logs accepts.

        Retained when the cluster goes: a failover-only cluster's audit trail of the disaster
        window outlives failback, a drill's outlives the drill, each expiring with the
        retention. A group that exists already (retained so, or created by EKS for a cluster
        deployed before gpudr declared it) is imported: the engine takes it into the stack and
        updates it to these settings, its logs kept, or treats it as usual when the stack
        holds it already. Declaring it without the import would fail `pulumi up` on "already
        exists", the next failover's included. (Import-then-update on a mismatch needs a
        Pulumi CLI from 2024 on: pulumi/pulumi#16397.)"""
        group = control_plane_log_group(args.config.eks_name)
        region = args.region
        if not isinstance(region, str):
            raise TypeError(f"{name}: the cluster's region must be a plain string")
        return aws.cloudwatch.LogGroup(
            f"{name}-control-plane-logs",
            name=group,
            retention_in_days=cloudwatch_retention_days(args.log_retention_days),
            kms_key_id=args.key_arn,
            region=region,
            tags=args.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                retain_on_delete=True,
                import_=group if log_group_exists(group, region, self) else None,
            ),
        )

    def _control_plane(self, name: str, args: GpuClusterArgs) -> aws.eks.Cluster:
        child = pulumi.ResourceOptions(parent=self)
        log_group = self._log_group(name, args)
        cluster_role = aws.iam.Role(
            f"{name}-cluster-role",
            assume_role_policy=_assume("eks.amazonaws.com"),
            tags=args.tags,
            opts=child,
        )
        cluster_policy = aws.iam.RolePolicyAttachment(
            f"{name}-cluster-policy",
            role=cluster_role.name,
            policy_arn="arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",
            opts=child,
        )
        return aws.eks.Cluster(
            f"{name}-eks",
            name=args.config.eks_name,
            version=args.config.kubernetes_version,
            role_arn=cluster_role.arn,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=args.subnet_ids,
                endpoint_private_access=True,
                # The API is private unless the plan names the networks allowed to reach it.
                endpoint_public_access=bool(args.api_public_cidrs),
                public_access_cidrs=list(args.api_public_cidrs) or None,
            ),
            encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=args.key_arn),
                resources=["secrets"],
            ),
            access_config=aws.eks.ClusterAccessConfigArgs(authentication_mode="API"),
            enabled_cluster_log_types=list(CONTROL_PLANE_LOG_TYPES),
            region=args.region,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster_policy, log_group]),
        )

    def _pod_identity_agent(
        self, name: str, cluster: aws.eks.Cluster, args: GpuClusterArgs
    ) -> None:
        """The EKS Pod Identity Agent: with the nodes' IMDS closed to pods (hop limit 1, see
        `_launch_template`), this is how a pod gets AWS credentials, from the role its service
        account's Pod Identity association names (the dual writers' roles trust
        pods.eks.amazonaws.com: replication.pod_identity_trust). The agent runs on each node
        with the host network and asks EKS Auth for the pod's role with the node role
        (eks-auth:AssumeRoleForPodIdentity, in AmazonEKSWorkerNodePolicy: NODE_POLICIES);
        Amazon EKS User Guide, "Set up the Amazon EKS Pod Identity Agent". Its DaemonSet
        tolerates every taint by default (aws/eks-charts, stable/eks-pod-identity-agent), so
        the GPU taint does not keep it off the GPU nodes. Declared with the cluster, before any
        node joins: a DaemonSet of no nodes is healthy, and the first pod already finds it."""
        aws.eks.Addon(
            f"{name}-pod-identity",
            cluster_name=cluster.name,
            addon_name="eks-pod-identity-agent",
            region=args.region,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _node_role(self, name: str, args: GpuClusterArgs) -> aws.iam.Role:
        return aws.iam.Role(
            f"{name}-node-role",
            assume_role_policy=_assume("ec2.amazonaws.com"),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _pool(
        self, name: str, *, pool: PoolConfig, size: PoolSize, nodes: _Nodes, args: GpuClusterArgs
    ) -> None:
        prefix = f"{name}-{pool.name}"
        tags = {**args.tags, **args.pool_tags.get(pool.name, {})}
        security_groups: list[pulumi.Input[str]] = [
            nodes.cluster.vpc_config.cluster_security_group_id
        ]
        if pool.efa_interfaces:
            security_groups.append(self._efa_security_group(prefix, args, tags).id)
        template = self._launch_template(
            prefix, pool=pool, security_groups=security_groups, args=args, tags=tags
        )
        aws.eks.NodeGroup(
            f"{prefix}-nodes",
            cluster_name=nodes.cluster.name,
            node_group_name=pool.name,
            node_role_arn=nodes.role.arn,
            subnet_ids=[args.gpu_subnet_id],
            instance_types=[pool.instance_type],
            ami_type="AL2023_x86_64_NVIDIA",
            capacity_type="ON_DEMAND",
            # desired_size is deliberately not in ignore_changes: the failover switch sets it.
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=size.min_size, desired_size=size.desired_size, max_size=size.max_size
            ),
            taints=[
                aws.eks.NodeGroupTaintArgs(
                    key=GPU_TAINT_KEY, value=GPU_TAINT_VALUE, effect="NO_SCHEDULE"
                )
            ],
            labels={POOL_LABEL: pool.name, "gpudr/pattern": pool.pattern},
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            region=args.region,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(nodes.attachments)),
        )

    def _efa_security_group(
        self, prefix: str, args: GpuClusterArgs, tags: dict[str, str]
    ) -> aws.ec2.SecurityGroup:
        # EFA traffic must be allowed to and from the same security group, or NCCL hangs.
        return aws.ec2.SecurityGroup(
            f"{prefix}-efa-sg",
            description="gpudr: EFA traffic between GPU nodes of one pool",
            vpc_id=args.vpc_id,
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    description=EFA_INGRESS_DESCRIPTION,
                    protocol="-1",
                    from_port=0,
                    to_port=0,
                    self=True,
                )
            ],
            egress=[
                aws.ec2.SecurityGroupEgressArgs(
                    description=EFA_EGRESS_DESCRIPTION,
                    protocol="-1",
                    from_port=0,
                    to_port=0,
                    self=True,
                )
            ],
            region=args.region,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _placement(
        self, prefix: str, pool: PoolConfig, args: GpuClusterArgs, tags: dict[str, str]
    ) -> aws.ec2.LaunchTemplatePlacementArgs | None:
        if not pool.placement:
            return None
        group = aws.ec2.PlacementGroup(
            f"{prefix}-placement",
            strategy="cluster",
            region=args.region,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return aws.ec2.LaunchTemplatePlacementArgs(group_name=group.name)

    def _reservation(
        self, prefix: str, pool: PoolConfig, args: GpuClusterArgs, tags: dict[str, str]
    ) -> aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs | None:
        if not pool.reserved:
            return None
        # Billed whether or not instances run: this is what makes GPU capacity certain at
        # failover, and the plan's cost includes it.
        reservation = aws.ec2.CapacityReservation(
            f"{prefix}-reservation",
            instance_type=pool.instance_type,
            instance_platform="Linux/UNIX",
            availability_zone=args.gpu_az,
            instance_count=pool.nodes,
            instance_match_criteria="targeted",
            end_date_type="unlimited",
            region=args.region,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                capacity_reservation_id=reservation.id
            )
        )

    def _launch_template(
        self,
        prefix: str,
        *,
        pool: PoolConfig,
        security_groups: list[pulumi.Input[str]],
        args: GpuClusterArgs,
        tags: dict[str, str],
    ) -> aws.ec2.LaunchTemplate:
        interfaces = [
            aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                device_index=0 if i == 0 else 1,
                network_card_index=i,
                interface_type="efa",
                delete_on_termination="true",
                security_groups=security_groups,
            )
            for i in range(pool.efa_interfaces)
        ]
        # Declared before the template, in the order the pool always declared them.
        placement = self._placement(prefix, pool, args, tags)
        reservation = self._reservation(prefix, pool, args, tags)
        return aws.ec2.LaunchTemplate(
            f"{prefix}-lt",
            description=f"gpudr {pool.kind} pool {pool.name}: {pool.instance_type}",
            network_interfaces=interfaces or None,
            vpc_security_group_ids=None if interfaces else security_groups,
            placement=placement,
            capacity_reservation_specification=reservation,
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name="/dev/xvda",
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        # Strings, not booleans, in this provider. The AWS-managed EBS key avoids
                        # the key-policy grant that a customer key would need for Auto Scaling.
                        encrypted="true",
                        delete_on_termination="true",
                        volume_size=500,
                        volume_type="gp3",
                    ),
                )
            ],
            # IMDSv2 only, and its answers go no further than the node itself: one hop, so a
            # pod (one more hop, through its own network namespace) cannot read the node
            # role's credentials. Processes on the host network (kubelet, the VPC CNI, the Pod
            # Identity Agent) still can. Pods get credentials from EKS Pod Identity
            # (`_pod_identity_agent`). Amazon EKS Best Practices, "Restrict access to the
            # instance profile assigned to the worker node"; CIS AWS Foundations v3.0.0 5.6
            # (IMDSv2 only); Security Hub AutoScaling.4 (hop limit not above 1).
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_tokens="required", http_put_response_hop_limit=1
            ),
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type="instance", tags=tags)
            ],
            region=args.region,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
