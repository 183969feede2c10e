"""What an offline run raises when a plan's program or the policy pack fails: here, apart from
the modules that raise them, so that the CLI can catch them without importing gRPC and Pulumi
before the process that imports the SDKs is forked (offline/portfolio.py)."""

from __future__ import annotations


class PlanRunError(RuntimeError):
    """A plan's program failed, or a process running plans died; the message names the plan
    when there is one."""


class PolicyPackError(RuntimeError):
    """The pack did not start or answer; the message says what it printed."""


__all__ = ["PlanRunError", "PolicyPackError"]
