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


class UncacheableCode(CacheError):
    """The code cannot be keyed with certainty (a symlink, an unreadable file): not cached."""


# The virtualenv the Pulumi CLI builds inside the pack's folder (PulumiPolicy.yaml's
# `virtualenv`): the pack's third-party packages, keyed by their versions, not their files.
PACK_VIRTUALENV = "policies/venv"


def _code_files(project: Path) -> list[Path]:
    """Every file of `CODE`, sorted, but for bytecode (`__pycache__`, `.pyc`) and the pack's
    virtualenv. Nothing else is left out: a file a run does not read only costs a miss.

    Raises UncacheableCode for a symlink: where it leads can change without any hashed byte
    changing."""
    files: list[Path] = []
    for name in CODE:
        top = project / name
        if top.is_symlink():
            raise UncacheableCode(f"{top} is a symlink")
        if top.is_file():
            files.append(top)
            continue
        for root, dirs, names in os.walk(top):
            here = Path(root)
            links = [n for n in (*dirs, *names) if (here / n).is_symlink()]
            if links:
                raise UncacheableCode(f"{here / links[0]} is a symlink")
            dirs[:] = sorted(
                d
                for d in dirs
                if d != "__pycache__"
                and (here / d).relative_to(project).as_posix() != PACK_VIRTUALENV
            )
            files.extend(here / n for n in sorted(names) if not n.endswith((".pyc", ".pyo")))
    return files


def code_digest(project: Path = PROJECT_DIR) -> str:
    """SHA-256 over the path and bytes of every file of the code that builds and judges a plan.

    Raises UncacheableCode when a file cannot be read or is a symlink."""
    digest = hashlib.sha256()
    for path in _code_files(project):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise UncacheableCode(f"{path} cannot be read ({exc.strerror or exc})") from exc
        rel = path.relative_to(project).as_posix().encode()
        digest.update(b"%d:%s%d:" % (len(rel), rel, len(data)))
        digest.update(data)
    return digest.hexdigest()


def installed_versions() -> list[str]:
    """Where this interpreter imports from, in order, and what each place holds: for each
    entry of `sys.path` (but the current directory and the project, whose code is keyed
    file by file), the entry and the metadata directories in it (`pulumi_aws-7.51.1.dist-info`:
    a distribution's name and version, as pip wrote them). The names say what
    `importlib.metadata` would read from each METADATA file, in a fiftieth of the time."""
    here = {os.path.realpath("."), os.path.realpath(PROJECT_DIR)}
    lines: list[str] = []
    for entry in sys.path:
        if not entry or os.path.realpath(entry) in here:
            continue
        try:
            names = os.listdir(entry)
        except OSError:  # not a directory (a zip, a missing entry): its path only
            names = []
        lines.append(f"path {entry}")
        lines.extend(sorted(n for n in names if n.endswith((".dist-info", ".egg-info"))))
    return lines


def _sdk_settings() -> list[str]:
    """The environment variables the Pulumi SDK reads (`PULUMI_*`), as `name=value`."""
    return sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("PULUMI_"))


def environment_digest(versions: Iterable[str] | None = None) -> str:
    """SHA-256 over the interpreter, where it imports from and the distributions there (with
    their versions), and the Pulumi SDK's settings in the environment."""
    lines = [
        f"python {sys.implementation.name} {sys.version}",
        *(installed_versions() if versions is None else versions),
        *_sdk_settings(),
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
            "sha256": _entry_digest(entry.stacks, raw),
        }
        try:
            self._prepare(path.parent)
            _write_atomically(path, json.dumps(header, sort_keys=True).encode() + b"\n" + raw)
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
                _write_atomically(marker, text.encode())
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


def trust_problem(directory: Path) -> str | None:
    """Why a cache directory that exists cannot be trusted (one line, with the fix); None if
    only this user can write to it. Whoever can write an entry can write a report that says
    "met"."""
    problems = []
    for where in (directory, directory / f"v{FORMAT}"):
        try:
            st = where.stat()
        except OSError:
            continue
        if st.st_uid != os.getuid():
            problems.append(f"{where} is owned by another user (uid {st.st_uid})")
        elif st.st_mode & 0o022:
            problems.append(f"{where} is writable by others (mode {st.st_mode & 0o777:o})")
    if not problems:
        return None
    return (
        f"{problems[0]}: a hit is only as trustworthy as the directory; use one only you can "
        "write to, or --no-cache; nothing was run"
    )


def _write_atomically(path: Path, data: bytes) -> None:
    """`data` into a temporary file beside `path`, synced, then renamed over it: a reader sees
    the whole file or none."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _entry_digest(stacks: Sequence[str], raw: bytes) -> str:
    """SHA-256 over what an entry holds: its stacks' names (the refusal of two plans sharing a
    stack reads them) and its report."""
    return hashlib.sha256(json.dumps(list(stacks)).encode() + b"\n" + raw).hexdigest()


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
    if header.get("sha256") != _entry_digest(stacks, raw):
        return Miss("it does not match its digest (truncated or edited)")
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
    "UncacheableCode",
    "code_digest",
    "environment_digest",
    "plan_key",
    "trust_problem",
]
