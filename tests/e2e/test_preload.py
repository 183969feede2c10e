"""offline/preload.py names exactly the SDK modules the program's stacks load.

Each check runs every example plan in a fresh interpreter (this one has imported the SDKs
already), once after the zygote's imports and once without them."""

from __future__ import annotations

import json
import subprocess
import sys

from gpudr.app.offline.preload import SDK_MODULES
from tests.conftest import ROOT

EXAMPLES = sorted(str(p) for p in (ROOT / "examples").glob("*.yaml"))

# Prints the modules (SDK service modules, gpudr's mocks) loaded by running every example plan,
# after the preload when argv[1] == "preload"; each as loaded, not as a lazy placeholder.
_RUN = """
import json, sys
from gpudr.app.offline import preload
from gpudr.app.offline.plan import run_design
from gpudr.core.design import design
from gpudr.core.spec import load_plan

def loaded():
    return {
        name for name, module in sys.modules.items()
        if (name.startswith("pulumi_") and name.count(".") <= 1 or ".mocks_" in name)
        and type(module).__name__ != "_LazyModule"
    }

if sys.argv[1] == "preload":
    for _, module in preload.steps([c.value for c in preload.SDK_MODULES]):
        if module is not None:
            preload.load(module)
before = loaded()
for path in sys.argv[2:]:
    run_design(design(load_plan(path)))
print(json.dumps({"before": sorted(before), "after": sorted(loaded())}))
"""


def _run(mode: str) -> dict[str, set[str]]:
    out = subprocess.run(
        [sys.executable, "-c", _RUN, mode, *EXAMPLES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return {k: set(v) for k, v in json.loads(out.stdout).items()}


def _listed() -> set[str]:
    return {m for modules in SDK_MODULES.values() for m in modules}


def test_after_the_preload_no_stack_imports_an_sdk_module() -> None:
    run = _run("preload")
    assert len(EXAMPLES) >= 11
    assert _listed() <= run["before"]
    late = run["after"] - run["before"]
    assert not late, f"stacks imported {sorted(late)}: add them to preload.SDK_MODULES"


def test_every_module_listed_is_one_a_stack_loads() -> None:
    run = _run("none")
    unused = _listed() - run["after"]
    assert not unused, f"no example's stacks load {sorted(unused)}: drop them from SDK_MODULES"
