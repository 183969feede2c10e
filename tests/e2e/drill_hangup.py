"""A real `gpudr drill` process for the hangup tests (test_drill_hangup.py): the CLI's own
`main`, with the stack interface and the cloud checks faked as in test_drill_cli.py, and an
`up` slow enough to be interrupted. Every call the fake stacks see is written at once to
CALLS (JSON), so the test can read them whatever becomes of this process.

    python -m tests.e2e.drill_hangup CALLS REPORT_DIR
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpudr.app import cli
from gpudr.app.drill import operator as drill_operator
from gpudr.app.drill import probes as drill_probes
from gpudr.app.drill import stacks as drill_stacks
from tests.conftest import EXAMPLE
from tests.gpudr.app.drill.fakes import Clock, FakeProbe, FakeStacks, Obj

UP_S = 60.0  # far longer than the test waits: only the hangup ends it
DESTROY_S = 1.5  # long enough for a second signal to arrive during cleanup


class Recorded(list[tuple[Any, ...]]):
    """The calls, rewritten to a file on every append."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def append(self, call: tuple[Any, ...]) -> None:
        super().append(call)
        self.path.write_text(json.dumps([c[:2] for c in self]), encoding="utf-8")


class SlowStacks(FakeStacks):
    def up(self, name: str, on_output: Callable[[str], None]) -> dict[str, Any]:
        self.calls.append(("up", name))
        on_output(f"Updating ({name})")  # the test waits for this line
        time.sleep(UP_S)
        return dict(self.outputs)

    def destroy(self, name: str, on_output: Callable[[str], None]) -> None:
        for n in range(50):  # a destroy's progress, on a terminal that is gone
            on_output(f"Destroying ({name}): resource {n}")
        time.sleep(DESTROY_S)
        super().destroy(name, on_output)


def main(calls: Path, report_dir: Path) -> None:
    clock = Clock(datetime.now(UTC))
    stacks = SlowStacks(clock, outputs={"reader": "r", "clusters": {}}, calls=Recorded(calls))
    drill_stacks.shutil.which = lambda _name: "/usr/bin/pulumi"  # type: ignore[assignment]
    drill_stacks.AutomationStacks = lambda *_a, **_k: stacks  # type: ignore[assignment,misc]
    drill_probes.probe_for = lambda setup, _sleep: FakeProbe(  # type: ignore[assignment]
        setup, clock, {t.bucket.name: {"a/b": Obj(b"x", 60)} for t in setup.data}
    )
    drill_operator.discover = lambda _cloud, _region: None  # type: ignore[assignment]
    args = ["drill", str(EXAMPLE), "--site", "usw2", "--report-dir", str(report_dir)]
    cli.main(args)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
