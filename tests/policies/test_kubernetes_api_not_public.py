"""kubernetes-api-not-public: EKS, GKE and AKS API servers, private or limited to named ranges."""

from __future__ import annotations

from typing import Any

import pytest

from policies.kubernetes_api_not_public import kubernetes_api_not_public
from tests.policies.harness import Res, check, run_resource

EKS, GKE = "aws:eks/cluster:Cluster", "gcp:container/cluster:Cluster"
AKS = "azure-native:containerservice:ManagedCluster"
AKS_VERSIONED = "azure-native:containerservice/v20240901:ManagedCluster"


@pytest.mark.parametrize(
    ("token", "inputs", "expected"),
    [
        pytest.param(EKS, {"vpcConfig": {"endpointPublicAccess": False}}, None, id="eks-private"),
        pytest.param(EKS, {"vpcConfig": {}}, "reads as 0.0.0.0/0", id="eks-default"),
        pytest.param(
            EKS,
            {"vpcConfig": {"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}},
            "0.0.0.0/0",
            id="eks-open",
        ),
        pytest.param(EKS, {"vpcConfig": {"publicAccessCidrs": ["::/0"]}}, "::/0", id="eks-open-v6"),
        pytest.param(
            EKS, {"vpcConfig": {"publicAccessCidrs": ["203.0.113.0/24"]}}, None, id="eks-named"
        ),
        pytest.param(EKS, {"vpcConfig": {"publicAccessCidrs": ["10.0.0.0/4"]}}, "/4", id="wide"),
        pytest.param(
            EKS, {"vpcConfig": {"publicAccessCidrs": ["office"]}}, "not a CIDR", id="not-cidr"
        ),
        pytest.param(
            GKE, {"privateClusterConfig": {"enablePrivateEndpoint": True}}, None, id="gke-private"
        ),
        pytest.param(GKE, {}, "any address", id="gke-default"),
        pytest.param(
            GKE,
            {"masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": "0.0.0.0/0"}]}},
            "0.0.0.0/0",
            id="gke-open",
        ),
        pytest.param(
            GKE,
            {"masterAuthorizedNetworksConfig": {"gcpPublicCidrsAccessEnabled": True}},
            "every Google Cloud address",
            id="gke-google-ranges",
        ),
        pytest.param(
            AKS, {"apiServerAccessProfile": {"enablePrivateCluster": True}}, None, id="aks-private"
        ),
        pytest.param(AKS, {}, "authorized_ip_ranges is empty", id="aks-default"),
        pytest.param(
            AKS_VERSIONED,
            {"apiServerAccessProfile": {"authorizedIPRanges": ["0.0.0.0/0"]}},
            "0.0.0.0/0",
            id="aks-api-version-module",
        ),
    ],
)
def test_clusters(token: str, inputs: dict[str, Any], expected: str | None) -> None:
    cluster = Res(token, "train", inputs)
    check(run_resource(kubernetes_api_not_public, cluster), cluster, expected)


def test_the_prefix_limit_and_exemptions_come_from_the_pack_config() -> None:
    cluster = Res(EKS, "ops", {"vpcConfig": {"publicAccessCidrs": ["198.51.0.0/16"]}})
    assert run_resource(kubernetes_api_not_public, cluster) == []
    strict = {"min_prefix_v4": 24}
    check(run_resource(kubernetes_api_not_public, cluster, strict), cluster, "198.51.0.0/16")
    entry = {"resource": "ops", "stack": "test", "reason": "break-glass cluster, SEC-9"}
    exempt = {**strict, "exemptions": [entry]}
    assert run_resource(kubernetes_api_not_public, cluster, exempt) == []
