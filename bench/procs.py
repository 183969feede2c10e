"""Memory of a process tree, from /proc (Linux): what the bench's driver and workers sample."""

from __future__ import annotations

import threading
from pathlib import Path


class TreePeak:
    """Peak RSS (VmHWM) of a process and every process under it (gpudr's zygote and plan
    workers, the policy pack), per process: their sum bounds the run's peak. VmHWM is the
    kernel's own high-water mark, so sampling every 50 ms misses only growth in a process's
    last 50 ms.

    With `pss`, also the peak over time of the processes' summed PSS (smaps_rollup: a page
    shared by n processes counts 1/n in each), i.e. the memory the run held at once, sampled
    every 20 ms. Reading PSS walks each process's page tables: only for untimed runs."""

    def __init__(self, root: int, pss: bool = False) -> None:
        self.root = root
        self.pss = pss
        self.interval = 0.02 if pss else 0.05
        self.pss_peak_kb = 0
        self.peaks: dict[int, tuple[str, int]] = {}  # pid -> (kind, peak kB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _tree(self) -> list[tuple[int, int, bool]]:
        """(pid, its depth under the root, whether it has children) for every process."""
        found, todo = [], [(self.root, 0)]
        while todo:
            pid, depth = todo.pop()
            children: list[int] = []
            try:
                for task in Path(f"/proc/{pid}/task").iterdir():
                    children.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:
                continue
            found.append((pid, depth, bool(children)))
            todo.extend((c, depth + 1) for c in children)
        return found

    def _kind(self, pid: int, depth: int, parent: bool) -> str | None:
        """gpudr, zygote, worker or pack; None for a process that has just exited."""
        if pid == self.root:
            return "gpudr"
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        if not cmdline:
            return None
        if b"policies/__main__.py" in cmdline:
            return "pack"
        # Forked processes have gpudr's command line. gpudr forks the zygote, which forks the
        # plan workers; code before it forked the workers itself, which have no children.
        return "zygote" if depth == 1 and parent else "worker"

    def _run(self) -> None:
        while True:
            pss = 0
            for pid, depth, parent in self._tree():
                kb = status_kb(pid, "VmHWM")
                if kb == 0:  # exited (a zombie has no memory and no command line)
                    continue
                kind = self._kind(pid, depth, parent)
                if kind is None:
                    continue
                seen, peak = self.peaks.get(pid, (kind, 0))
                # Between two forks, or once its workers are gone, the zygote has no children.
                kind = seen if seen == "zygote" else kind
                # A child started by vfork shows gpudr's command line and pages until it execs
                # (the pack): what it was before then was not its own.
                if kb > peak or seen != kind:
                    self.peaks[pid] = (kind, kb)
                if self.pss:
                    pss += status_kb(pid, "Pss", "smaps_rollup")
            self.pss_peak_kb = max(self.pss_peak_kb, pss)
            if self._stop.wait(self.interval):
                return

    def stop(self) -> list[tuple[str, float]]:
        """(kind, peak MB) per process, gpudr first."""
        self._stop.set()
        self._thread.join()
        order = {"gpudr": 0, "zygote": 1, "worker": 2, "pack": 3}
        out = sorted(self.peaks.values(), key=lambda kv: (order.get(kv[0], 4), -kv[1]))
        return [(kind, kb / 1024) for kind, kb in out]


def status_kb(pid: int | str, field_name: str, file: str = "status") -> int:
    """A `kB` field of /proc/<pid>/<file>; 0 once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/{file}").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(f"{field_name}:"):
            return int(line.split()[1])
    return 0
