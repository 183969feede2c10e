"""Which cloud SDKs a stack's program imports, in a fresh interpreter (this one has them all)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def sdks_imported(plan: Path | str, site: str) -> set[str]:
    """The pulumi_* packages loaded after running `site`'s stack of `plan` (a path from ROOT,
    or absolute) under the mocks."""
    code = (
        "import sys\n"
        "from gpudr.core.spec import load_plan\nfrom gpudr.core.design import design\n"
        "from gpudr.build.stackconfig import stack_config_values, stack_name\n"
        "from gpudr.app.offline.run import run_stack\n"
        f"p = load_plan({str(plan)!r}); s = p.sites[{site!r}]\n"
        "run_stack(stack_name(p, s), stack_config_values(design(p), s))\n"
        "mods = {m.split('.')[0] for m in sys.modules if m.startswith('pulumi_')}\n"
        "print(','.join(sorted(mods)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return set(out.stdout.strip().split(","))
