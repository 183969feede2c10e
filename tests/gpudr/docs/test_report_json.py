"""`gpudr plan --format json` written from each plan's stored text (gpudr/docs/report.py):
`portfolio_json` nests the plans' `plan_json` texts exactly as `to_json` writes the portfolio,
and `plan_verdict` reads a plan's verdict from its text."""

from __future__ import annotations

from typing import Any

import pytest

from gpudr.docs.report import build_portfolio, plan_json, plan_verdict, portfolio_json, to_json


def report(meets: bool, policy_ok: bool | None, **extra: Any) -> dict[str, Any]:
    return {
        "schema": 1,
        "plan": {"name": "p", "source": "plans/p.yaml", "note": '\n  "meets": false'},
        "meets": meets,
        "policy_ok": policy_ok,
        "stacks": [],
        **extra,
    }


PLANS = [
    report(True, True, cost={"monthly_usd": 1.5, "lines": []}),
    report(False, None, workloads=[{"name": "é\u2028", "meets": True, "nested": [[], {}]}]),
    report(True, False, stacks=[{"name": "s", "resources": [{"inputs": {"a": [1, 2.5]}}]}]),
]


@pytest.mark.parametrize(
    "plans",
    [PLANS[:2], PLANS[1:], PLANS, [PLANS[0], PLANS[0]]],
    ids=["met and not", "policy unrun and refused", "three", "the same twice"],
)
def test_the_portfolio_from_texts_is_to_json_of_the_portfolio(
    plans: list[dict[str, Any]],
) -> None:
    assert portfolio_json([plan_json(p) for p in plans]) == to_json(build_portfolio(plans))


@pytest.mark.parametrize(
    ("meets", "policy_ok"),
    [(True, True), (True, False), (False, True), (True, None), (False, None)],
)
def test_the_verdict_is_read_from_the_top_level_keys(meets: bool, policy_ok: bool | None) -> None:
    # The plan's note holds a line that looks like a verdict: it is nested, and escaped.
    assert plan_verdict(plan_json(report(meets, policy_ok))) == (meets, policy_ok)


def test_a_text_without_a_verdict_is_refused() -> None:
    with pytest.raises(ValueError, match="no top-level meets and policy_ok"):
        plan_verdict(plan_json({"schema": 1, "plan": {"meets": True, "policy_ok": True}}))
