"""A failover leaves the pulls from on premises as the operator paused them (runbook step
"Pause the scheduled pulls"): in `gpudr:mode failover` each DR stack's schedules, on every
cloud, keep their deployed state (`ignore_changes`), so no `pulumi up` during the failover
resumes a pull whose return could overwrite, or for checkpoints delete, what the DR site wrote.
In standby the stack owns them again."""

from __future__ import annotations

from typing import Any

import pytest

from gpudr.app.offline.mocks import GpudrMocks
from gpudr.app.offline.plan import activated_agents, registered_agents
from gpudr.app.offline.run import run_stack
from gpudr.build.stackconfig import stack_config_values, stack_name
from gpudr.contract.stack import MODE_KEY
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.conftest import ROOT

# (example, DR site, the pull resources' type, the field a failover leaves alone)
PULLS = [
    ("onprem-to-aws", "euc1", "aws:datasync/task:Task", "schedule"),
    ("onprem-to-gcp", "euw4", "gcp:storage/transferJob:TransferJob", "status"),
    ("onprem-to-azure", "eus", "azure-native:logic:Workflow", "state"),
]


def _pulls(example: str, dr: str, typ: str, mode: str) -> list[Any]:
    plan = load_plan(ROOT / "examples" / f"{example}.yaml")
    site = plan.sites[dr]
    onprem = plan.onprem[site.protects or ""]
    agents = {"aws": activated_agents(onprem, site.region), "azure": registered_agents(onprem)}
    config: dict[str, Any] = {
        **stack_config_values(design(plan), site),
        **{f"gpudr:{k.split(':')[-1]}": v for k, v in agents.get(site.cloud, {}).items()},
        MODE_KEY: mode,
    }
    regs = run_stack(stack_name(plan, site), config, GpudrMocks(default_region=site.region))
    return [r for r in regs.registrations if r.type == typ]


@pytest.mark.parametrize(("example", "dr", "typ", "field"), PULLS)
@pytest.mark.parametrize("mode", ["standby", "failover"])
def test_a_failover_leaves_the_paused_pulls_alone(
    example: str, dr: str, typ: str, field: str, mode: str
) -> None:
    pulls = _pulls(example, dr, typ, mode)
    assert len(pulls) == 3, [p.urn for p in pulls]
    for p in pulls:
        expected = (field,) if mode == "failover" else ()
        assert p.ignore_changes == expected, p.urn


# What pauses one pull, per DR cloud, in the runbook's pause step.
PAUSE = {
    "onprem-to-aws": ('"Status":"DISABLED"', "--query 'Schedule.Status'"),
    "onprem-to-gcp": ("--status=disabled", "--format='value(status)'"),
    "onprem-to-azure": ("--state Disabled", "--query state -o tsv"),
}


@pytest.mark.parametrize("example", sorted(PAUSE))
def test_the_runbook_pauses_every_pull_and_checks_it(example: str) -> None:
    plan = load_plan(ROOT / "examples" / f"{example}.yaml")
    dr = next(s for s in plan.sites.values() if s.protects in plan.onprem)
    text = (ROOT / "runbooks" / f"{plan.name}-{dr.protects}-to-{dr.name}.md").read_text()
    step = text.split("**Pause the scheduled pulls")[1].split("\n6. ")[0]
    pause, check = PAUSE[example]
    assert step.count(pause) == 3, step
    assert step.count(check) == 3, step
    assert "--refresh" in text.split("## Failback")[1]
