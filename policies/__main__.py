"""gpudr's policy pack: `pulumi preview --policy-pack policies`.

Run as the Pulumi CLI runs a Python pack (`python -u policies/__main__.py`): the pack binds a
gRPC Analyzer server on 127.0.0.1, prints its port on stdout and serves until stopped.
`gpudr plan` starts it the same way and feeds it what the program registered under mocks.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The CLI runs this file from the pack's directory; the repository root holds the `policies`
# package and the pure-Python `gpudr` library the policies reuse for the sizing formulas.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policies.pack import PACK_NAME, POLICIES  # noqa: E402

PolicyPack(
    name=PACK_NAME,
    policies=POLICIES,
    # Each policy sets its own level; this applies only to one that does not.
    enforcement_level=EnforcementLevel.MANDATORY,
    display_name="gpudr: DR data safety and RPO-implied bandwidth",
    description=(
        "Refuses a deployment that is unencrypted, publicly reachable, deletable, or whose "
        "replication cannot physically meet its RPO; advises on GPU standby sizing."
    ),
)
