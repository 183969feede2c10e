"""The plan cache: each plan's report, stored under a key that covers everything it depends on.

A `gpudr plan` of a portfolio mostly recomputes what it computed before: a pull request touches
one plan, and the other plans' reports (resources, verdicts, costs, policy results) are what they
were at the base commit. Running a plan is a pure function of:

- the plan file's bytes, and the path it was given by (the report names it);
- the code that builds and judges it: `gpudr/` (the planner, its reference data and prices, the
  report), `components/`, `__main__.py`, `Pulumi.yaml`, `policies/` and `templates/`;
- the interpreter and every installed distribution's version (the Pulumi SDKs, the pack's
  `pulumi-policy`, grpcio, protobuf, PyYAML: all of them, so that no dependency is missed);
- the policy pack config (or none: `--no-policy`), and the stacks asked for (`--stack`).

The key is a SHA-256 over all of them. A hit returns the stored report; a miss runs the plan and
stores what it returned. Nothing else reaches a report: the program's random values and ids come
from the mocks, deterministically, and the plan reads no file but itself (`core.spec.load_plan`).

An entry is one file, `<dir>/v1/<key[:2]>/<key>.json`: a header line (JSON: the format, the key,
the plan's path, the SHA-256 of the body) and the body, the report as JSON. It is written to a
temporary file in the same directory and renamed into place, so a reader sees a whole entry or
none. Anything unexpected in an entry (a wrong header, a body whose digest differs: truncated,
edited, bit-flipped) makes it a miss, reported, and the run overwrites it.

What a hit can be trusted for is what the directory can: whoever can write to it can write a
report. Keep it where only you (or your CI's cache, scoped by branch) write, and `--no-cache`
recomputes everything.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpudr.core.paths import PROJECT_DIR

# Bumped whenever the entry layout or what the key covers changes: older entries then miss.
FORMAT = 1
DEFAULT_DIR = ".gpudr-cache"
# What builds, judges and reports a plan, relative to the project: files, or directories taken
# whole (but for bytecode, caches and virtualenvs: see `_code_files`).
CODE = ("gpudr", "components", "policies", "templates", "__main__.py", "Pulumi.yaml")
# Entries not read or written for this long are removed, when an entry is stored.
MAX_AGE_S = 14 * 24 * 3600
GITIGNORE = "# Created by gpudr's plan cache (gpudr/app/cache.py): never commit it.\n*\n"
# https://bford.info/cachedir/: backup tools skip a directory holding this file.
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by gpudr (gpudr plan's cache).\n"
)


class CacheError(Exception):
    """The cache directory cannot be used (the message names it and the fix)."""


def _code_files(project: Path) -> list[Path]:
    """Every file of `CODE`, sorted: no `__pycache__`, no hidden directory, no virtualenv (the
    Pulumi CLI makes one inside a policy pack's folder), no compiled bytecode."""
    files: list[Path] = []
    for name in CODE:
        top = project / name
        if top.is_file():
            files.append(top)
            continue
        for root, dirs, names in os.walk(top):
            here = Path(root)
            dirs[:] = sorted(
                d
                for d in dirs
                if d != "__pycache__"
                and not d.startswith(".")
                and not (here / d / "pyvenv.cfg").exists()
            )
            files.extend(here / n for n in sorted(names) if not n.endswith((".pyc", ".pyo")))
    return files


def code_digest(project: Path = PROJECT_DIR) -> str:
    """SHA-256 over the path and bytes of every file of the code that builds and judges a plan."""
    digest = hashlib.sha256()
    for path in _code_files(project):
        data = path.read_bytes()
        rel = path.relative_to(project).as_posix().encode()
        digest.update(b"%d:%s%d:" % (len(rel), rel, len(data)))
        digest.update(data)
    return digest.hexdigest()


def installed_versions() -> list[str]:
    """Every distribution this interpreter can import from, as its metadata directory's name
    (`pulumi_aws-7.51.1.dist-info`: the name and the version, as pip wrote them), sorted. The
    directory names say what `importlib.metadata` would read from each METADATA file, in a
    fiftieth of the time: a warm `gpudr plan` pays this on every run."""
    found: set[str] = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # not a directory (a zip, a missing entry)
            continue
        found.update(n for n in names if n.endswith((".dist-info", ".egg-info")))
    return sorted(found)


def environment_digest(versions: Iterable[str] | None = None) -> str:
    """SHA-256 over the interpreter and the installed distributions' versions."""
    lines = [
        f"python {sys.implementation.name} {sys.version}",
        *(installed_versions() if versions is None else versions),
    ]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@dataclass(frozen=True)
class Context:
    """What every plan of one run shares in its key."""

    code: str  # code_digest()
    environment: str  # environment_digest()
    pack_config: Mapping[str, Any] | None  # None: the pack is not run (--no-policy)
    sites: Sequence[str] | None = None  # --stack: only these sites' stacks

    @classmethod
    def current(
        cls, pack_config: Mapping[str, Any] | None, sites: Sequence[str] | None = None
    ) -> Context:
        return cls(code_digest(), environment_digest(), pack_config, sites)


def plan_key(source: str, plan: bytes, context: Context) -> str:
    """The key of one plan's report: SHA-256 over everything the report depends on."""
    inputs = {
        "format": FORMAT,
        "source": source,
        "plan": hashlib.sha256(plan).hexdigest(),
        "code": context.code,
        "environment": context.environment,
        # Canonical: the same config written with its keys in another order is the same config.
        "pack_config": context.pack_config,
        "sites": sorted(context.sites) if context.sites is not None else None,
    }
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Entry:
    """A stored report: its text (`docs.report.plan_json`'s) and its stacks' names."""

    text: str
    stacks: tuple[str, ...]


@dataclass(frozen=True)
class Miss:
    """No usable entry; `problem` says what was wrong with the one found (None: there was none)."""

    problem: str | None = None


class PlanCache:
    """Entries under `directory`, created on the first store."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.root = directory / f"v{FORMAT}"
        self._pruned = False

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Entry | Miss:
        """The stored entry, or a Miss (saying why, for an entry that is not usable)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return Miss()
        except OSError as exc:
            return Miss(f"cannot read {path} ({exc.strerror or exc})")
        entry = _decode(data, key)
        if isinstance(entry, Miss):
            return Miss(f"{path}: {entry.problem}")
        # Used now: keep it from pruning.
        with contextlib.suppress(OSError):
            os.utime(path)
        return entry

    def put(self, key: str, source: str, entry: Entry) -> None:
        """Store `entry` under `key`, atomically. Raises CacheError."""
        path = self.path(key)
        raw = entry.text.encode()
        header = {
            "gpudr_plan_cache": FORMAT,
            "key": key,
            "source": source,
            "stacks": list(entry.stacks),
            "sha256": hashlib.sha256(raw).hexdigest(),
        }
        try:
            self._prepare(path.parent)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(json.dumps(header, sort_keys=True).encode() + b"\n" + raw)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            raise CacheError(
                f"cannot write the plan cache at {self.directory} ({exc.strerror or exc}); "
                "give a writable --cache-dir, or --no-cache"
            ) from exc
        if not self._pruned:
            self._pruned = True
            self.prune()

    def _prepare(self, where: Path) -> None:
        """Create the entry's directory; on the cache's first use, mark it ignored by git and
        by backup tools."""
        if not self.directory.is_dir():
            self.directory.mkdir(parents=True, mode=0o700, exist_ok=True)
        for name, text in ((".gitignore", GITIGNORE), ("CACHEDIR.TAG", CACHEDIR_TAG)):
            marker = self.directory / name
            if not marker.exists():
                marker.write_text(text, encoding="utf-8")
        where.mkdir(parents=True, exist_ok=True)

    def prune(self, now: float | None = None, max_age_s: float = MAX_AGE_S) -> int:
        """Remove entries (and temporary files left by a killed run) not used for `max_age_s`;
        how many were removed."""
        cutoff = (time.time() if now is None else now) - max_age_s
        removed = 0
        for path in self.root.glob("*/*.json"):
            with contextlib.suppress(OSError):
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
        return removed


def _decode(data: bytes, key: str) -> Entry | Miss:
    head, sep, raw = data.partition(b"\n")
    if not sep:
        return Miss("no header line (a truncated entry?)")
    try:
        header = json.loads(head)
    except ValueError:
        return Miss("the header is not JSON")
    if not isinstance(header, dict) or header.get("gpudr_plan_cache") != FORMAT:
        return Miss(f"not a format-{FORMAT} entry")
    if header.get("key") != key:
        return Miss("its header names another key (a file copied or renamed?)")
    stacks = header.get("stacks")
    if not isinstance(stacks, list) or not all(isinstance(s, str) for s in stacks):
        return Miss("its header lists no stacks")
    if header.get("sha256") != hashlib.sha256(raw).hexdigest():
        return Miss("its report does not match its digest (truncated or edited)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Miss("its report is not UTF-8")
    return Entry(text, tuple(stacks))


__all__ = [
    "DEFAULT_DIR",
    "FORMAT",
    "CacheError",
    "Context",
    "Entry",
    "Miss",
    "PlanCache",
    "code_digest",
    "environment_digest",
    "plan_key",
]
