"""The layering of the design card, checked."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT


def test_gpudr_imports_no_pulumi() -> None:
    modules = [
        "gpudr.spec",
        "gpudr.sizing",
        "gpudr.design",
        "gpudr.cost",
        "gpudr.stackconfig",
        "gpudr.report",
        "gpudr.generate",
        "gpudr.runbook",
        "gpudr.templating",
        "gpudr.drill",
        "gpudr.cli",
        # The drill's orchestration talks to Pulumi only through drill.stacks, lazily.
        "drill.orchestrate",
        "drill.probes",
        "drill.commands",
        "drill.interrupts",
        "drill.checksums",
        "drill.stacks",
    ]
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'pulumi_aws'))\n"
        + "print(','.join(bad))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert proc.stdout.strip() == ""


def test_components_never_import_offline_or_cli() -> None:
    for path in (ROOT / "components").rglob("*.py"):
        text = path.read_text()
        assert "import offline" not in text and "from offline" not in text, path
        assert "gpudr.cli" not in text and "gpudr.design" not in text, path
        # The program reads gpudr.drill (names, config); the orchestration is not its business.
        assert not re.search(r"^\s*(from|import) drill\b", text, re.MULTILINE), path
