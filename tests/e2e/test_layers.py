"""The layers at run time. Which module may import which is import-linter's job (`make lint`,
the contracts in pyproject.toml); what these tests check is what a process actually loads: a
`pulumi up` must not load the planner or jinja2, and the CLI must start without the Pulumi SDK
(it is loaded only by the commands that run the program)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT

# Modules the Pulumi program must never load: the planner, its reference data and templates.
# (PyYAML is not among them: the Pulumi SDK itself imports it.)
PLANNER = (
    "gpudr.core.spec",
    "gpudr.core.design",
    "gpudr.core.sizing",
    "gpudr.core.cost",
    "gpudr.core.reference",
    "gpudr.build",
    "gpudr.docs",
    "gpudr.app.cli",
    "jinja2",
)

# Run the program for one stack under the SDK's mocks, with the config of its stack file (read
# by the test, as the Pulumi CLI reads it, and passed as JSON), then list what was loaded.
PROGRAM = """
import json, sys
from gpudr.app.offline.mocks import GpudrMocks
from gpudr.app.offline.run import run_stack
stack, config, region = json.loads(sys.stdin.read())
run = run_stack(stack, config, GpudrMocks(default_region=region))
assert run.resources, "the program registered nothing"
print(json.dumps(sorted(sys.modules)))
"""


def _loaded_by_program(stack: str) -> set[str]:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    config = doc["config"]
    region = next(
        str(v)
        for k, v in config.items()
        if k in ("aws:region", "gcp:region", "azure-native:location")
    )
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        input=json.dumps([stack, config, region]),
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return set(json.loads(proc.stdout))


@pytest.mark.parametrize(
    "stack", ["llm-training-usw2", "vision-xcloud-use1", "speech-xcloud-eus", "speech-models-wus"]
)
def test_the_program_loads_no_planner_module(stack: str) -> None:
    loaded = _loaded_by_program(stack)
    found = sorted(m for m in loaded if any(m == p or m.startswith(p + ".") for p in PLANNER))
    assert found == [], f"stack {stack}: the program loaded {found}"
    assert "gpudr.contract.site" in loaded  # it did read the contract


def test_the_cli_starts_without_the_pulumi_sdk() -> None:
    code = (
        "import sys, gpudr.app.cli, gpudr.build.drill, gpudr.docs.runbook, gpudr.app.prdiff\n"
        "import gpudr.app.drill.orchestrate, gpudr.app.drill.probes\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert proc.stdout.strip() == "[]"
