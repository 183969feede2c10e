"""The SDK modules a cloud's stacks load, imported once before the plan workers are forked.

Importing a cloud's Pulumi SDK is most of the cost of a plan's first stack in a process (about a
second per cloud on the bench machine, docs/benchmarks.md), and every process that runs that
cloud's stacks paid it. `portfolio.Workers` imports these modules in one process and forks the
workers from it, so each module is imported once per run whatever the number of workers, and
its pages are shared between them rather than copied into each.

The SDKs load their service modules lazily (`pulumi_aws.s3` is imported at the first
`aws.s3.X`), so importing `pulumi_aws` alone would leave the heavy part to every worker: each
module below is named and its loading forced. The lists are what the program's stacks load
(tests/e2e/test_preload.py runs every example plan after preloading and fails on any SDK module
a stack still had to import, and on any module listed here that no stack uses). A stale list
costs time, never correctness: a worker imports whatever is missing itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator

from gpudr.core.enums import Cloud

# Per cloud, the modules its stacks load: its SDK's service modules, the SDKs its cross-cloud
# components use on its side (pulumi_random: Azure's generated secrets), gpudr's mocks for it.
SDK_MODULES: dict[Cloud, tuple[str, ...]] = {
    Cloud.AWS: (
        "pulumi_aws",
        "pulumi_aws.cloudwatch",
        "pulumi_aws.datasync",
        "pulumi_aws.directconnect",
        "pulumi_aws.ec2",
        "pulumi_aws.ec2transitgateway",
        "pulumi_aws.eks",
        "pulumi_aws.iam",
        "pulumi_aws.kms",
        "pulumi_aws.s3",
    ),
    Cloud.GCP: (
        "pulumi_gcp",
        "pulumi_gcp.compute",
        "pulumi_gcp.container",
        "pulumi_gcp.kms",
        "pulumi_gcp.logging",
        "pulumi_gcp.organizations",
        "pulumi_gcp.projects",
        "pulumi_gcp.serviceaccount",
        "pulumi_gcp.storage",
        "gpudr.app.offline.mocks_gcp",
    ),
    Cloud.AZURE: (
        "pulumi_azure_native",
        "pulumi_azure_native.app",
        "pulumi_azure_native.authorization",
        "pulumi_azure_native.containerservice",
        "pulumi_azure_native.dnsresolver",
        "pulumi_azure_native.keyvault",
        "pulumi_azure_native.logic",
        "pulumi_azure_native.managedidentity",
        "pulumi_azure_native.monitor",
        "pulumi_azure_native.network",
        "pulumi_azure_native.operationalinsights",
        "pulumi_azure_native.privatedns",
        "pulumi_azure_native.resources",
        "pulumi_azure_native.storage",
        "pulumi_azure_native.storagemover",
        "pulumi_random",
        "gpudr.app.offline.mocks_azure",
    ),
}


def steps(clouds: Iterable[str]) -> Iterator[tuple[str, str | None]]:
    """(cloud, module) for each module to import, in order, then (cloud, None) once a cloud's
    modules are all imported."""
    for cloud in clouds:
        for module in SDK_MODULES[Cloud(cloud)]:
            yield cloud, module
        yield cloud, None


def load(name: str) -> None:
    """Import `name` and run its code now, not at its first use. Raises ImportError."""
    module = importlib.import_module(name)
    # The SDKs' lazy modules run their code on the first attribute that is not introspection
    # (pulumi._utils._LazyModule); asking for one that does not exist is enough.
    getattr(module, "gpudr_preload", None)


__all__ = ["SDK_MODULES", "load", "steps"]
