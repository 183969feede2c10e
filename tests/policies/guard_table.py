"""Print the catch/slip table of the guard cases against the pack of the checkout it runs in.

    .venv/bin/python tests/policies/guard_table.py              # this checkout's pack
    cd /tmp/old && /work/main/.venv/bin/python /work/main/tests/policies/guard_table.py

The second form loads the cases from this file's folder and everything else (the pack, the
harness, the program that registers the examples' stacks) from the current directory.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, os.getcwd())

from pulumi_policy import EnforcementLevel, StackValidationPolicy

from policies.pack import POLICIES
from tests.policies.harness import (
    records,
    run_resource_records,
    run_stack_records,
)

_spec = importlib.util.spec_from_file_location(
    "guard_cases", Path(__file__).with_name("guard_cases.py")
)
assert _spec is not None and _spec.loader is not None
cases = importlib.util.module_from_spec(_spec)
sys.modules["guard_cases"] = cases  # dataclasses look their module up there
_spec.loader.exec_module(cases)


def mandatory(
    resources: list[dict[str, Any]], config: dict[str, Any] | None
) -> list[tuple[str, str]]:
    """(policy, urn) of every mandatory violation the pack reports on one stack. Not the
    harness's `evaluate_pack`: this script also runs against older checkouts, whose harness
    has none."""
    out = []
    for policy in POLICIES:
        if policy.enforcement_level is not EnforcementLevel.MANDATORY:
            continue
        own = (config or {}).get(policy.name)
        if isinstance(policy, StackValidationPolicy):
            found = run_stack_records(policy, resources, own)
        else:
            found = run_resource_records(policy, resources, own)
        out += [(policy.name, urn or "") for _, urn in found]
    return out


def unsafe_rows() -> list[str]:
    rows = []
    for case in cases.UNSAFE:
        hits = {p for p, urn in mandatory(records(case.resources), None) if urn == case.target.urn}
        verdict = "caught" if case.policies <= hits else ("partly" if hits else "SLIPS")
        rows.append(
            f"| {case.cloud} | {case.what} | {verdict} | {', '.join(sorted(hits)) or '-'} |"
        )
    return rows


def tamper_rows(config: dict[str, Any] | None) -> list[str]:
    from tests.e2e.test_policies_on_examples import EXAMPLES, stacks

    rows = []
    for tamper in cases.TAMPERS:
        refused = total = 0
        for example in EXAMPLES:
            for stack in stacks(example):
                if not cases.changes(stack["resources"], tamper):
                    continue  # nothing of what the tamper edits is in this stack
                total += 1
                refused += bool(mandatory(cases.tampered(stack["resources"], tamper), config))
        rows.append(f"| {tamper} | {refused} of {total} tampered stacks refused |")
    return rows


if __name__ == "__main__":
    import json

    config_path = Path("examples/pack-config.json")
    config = json.loads(config_path.read_text()) if config_path.exists() else None
    print("| cloud | unsafe resource | verdict | mandatory policies that refused it |")
    print("|---|---|---|---|")
    print("\n".join(unsafe_rows()))
    print()
    print("| tamper (on every example's stacks) | result |")
    print("|---|---|")
    print("\n".join(tamper_rows(config)))
