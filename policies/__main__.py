"""gpudr's policy pack: `pulumi preview --policy-pack policies`, or published to an organisation
with `pulumi policy publish` (README, "Publishing the pack").

Run as the Pulumi CLI runs a Python pack (`python <pack folder>`, which runs this file, from the
pack's own virtualenv): the pack binds a gRPC Analyzer server on 127.0.0.1, prints its port on
stdout and serves until stopped. `gpudr plan` starts it the same way and feeds it what the program
registered under mocks.

The folder is self-contained: its third-party code and the `gpudr` library it shares with the
planner are declared in requirements.txt, never found through the repository around it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
# The policy modules import each other relatively, so they must load as a package. It cannot be
# named after the folder: `pulumi policy publish` uploads this folder alone, and the CLI installs
# a published pack under a directory of its own (versioned), which is no importable name. A name
# of our own also cannot be shadowed by an installed distribution's top-level `policies`.
PACKAGE = "_gpudr_policy_pack"

# Python put this folder first on sys.path. Its modules would then also import as top-level
# `common`, `pack`, ...: a second copy beside the package's, and a shadow over any installed
# module of the same name. Only the package may reach them, so drop it before importing anything.
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    del sys.path[0]

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402


def _load_package() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        PACKAGE, HERE / "__init__.py", submodule_search_locations=[str(HERE)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the policy pack's package from {HERE}")
    package = importlib.util.module_from_spec(spec)
    # Registered before it runs, as the import system does, so that relative imports find it.
    sys.modules[PACKAGE] = package
    spec.loader.exec_module(package)
    return package


_load_package()
pack = importlib.import_module(f"{PACKAGE}.pack")

PolicyPack(
    name=pack.PACK_NAME,
    policies=pack.POLICIES,
    # Each policy sets its own level; this applies only to one that does not.
    enforcement_level=EnforcementLevel.MANDATORY,
    display_name="gpudr: DR data safety and RPO-implied bandwidth",
    description=(
        "Refuses a deployment that is unencrypted, publicly reachable, deletable, or whose "
        "replication cannot physically meet its RPO; advises on GPU standby sizing."
    ),
)
