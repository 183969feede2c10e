"""The Pulumi mocks for every component test (`pulumi.runtime.set_mocks`, as Pulumi documents
for unit tests), installed before each test."""

from __future__ import annotations

import pulumi
import pytest

from gpudr.app.offline.mocks import GpudrMocks


@pytest.fixture(autouse=True)
def pulumi_mocks() -> GpudrMocks:
    mocks = GpudrMocks()
    pulumi.runtime.set_mocks(mocks, project="gpudr", stack="test", preview=True)
    return mocks
