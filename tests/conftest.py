"""Shared fixtures. Nothing here installs the Pulumi mocks: the planner's tests import no SDK.
Component tests get the mocks from tests/components/conftest.py, as Pulumi documents for unit
tests; tests that run whole stacks use gpudr.app.offline.run, which installs its own per stack."""

from __future__ import annotations

import copy
import json
import os
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


@pytest.fixture
def example_raw() -> dict[str, Any]:
    """The example plan as a dict, to be varied per test."""
    return copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
