"""Shared fixtures. Nothing here installs the Pulumi mocks: the planner's tests import no SDK.
Component tests get the mocks from tests/components/conftest.py, as Pulumi documents for unit
tests; tests that run whole stacks use gpudr.app.offline.run, which installs its own per stack."""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "aws-two-region.yaml"
# The organisation's pack config the examples are judged under (the RTC quota AWS raised for
# llm-training), as the Makefile exports it: absolute, for runs that start elsewhere.
PACK_CONFIG_PATH = ROOT / "examples" / "pack-config.json"
PACK_CONFIG: dict[str, dict[str, Any]] = json.loads(PACK_CONFIG_PATH.read_text())
os.environ["GPUDR_POLICY_CONFIG"] = str(PACK_CONFIG_PATH)


@pytest.fixture(scope="session", autouse=True)
def _session_plan_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A plan cache of the session's own for fixtures wider than a test (set up before
    `_own_plan_cache`): no test writes `.gpudr-cache` into the checkout."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GPUDR_CACHE_DIR", str(tmp_path_factory.mktemp("plan-cache-session")))
        yield


@pytest.fixture(autouse=True)
def _own_plan_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test its own, empty plan cache (`gpudr plan --cache-dir`): a test that patches the
    program or the pack must not be answered from another test's run. The cache's own tests
    name their directories."""
    monkeypatch.setenv("GPUDR_CACHE_DIR", str(tmp_path_factory.mktemp("plan-cache")))


def copy_code(dest: Path) -> Path:
    """A copy, under `dest`, of the code the plan cache keys (gpudr.app.cache.CODE): another
    checkout of the same project."""
    from gpudr.app.cache import CODE

    dest.mkdir()
    for name in CODE:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, dest / name)
    return dest


@pytest.fixture
def example_raw() -> dict[str, Any]:
    """The example plan as a dict, to be varied per test."""
    return copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
