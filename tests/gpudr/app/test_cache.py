"""The plan cache's key and entries (gpudr/app/cache.py); the runs through `gpudr plan` are in
tests/e2e/test_plan_cache.py."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudr.app import cache as cache_module
from gpudr.app.cache import (
    FORMAT,
    Context,
    Entry,
    Miss,
    PlanCache,
    code_digest,
    environment_digest,
    plan_key,
)
from gpudr.core.paths import PROJECT_DIR
from tests.conftest import copy_code

PLAN = b"name: llm\nsites: {}\n"
CONTEXT = Context(
    code="c" * 64,
    environment="e" * 64,
    pack_config={"replication-meets-rpo": {"enforcementLevel": "mandatory", "quota": 1}},
)
KEY = plan_key("plans/llm.yaml", PLAN, CONTEXT)
ENTRY = Entry('{\n  "schema": 1,\n  "meets": true,\n  "policy_ok": true\n}', ("llm-a", "llm-b"))


# --- the key --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("what", "source", "plan", "context"),
    [
        ("the plan's bytes", "plans/llm.yaml", PLAN + b" ", CONTEXT),
        ("the path the report names", "./plans/../plans/llm.yaml", PLAN, CONTEXT),
        ("the code", "plans/llm.yaml", PLAN, dataclasses.replace(CONTEXT, code="d" * 64)),
        (
            "the installed packages",
            "plans/llm.yaml",
            PLAN,
            dataclasses.replace(CONTEXT, environment="f" * 64),
        ),
        (
            "a pack config property",
            "plans/llm.yaml",
            PLAN,
            dataclasses.replace(
                CONTEXT,
                pack_config={
                    "replication-meets-rpo": {"enforcementLevel": "mandatory", "quota": 2}
                },
            ),
        ),
        (
            "no pack (--no-policy)",
            "plans/llm.yaml",
            PLAN,
            dataclasses.replace(CONTEXT, pack_config=None),
        ),
        ("--stack", "plans/llm.yaml", PLAN, dataclasses.replace(CONTEXT, sites=["a"])),
    ],
)
def test_each_input_changes_the_key(what: str, source: str, plan: bytes, context: Context) -> None:
    assert plan_key(source, plan, context) != KEY, what


def test_the_same_pack_config_in_another_key_order_is_the_same_key() -> None:
    config = {"b": "advisory", "a": {"quota": 1, "enforcementLevel": "mandatory"}}
    reordered = {"a": {"enforcementLevel": "mandatory", "quota": 1}, "b": "advisory"}
    assert plan_key("p", PLAN, dataclasses.replace(CONTEXT, pack_config=config)) == plan_key(
        "p", PLAN, dataclasses.replace(CONTEXT, pack_config=reordered)
    )


def test_the_stacks_asked_for_are_a_set() -> None:
    one = dataclasses.replace(CONTEXT, sites=["a", "b"])
    other = dataclasses.replace(CONTEXT, sites=["b", "a"])
    assert plan_key("p", PLAN, one) == plan_key("p", PLAN, other)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the code the key covers."""
    return copy_code(tmp_path / "project")


def test_the_copy_digests_as_the_checkout(project: Path) -> None:
    assert code_digest(project) == code_digest(PROJECT_DIR)


@pytest.mark.parametrize(
    "change",
    [
        "components/aws/bucket.py",  # a component
        "policies/replication_meets_rpo.py",  # a policy
        "gpudr/core/data/prices.yaml",  # a price
        "__main__.py",  # the program
        "templates/runbook.md.j2",  # the report's prose
    ],
)
def test_a_change_to_any_code_file_changes_the_digest(project: Path, change: str) -> None:
    before = code_digest(project)
    path = project / change
    path.write_bytes(path.read_bytes() + b"\n")
    assert code_digest(project) != before


def test_a_new_module_changes_the_digest(project: Path) -> None:
    before = code_digest(project)
    (project / "components" / "aws" / "extra.py").write_text("X = 1\n")
    assert code_digest(project) != before


def test_moving_bytes_between_files_changes_the_digest(project: Path) -> None:
    # Each file is framed by its name and length: "ab" + "c" is not "a" + "bc".
    before = code_digest(project)
    first, second = (
        project / "components" / "aws" / "kms.py",
        project / "components" / "aws" / "logs.py",
    )
    text = second.read_bytes()
    first.write_bytes(first.read_bytes() + text[:10])
    second.write_bytes(text[10:])
    assert code_digest(project) != before


