"""Environment variables the CLI reads, and the stderr lines `gpudr diff` reads back from the
`gpudr plan` it runs, named once."""

from __future__ import annotations

# The organisation's policy pack config (levels, thresholds, approved quotas, RPO floors,
# exemptions), for every command that runs the pack: `gpudr plan --policy-config`, the two
# `gpudr plan` runs of `gpudr diff`, and `gpudr generate --pack-config` (which writes it into
# the workflow). The Makefile and the generated workflow set it.
POLICY_CONFIG_ENV = "GPUDR_POLICY_CONFIG"
# Where `gpudr plan` and `gpudr diff` keep plans' reports to reuse (`--cache-dir`; default
# `.gpudr-cache` in the current directory). The generated pull-request workflow sets it.
CACHE_DIR_ENV = "GPUDR_CACHE_DIR"
# Set (to anything but empty or 0): print progress lines (`... what`) on stderr even when it is
# not a terminal. `gpudr diff` sets it for its two `gpudr plan` runs and shows their lines.
PROGRESS_ENV = "GPUDR_PROGRESS"
# How a progress line and a warning start on stderr.
PROGRESS_PREFIX = "... "
WARNING_PREFIX = "gpudr: warning: "
