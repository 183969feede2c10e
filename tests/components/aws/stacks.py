"""The AWS stacks the hardening tests read: the real program under the mocks, for the examples'
AWS sites (primaries and DR sites, one of them pulling from Cloud Storage with DataSync) and for
drills of the AWS DR sites. Each stack runs once per test session."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import Any

import pytest

from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.drill import build_drill
from gpudr.build.stackconfig import build_site_configs, stack_config_values, stack_name
from gpudr.contract.site import SiteConfig
from gpudr.contract.stack import DATASYNC_CREDENTIALS, key
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.conftest import ROOT

# (example, site): every AWS site of the examples, primary and DR.
SITES = [
    ("aws-two-region", "use1"),  # primary, DR on AWS
    ("aws-two-region", "usw2"),  # DR of an AWS primary: the S3 interface endpoint
    ("aws-to-gcp", "use1"),  # primary, DR on GCP
    ("gcp-to-aws", "use1"),  # DR of a GCP primary: DataSync pulls
]
# (example, DR site): the drills of the AWS DR sites.
DRILLS = [("aws-two-region", "usw2"), ("gcp-to-aws", "use1")]
NOW = datetime(2025, 1, 31, 3, 12, tzinfo=UTC)
# What the operator copies from the GCP primary's outputs into the DR stack's config:
# {config key: (value, set with --secret)}.
HMAC = {
    key(name): ("x" * 40 if secret else "GOOG1EOFFLINE", secret)
    for name, secret in DATASYNC_CREDENTIALS
}


@cache
def site_run(example: str, site: str) -> StackRun:
    plan = load_plan(ROOT / "examples" / f"{example}.yaml")
    s = plan.sites[site]
    config: dict[str, Any] = stack_config_values(design(plan), s)
    secret: list[str] = []
    protects = plan.sites.get(s.protects or "")
    if protects is not None and protects.cloud == "gcp":
        config.update({k: value for k, (value, _) in HMAC.items()})
        secret = [k for k, (_, is_secret) in HMAC.items() if is_secret]
    return run_stack(
        stack_name(plan, s), config, GpudrMocks(default_region=s.region), secret_keys=secret
    )


@cache
def drill_run(example: str, site: str) -> StackRun:
    """The drill at its test size (the capacity phase: every pool declared and sized)."""
    plan = load_plan(ROOT / "examples" / f"{example}.yaml")
    operator = "arn:aws:sts::123456789012:assumed-role/DrillRunner/alice"
    setup = build_drill(design(plan), site, NOW, operator=operator)
    return run_stack(
        setup.stack, setup.config("capacity"), GpudrMocks(default_region=setup.site.region)
    )


@cache
def site_config(example: str, site: str) -> SiteConfig:
    """The site's `gpudr:site`, as `gpudr generate` writes it (a drill's DR site's, too)."""
    plan = load_plan(ROOT / "examples" / f"{example}.yaml")
    return build_site_configs(design(plan))[site]


def sites() -> list[Any]:
    return [pytest.param(e, s, id=f"{e}-{s}") for e, s in SITES]


def every_run() -> list[Any]:
    """Every site stack, then every drill: (kind, example, site)."""
    return [pytest.param("site", e, s, id=f"{e}-{s}") for e, s in SITES] + [
        pytest.param("drill", e, s, id=f"drill-{e}-{s}") for e, s in DRILLS
    ]


def run_of(kind: str, example: str, site: str) -> StackRun:
    return site_run(example, site) if kind == "site" else drill_run(example, site)


def of_type(run: StackRun, token: str) -> list[Registration]:
    return [r for r in run.resources if r.type == token]
