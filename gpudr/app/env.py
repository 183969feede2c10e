"""Environment variables the CLI reads, named once."""

from __future__ import annotations

# The organisation's policy pack config (levels, thresholds, approved quotas, RPO floors,
# exemptions), for every command that runs the pack: `gpudr plan --policy-config`, the two
# `gpudr plan` runs of `gpudr diff`, and `gpudr generate --pack-config` (which writes it into
# the workflow). The Makefile and the generated workflow set it.
POLICY_CONFIG_ENV = "GPUDR_POLICY_CONFIG"
