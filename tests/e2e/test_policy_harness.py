"""gpudr/app/offline/policy.py speaks the Analyzer protocol as the CLI does: checked against a
tiny pack written here, so the harness is tested apart from gpudr's own policies."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from gpudr.app.offline.policy import PolicyPackError, PolicyPackProcess, evaluate

PACK = textwrap.dedent(
    """
    from pulumi_policy import (
        EnforcementLevel, PolicyConfigSchema, PolicyPack, ResourceValidationPolicy,
        StackValidationPolicy,
    )

    def no_red(args, report):
        if args.resource_type == "test:index:Thing" and args.props.get("color") == "red":
            limit = (args.get_config() or {}).get("limit", "default")
            report(f"red is not allowed (limit {limit}, protect {args.opts.protect})")

    def linked(args, report):
        for r in args.resources:
            if r.resource_type != "test:index:Setting":
                continue
            targets = [d.urn for d in r.property_dependencies.get("thing", [])]
            parent = r.parent.urn if r.parent else None
            report(f"setting -> {targets} under {parent} deps {[d.urn for d in r.dependencies]}",
                   r.urn)

    PolicyPack(
        name="harness-test",
        policies=[
            ResourceValidationPolicy(
                name="no-red", description="d", validate=no_red,
                enforcement_level=EnforcementLevel.MANDATORY,
                config_schema=PolicyConfigSchema(properties={"limit": {"type": "string"}}),
            ),
            StackValidationPolicy(
                name="linked", description="d", validate=linked,
                enforcement_level=EnforcementLevel.ADVISORY,
            ),
        ],
    )
    """
)

COMPONENT = "urn:pulumi:s::p::test:index:Group::g"
THING = "urn:pulumi:s::p::test:index:Group$test:index:Thing::t"
SETTING = "urn:pulumi:s::p::test:index:Group$test:index:Setting::s"


def _stack(color: str) -> dict[str, object]:
    return {
        "name": "s",
        "resources": [
            {"type": "test:index:Group", "name": "g", "urn": COMPONENT, "custom": False},
            {
                "type": "test:index:Thing",
                "name": "t",
                "urn": THING,
                "custom": True,
                "protect": True,
                "parent": COMPONENT,
                "inputs": {"color": color, "size": 3},
            },
            {
                "type": "test:index:Setting",
                "name": "s",
                "urn": SETTING,
                "custom": True,
                "parent": COMPONENT,
                "dependencies": [THING],
                "property_dependencies": {"thing": [THING]},
                "inputs": {"thing": "t-id"},
            },
        ],
    }


@pytest.fixture
def pack_dir(tmp_path: Path) -> Path:
    (tmp_path / "__main__.py").write_text(PACK, encoding="utf-8")
    return tmp_path


def test_resource_and_stack_policies_report_through_grpc(pack_dir: Path) -> None:
    found = evaluate([_stack("red")], pack_dir=pack_dir)["s"]
    by_policy = {v.policy: v for v in found}
    red = by_policy["no-red"]
    assert (red.level, red.urn) == ("mandatory", THING), red
    assert "protect True" in red.message, red.message
    link = by_policy["linked"]
    assert (link.level, link.urn) == ("advisory", SETTING), link
    # Parent, dependencies and property dependencies arrive resolved to the right resources.
    assert f"-> ['{THING}'] under {COMPONENT} deps ['{THING}']" in link.message, link.message


def test_a_compliant_stack_has_no_resource_violation(pack_dir: Path) -> None:
    found = evaluate([_stack("blue")], pack_dir=pack_dir)["s"]
    assert [v.policy for v in found] == ["linked"], found


def test_config_reaches_the_policy_and_can_change_its_level(pack_dir: Path) -> None:
    config = {"no-red": {"enforcementLevel": "advisory", "limit": "ten"}}
    found = evaluate([_stack("red")], config=config, pack_dir=pack_dir)["s"]
    red = next(v for v in found if v.policy == "no-red")
    assert red.level == "advisory", red
    assert "limit ten" in red.message, red.message


def test_the_pack_describes_its_policies(pack_dir: Path) -> None:
    with PolicyPackProcess(pack_dir) as pack:
        assert pack.info is not None
        assert pack.info.name == "harness-test"
        assert sorted(p.name for p in pack.info.policies) == ["linked", "no-red"]


def test_a_pack_that_does_not_start_is_reported(tmp_path: Path) -> None:
    (tmp_path / "__main__.py").write_text("raise SystemExit('broken pack')\n", encoding="utf-8")
    with pytest.raises(PolicyPackError, match="did not start"):
        evaluate([_stack("red")], pack_dir=tmp_path)


def test_config_without_a_level_keeps_the_policys_own(pack_dir: Path) -> None:
    found = evaluate([_stack("red")], config={"no-red": {"limit": "ten"}}, pack_dir=pack_dir)
    red = next(v for v in found["s"] if v.policy == "no-red")
    assert (red.level, "limit ten" in red.message) == ("mandatory", True), red


def test_a_pack_that_cannot_be_configured_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad policy config fails in `__enter__`, where `with` never calls `__exit__`: the pack
    process must not be left running."""
    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def recording_popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        return proc

    monkeypatch.setattr(subprocess, "Popen", recording_popen)
    with (
        pytest.raises(PolicyPackError, match="not a policy of this pack"),
        PolicyPackProcess(config={"no-such-policy": {}}),
    ):
        pass
    assert len(started) == 1
    assert started[0].poll() is not None, "the pack process is still running"
