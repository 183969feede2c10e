"""node-metadata-protected, default-network-closed, kubernetes-cluster-hardened: table-driven,
one setting varied at a time from what gpudr's components register."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from policies.default_network_closed import default_network_closed
from policies.kubernetes_cluster_hardened import kubernetes_cluster_hardened
from policies.node_metadata_protected import node_metadata_protected
from tests.policies.harness import Res, check, run_resource, run_stack

LT = "aws:ec2/launchTemplate:LaunchTemplate"
EKS, GKE = "aws:eks/cluster:Cluster", "gcp:container/cluster:Cluster"
AKS, POOL = (
    "azure-native:containerservice:ManagedCluster",
    "azure-native:containerservice:AgentPool",
)

GOOD = {
    EKS: {
        "encryptionConfig": {"resources": ["secrets"], "provider": {"keyArn": "arn:k"}},
        "enabledClusterLogTypes": ["api", "audit", "authenticator"],
    },
    GKE: {
        "datapathProvider": "ADVANCED_DATAPATH",
        "enableShieldedNodes": True,
        "binaryAuthorization": {"evaluationMode": "PROJECT_SINGLETON_POLICY_ENFORCE"},
        "databaseEncryption": {"state": "ENCRYPTED", "keyName": "projects/p/.../k"},
    },
    AKS: {
        "agentPoolProfiles": [{"name": "system", "enableEncryptionAtHost": True}],
        "networkProfile": {"networkDataplane": "cilium", "networkPolicy": "cilium"},
        "securityProfile": {"azureKeyVaultKms": {"enabled": True}},
        "addonProfiles": {"azurepolicy": {"enabled": True}},
        "autoUpgradeProfile": {"upgradeChannel": "patch"},
    },
    POOL: {"enableEncryptionAtHost": True},
}


def cluster(token: str, change: dict[str, Any]) -> Res:
    inputs = copy.deepcopy(GOOD[token])
    for key, value in change.items():
        if value is None:
            inputs.pop(key, None)
        else:
            inputs[key] = value
    return Res(token, "train", inputs)


@pytest.mark.parametrize(
    ("token", "change", "expected"),
    [
        pytest.param(EKS, {}, None, id="eks-as-gpudr-builds-it"),
        pytest.param(
            EKS, {"encryptionConfig": None}, "secrets are not encrypted", id="eks-secrets"
        ),
        # Control plane logs are cluster-control-plane-logged's (mandatory), not reported here.
        pytest.param(EKS, {"enabledClusterLogTypes": None}, None, id="eks-logs-elsewhere"),
        pytest.param(GKE, {}, None, id="gke-as-gpudr-builds-it"),
        pytest.param(GKE, {"datapathProvider": None}, "network policy", id="gke-no-netpol"),
        pytest.param(
            GKE,
            {"datapathProvider": None, "networkPolicy": {"enabled": True}},
            None,
            id="gke-calico",
        ),
        pytest.param(GKE, {"enableShieldedNodes": False}, "shielded", id="gke-unshielded"),
        pytest.param(GKE, {"binaryAuthorization": None}, "Binary Authorization", id="gke-binauthz"),
        pytest.param(GKE, {"databaseEncryption": None}, "Cloud KMS", id="gke-secrets"),
        pytest.param(AKS, {}, None, id="aks-as-gpudr-builds-it"),
        pytest.param(
            AKS,
            {"agentPoolProfiles": [{"name": "system"}]},
            "pools system without encryption at host",
            id="aks-host-encryption",
        ),
        pytest.param(AKS, {"networkProfile": None}, "network policy", id="aks-no-netpol"),
        pytest.param(
            AKS,
            {"networkProfile": {"networkPolicy": "none"}},
            "network policy",
            id="aks-netpol-none",
        ),
        pytest.param(AKS, {"securityProfile": None}, "Key Vault key", id="aks-kms"),
        pytest.param(AKS, {"addonProfiles": None}, "Azure Policy", id="aks-policy-addon"),
        pytest.param(
            AKS, {"autoUpgradeProfile": {"upgradeChannel": "none"}}, "upgrade channel", id="aks-up"
        ),
        pytest.param(POOL, {}, None, id="pool-encrypted-at-host"),
        pytest.param(POOL, {"enableEncryptionAtHost": None}, "encryption at host", id="pool-bare"),
    ],
)
def test_clusters(token: str, change: dict[str, Any], expected: str | None) -> None:
    resource = cluster(token, change)
    check(run_resource(kubernetes_cluster_hardened, resource), resource, expected)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        pytest.param({"httpTokens": "required", "httpPutResponseHopLimit": 1}, None, id="ok"),
        pytest.param({"httpTokens": "required", "httpPutResponseHopLimit": 2}, "hop", id="hop-2"),
        pytest.param({"httpTokens": "optional", "httpPutResponseHopLimit": 1}, "IMDSv1", id="v1"),
        pytest.param(None, "IMDSv1", id="defaults"),
        pytest.param({"httpEndpoint": "disabled"}, None, id="no-metadata-service"),
    ],
)
def test_launch_templates(options: dict[str, Any] | None, expected: str | None) -> None:
    template = Res(LT, "gpu-lt", {"metadataOptions": options} if options else {})
    check(run_resource(node_metadata_protected, template), template, expected)


@pytest.mark.parametrize(
    ("group", "expected"),
    [
        pytest.param({"ingress": [], "egress": []}, None, id="closed"),
        pytest.param(None, "keeps its default security group open", id="undeclared"),
        pytest.param(
            {"ingress": [{"protocol": "-1", "self": True}], "egress": []}, "has rules", id="rules"
        ),
    ],
)
def test_default_security_group(group: dict[str, Any] | None, expected: str | None) -> None:
    vpc = Res("aws:ec2/vpc:Vpc", "net-vpc", {"cidrBlock": "10.0.0.0/16"})
    resources = [vpc]
    if group is not None:
        sg = Res("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup", "net-default-sg", group)
        resources.append(sg.link("vpcId", vpc))
    check(run_stack(default_network_closed, resources), vpc, expected)
