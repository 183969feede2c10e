"""Every irreversible setting is named in the plan report (JSON, text, markdown) and in the
runbook of each pair it concerns: what, where, for how long, and how a trial avoids it. Before,
a trial `pulumi up` locked weights for a year and neither said so."""

from __future__ import annotations

import json

import pytest

from gpudr.build.irreversible import irreversible_settings
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from gpudr.docs.report import IRREVERSIBLE_TITLE, build_report, render_text, to_markdown
from gpudr.docs.runbook import build_runbook, render_runbook
from tests.conftest import ROOT

EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_plan_report_names_every_irreversible_setting(example: str) -> None:
    d = design(load_plan(ROOT / "examples" / f"{example}.yaml"))
    report = json.loads(json.dumps(build_report(d, [])))
    expected = [x.to_dict() for x in irreversible_settings(d)]
    assert report["irreversible"] == expected and expected
    text, markdown = render_text(report, width=400), to_markdown(report)
    assert IRREVERSIBLE_TITLE in text and f"## {IRREVERSIBLE_TITLE}" in markdown
    for x in expected:
        for part in ("what", "where", "lasts", "trial"):
            assert x[part] in markdown, (part, x[part])
        assert x["where"] in text


@pytest.mark.parametrize("example", EXAMPLES)
def test_each_runbook_names_its_pairs_irreversible_settings(example: str) -> None:
    d = design(load_plan(ROOT / "examples" / f"{example}.yaml"))
    for primary, dr in d.plan.pairs():
        text = render_runbook(build_runbook(d, primary.name, dr.name), "<!-- header -->")
        section = text.split("## Irreversible settings", 1)[1].split("\n## ", 1)[0]
        mine = irreversible_settings(d, (primary.name, dr.name))
        assert mine
        for x in mine:
            assert f"| `{x.stack}` | {x.what} | {x.where} | {x.lasts} | {x.trial} |" in section
