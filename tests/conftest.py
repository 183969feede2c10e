"""Shared fixtures. The Pulumi mocks are installed for every test (autouse), as Pulumi documents
for unit tests; tests that run whole stacks use offline.run, which installs its own per stack."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from gpudr.app.offline.mocks import GpudrMocks

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "aws-two-region.yaml"


@pytest.fixture(autouse=True)
def pulumi_mocks() -> GpudrMocks:
    mocks = GpudrMocks()
    pulumi.runtime.set_mocks(mocks, project="gpudr", stack="test", preview=True)
    return mocks


@pytest.fixture
def example_raw() -> dict[str, Any]:
    """The example plan as a dict, to be varied per test."""
    return copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