@pytest.mark.parametrize(
    "noise",
    [
        "components/aws/__pycache__/bucket.cpython-311.pyc",  # bytecode
        "gpudr/core/stray.pyc",
        "policies/venv/lib/site.py",  # the virtualenv the Pulumi CLI makes in the pack's folder
    ],
)
def test_bytecode_and_the_packs_virtualenv_are_not_code(project: Path, noise: str) -> None:
    before = code_digest(project)
    path = project / noise
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("anything\n")
    assert code_digest(project) == before


def test_the_virtualenv_left_out_is_the_one_the_pack_names() -> None:
    options = yaml.safe_load((PROJECT_DIR / "policies" / "PulumiPolicy.yaml").read_text())
    virtualenv = options["runtime"]["options"]["virtualenv"]
    assert f"policies/{virtualenv}" == cache_module.PACK_VIRTUALENV


@pytest.mark.parametrize(
    "hideout",
    [
        "components/aws",  # a virtualenv marker beside real code hides nothing
        "policies/.cache",  # nor does a hidden directory
    ],
)
def test_nothing_else_hides_code_from_the_key(project: Path, hideout: str) -> None:
    where = project / hideout
    where.mkdir(parents=True, exist_ok=True)
    (where / "pyvenv.cfg").write_text("home = /usr\n")
    (where / "site.py").write_text("A = 1\n")
    before = code_digest(project)
    (where / "site.py").write_text("A = 2\n")
    assert code_digest(project) != before


def test_a_symlink_in_the_code_is_not_keyed(project: Path) -> None:
    # Where a link leads can change without a hashed byte changing: nothing is cached.
    (project / "components" / "aws" / ".#site.py").symlink_to("root@host.1234")
    with pytest.raises(cache_module.UncacheableCode, match=r"\.#site\.py is a symlink"):
        code_digest(project)


def test_one_package_version_changes_the_environment() -> None:
    versions = ["grpcio-1.85.3.dist-info", "pulumi_aws-7.51.1.dist-info"]
    bumped = ["grpcio-1.85.3.dist-info", "pulumi_aws-7.51.2.dist-info"]
    assert environment_digest(versions) != environment_digest(bumped)
    assert environment_digest(versions) == environment_digest(list(versions))


def test_the_environment_names_every_distribution_and_its_version() -> None:
    """Each installed distribution, with the version importlib.metadata reads from it."""
    from importlib import metadata

    listed = set(cache_module.installed_versions())
    for name in ("pulumi", "pulumi_aws", "pulumi_gcp", "pulumi_azure_native", "pulumi_policy"):
        dist = metadata.distribution(name)
        assert f"{name}-{dist.version}.dist-info" in listed, name
    for dist in metadata.distributions():
        where = dist._path  # type: ignore[attr-defined]
        if where.parent.resolve() in (PROJECT_DIR, Path.cwd().resolve()):
            continue  # the project's own code is keyed file by file
        assert where.name in listed, where


# --- entries --------------------------------------------------------------------------------


def test_an_entry_reads_back_as_stored(tmp_path: Path) -> None:
    cache = PlanCache(tmp_path / "cache")
    assert cache.get(KEY) == Miss()
    cache.put(KEY, "plans/llm.yaml", ENTRY)
    assert cache.get(KEY) == ENTRY
    assert cache.path(KEY) == tmp_path / "cache" / f"v{FORMAT}" / KEY[:2] / f"{KEY}.json"


def _entry_bytes(tmp_path: Path) -> tuple[PlanCache, bytes]:
    cache = PlanCache(tmp_path / "cache")
    cache.put(KEY, "plans/llm.yaml", ENTRY)
    return cache, cache.path(KEY).read_bytes()


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def _header(data: bytes, **changes: Any) -> bytes:
    head, _, body = data.partition(b"\n")
    header = {**json.loads(head), **changes}
    return json.dumps(header).encode() + b"\n" + body


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda d: d[:-5], "truncated or edited"),  # a write cut short
        (lambda d: d.split(b"\n")[0], "no header line"),
        (lambda d: _flip(d, len(d) - 5), "truncated or edited"),  # one bit of the report
        (lambda d: b"{not json\n" + d.partition(b"\n")[2], "header is not JSON"),
        (lambda d: _header(d, gpudr_plan_cache=FORMAT + 1), f"not a format-{FORMAT} entry"),
        (lambda d: _header(d, key="0" * 64), "names another key"),
        (lambda d: _header(d, stacks="llm-a"), "lists no stacks"),
        # The stacks' names are in the digest: the shared-stack refusal reads them.
        (lambda d: _header(d, stacks=[]), "truncated or edited"),
        (lambda d: _header(d, sha256=None), "truncated or edited"),
        (lambda d: b"", "no header line"),
    ],
)
def test_a_damaged_entry_is_a_miss_that_says_why(tmp_path: Path, damage: Any, problem: str) -> None:
    cache, data = _entry_bytes(tmp_path)
    cache.path(KEY).write_bytes(damage(data))
    found = cache.get(KEY)
    assert isinstance(found, Miss)
    assert found.problem is not None and problem in found.problem
    assert str(cache.path(KEY)) in found.problem
    # The run that missed stores the entry again, whole.
    cache.put(KEY, "plans/llm.yaml", ENTRY)
    assert cache.get(KEY) == ENTRY


