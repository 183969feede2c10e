"""GpuCluster's node hardening, on every AWS site of the examples (primaries and DR sites) and in
the drills of the AWS DR sites: IMDSv2 only, with a hop limit of 1 so that pods cannot take the
node role, and the EKS Pod Identity Agent on every cluster, which is how pods get credentials
instead."""

from __future__ import annotations

import pytest

from components.aws.gpu_cluster import NODE_POLICIES
from tests.components.aws.stacks import every_run, of_type, run_of

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
CLUSTER = "aws:eks/cluster:Cluster"
ADDON = "aws:eks/addon:Addon"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"


@pytest.mark.parametrize(("kind", "example", "site"), every_run())
def test_gpu_nodes_answer_imdsv2_only_and_to_the_node_itself(
    kind: str, example: str, site: str
) -> None:
    run = run_of(kind, example, site)
    templates = of_type(run, LAUNCH_TEMPLATE)
    # every node group launches from one of these
    assert templates and len(templates) == len(of_type(run, NODE_GROUP))
    for lt in templates:
        options = lt.inputs["metadataOptions"]
        assert options["httpTokens"] == "required", lt.urn
        # 1: a pod's packets cross one more hop (its network namespace) and never get an answer
        assert options["httpPutResponseHopLimit"] == 1, lt.urn
        assert options.get("httpEndpoint", "enabled") == "enabled", lt.urn  # the node still may


@pytest.mark.parametrize(("kind", "example", "site"), every_run())
def test_every_cluster_runs_the_pod_identity_agent(kind: str, example: str, site: str) -> None:
    run = run_of(kind, example, site)
    clusters = of_type(run, CLUSTER)
    addons = of_type(run, ADDON)
    assert clusters
    for cluster in clusters:
        (agent,) = (a for a in addons if a.inputs["clusterName"] == cluster.inputs["name"])
        assert agent.inputs["addonName"] == "eks-pod-identity-agent", agent.urn
        assert agent.inputs["region"] == cluster.inputs["region"], agent.urn
        assert agent.parent == cluster.parent, agent.urn
        # The agent asks EKS Auth with the node role: no IRSA role of its own.
        assert "serviceAccountRoleArn" not in agent.inputs, agent.urn
        assert agent.property_dependencies["clusterName"] == [cluster.urn], agent.urn
    assert len(addons) == len(clusters)


@pytest.mark.parametrize(("kind", "example", "site"), every_run())
def test_the_node_role_holds_what_the_agent_needs(kind: str, example: str, site: str) -> None:
    """eks-auth:AssumeRoleForPodIdentity is in AmazonEKSWorkerNodePolicy (EKS User Guide,
    "Set up the Amazon EKS Pod Identity Agent"): the agent's only permission."""
    run = run_of(kind, example, site)
    assert "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy" in NODE_POLICIES
    for cluster in of_type(run, CLUSTER):
        component = cluster.parent
        attached = {
            a.inputs["policyArn"]
            for a in of_type(run, ATTACHMENT)
            if a.parent == component and "-node-policy-" in a.name
        }
        assert attached == set(NODE_POLICIES), cluster.urn
