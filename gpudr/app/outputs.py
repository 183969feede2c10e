"""Where the commands write: checked before any work, written all at once, never through a
symlink out of the output root.

A command that runs for a minute and then fails to write its result wastes the minute and, for
`generate`, used to leave half a set of files (stack files and a runbook, no workflow). So each
command checks its outputs first, and `generate` writes into a temporary directory inside the
root and moves the files into place only when every one was written.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def output_file_problem(output: str, option: str = "--output") -> str | None:
    """Why `output` cannot be written as a file (one line: the path, the fix); None if it can."""
    path = Path(output)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        return f"{option} {output}: is a directory; give a file path"
    if not parent.is_dir():
        return f"{option} {output}: directory {parent} does not exist; create it or write elsewhere"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{option} {output}: directory {parent} is not writable; write elsewhere"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{option} {output}: the file is read-only; write elsewhere or make it writable"
    return None


def output_root_problem(root: str, option: str = "--root") -> str | None:
    """Why files cannot be written under `root` (created if missing); None if they can."""
    path = Path(root)
    if path.exists() and not path.is_dir():
        return f"{option} {root}: not a directory; give a directory"
    existing = _nearest_existing(path.absolute())
    if not existing.is_dir():
        return f"{option} {root}: {existing} is not a directory; give a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{option} {root}: {existing} is not writable; make it writable or use another root"
    return None


def escape_problem(root: Path, rel: str) -> str | None:
    """Why writing `rel` under `root` would land outside it (a symlink at the path or on the way
    there, or `..`); None when it stays inside."""
    base = root.resolve()
    target = root / rel
    if not target.parent.resolve().is_relative_to(base):
        return f"{target}: its directory leads outside {base} (a symlink?); remove the link"
    if target.is_symlink() and not target.resolve().is_relative_to(base):
        return f"{target}: is a symlink to {target.resolve()}, outside {base}; remove the link"
    return None


def write_all(root: Path, files: Mapping[str, str]) -> None:
    """Write every file (path relative to `root` -> text) or none: all go to a temporary
    directory inside `root` first (same filesystem, so each move is an atomic rename), then
    into place. A failure before the moves leaves `root` as it was."""
    problems = [p for p in (escape_problem(root, rel) for rel in files) if p is not None]
    if problems:
        raise OutputError(problems)
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".gpudr-write-", dir=root))
    try:
        for rel, text in files.items():
            staged = staging / rel
            staged.parent.mkdir(parents=True, exist_ok=True)
            staged.write_text(text, encoding="utf-8")
        for rel in files:
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            # A symlink inside the root is replaced by the file, never written through.
            os.replace(staging / rel, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


class OutputError(Exception):
    """Files that would be written outside the output root; one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


__all__ = [
    "OutputError",
    "escape_problem",
    "output_file_problem",
    "output_root_problem",
    "write_all",
]