def test_an_entry_under_another_name_is_not_read_as_this_one(tmp_path: Path) -> None:
    cache, data = _entry_bytes(tmp_path)
    other = plan_key("plans/other.yaml", PLAN, CONTEXT)
    cache.path(other).parent.mkdir(parents=True, exist_ok=True)
    cache.path(other).write_bytes(data)
    assert isinstance(cache.get(other), Miss)


def test_a_failed_write_leaves_no_entry_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = PlanCache(tmp_path / "cache")

    def refuse(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_module.os, "replace", refuse)
    with pytest.raises(cache_module.CacheError, match=r"No space left on device.*--cache-dir"):
        cache.put(KEY, "plans/llm.yaml", ENTRY)
    assert cache.get(KEY) == Miss()
    left = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert left == []


def test_a_reader_never_sees_half_an_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The entry appears by one rename of a file already written whole and synced.
    cache = PlanCache(tmp_path / "cache")
    seen: list[Any] = []
    real_replace = os.replace

    def replace(src: str, dst: Path) -> None:
        if dst == cache.path(KEY):
            seen.append(cache.get(KEY))  # just before the rename: no entry yet
            assert json.loads(Path(src).read_bytes().partition(b"\n")[0])["key"] == KEY
        real_replace(src, dst)

    monkeypatch.setattr(cache_module.os, "replace", replace)
    cache.put(KEY, "plans/llm.yaml", ENTRY)
    assert seen == [Miss()]
    assert cache.get(KEY) == ENTRY


def test_the_directory_is_ignored_by_git_and_backups(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    cache = PlanCache(repo / ".gpudr-cache")
    cache.put(KEY, "plans/llm.yaml", ENTRY)
    assert (
        (repo / ".gpudr-cache" / "CACHEDIR.TAG")
        .read_text()
        .startswith("Signature: 8a477f597d28d172789f06886806bc55")
    )
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""


def test_this_repository_ignores_the_default_directory() -> None:
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", f"{cache_module.DEFAULT_DIR}/v1/ab/x.json"],
        cwd=PROJECT_DIR,
        check=False,
    )
    assert ignored.returncode == 0


def test_entries_unused_for_the_max_age_are_pruned(tmp_path: Path) -> None:
    cache = PlanCache(tmp_path / "cache")
    cache.put(KEY, "plans/llm.yaml", ENTRY)
    other = plan_key("plans/other.yaml", PLAN, CONTEXT)
    cache.put(other, "plans/other.yaml", ENTRY)
    old = time.time() - cache_module.MAX_AGE_S - 60
    os.utime(cache.path(other), (old, old))
    assert cache.prune() == 1
    assert cache.get(KEY) == ENTRY
    assert cache.get(other) == Miss()


def test_a_hit_counts_as_a_use(tmp_path: Path) -> None:
    cache = PlanCache(tmp_path / "cache")
    cache.put(KEY, "plans/llm.yaml", ENTRY)
    old = time.time() - cache_module.MAX_AGE_S - 60
    os.utime(cache.path(KEY), (old, old))
    assert cache.get(KEY) == ENTRY
    assert cache.prune() == 0


def test_a_directory_others_can_write_is_not_trusted(tmp_path: Path) -> None:
    cache = PlanCache(tmp_path / "cache")
    cache.put(KEY, "plans/llm.yaml", ENTRY)
    assert cache_module.trust_problem(tmp_path / "cache") is None
    os.chmod(tmp_path / "cache" / f"v{FORMAT}", 0o777)
    problem = cache_module.trust_problem(tmp_path / "cache")
    assert problem is not None and "is writable by others (mode 777)" in problem
    assert problem.endswith("use one only you can write to, or --no-cache; nothing was run")
