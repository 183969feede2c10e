"""Calls a policy's validate function the way the engine does: props wrapped in the engine's
unknown-checking proxy, PolicyResource objects with parent, dependencies and property
dependencies resolved to objects, config only when a test passes some."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from policies.pack import POLICIES

STACK = "test"
UNKNOWN = UNKNOWN_STRING_VALUE  # what the engine sends for a value unknown during preview


def urn(resource_type: str, name: str) -> str:
    return f"urn:pulumi:{STACK}::gpudr::{resource_type}::{name}"


@dataclass
class Res:
    """One registered resource, as the offline runner records it."""

    type: str
    name: str
    inputs: dict[str, Any]
    protect: bool = False
    parent: str | None = None
    dependencies: list[str] = field(default_factory=list)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)

    @property
    def urn(self) -> str:
        return urn(self.type, self.name)

    def link(self, prop: str, target: Res) -> Res:
        """`prop` was computed from `target` (an Output of it), as Pulumi records it."""
        self.property_dependencies.setdefault(prop, []).append(target.urn)
        if target.urn not in self.dependencies:
            self.dependencies.append(target.urn)
        return self


def _options(protect: bool, parent: str | None) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=protect,
        ignore_changes=[],
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
        parent=parent,
    )


def policy_resources(records: Sequence[Mapping[str, Any]]) -> list[PolicyResource]:
    """PolicyResources from records shaped like `gpudr plan --format json` resources (type,
    name, urn, inputs, protect, parent, dependencies, property_dependencies)."""
    out = {
        r["urn"]: PolicyResource(
            r["type"],
            unknown_checking_proxy(copy.deepcopy(dict(r["inputs"]))),
            r["urn"],
            r["name"],
            _options(bool(r.get("protect")), r.get("parent")),
            None,
            None,
            [],
            {},
        )
        for r in records
    }
    for r in records:
        resource = out[r["urn"]]
        parent = r.get("parent")
        resource.parent = out.get(parent) if parent else None
        resource.dependencies = [out[d] for d in r.get("dependencies") or [] if d in out]
        resource.property_dependencies = {
            k: [out[d] for d in v if d in out]
            for k, v in (r.get("property_dependencies") or {}).items()
        }
    return list(out.values())


def records(resources: Sequence[Res]) -> list[dict[str, Any]]:
    return [
        {
            "type": r.type,
            "name": r.name,
            "urn": r.urn,
            "inputs": r.inputs,
            "protect": r.protect,
            "parent": r.parent,
            "dependencies": r.dependencies,
            "property_dependencies": r.property_dependencies,
        }
        for r in resources
    ]


Violations = list[tuple[str, str | None]]


def collector(found: Violations, at: str | None = None) -> Callable[[str, str | None], None]:
    """A report_violation callback appending (message, urn) to `found`; a resource policy's
    reports carry the resource's own URN (`at`), as the engine attaches it."""

    def report(message: str, urn: str | None = None) -> None:
        found.append((message, urn or at))

    return report


def run_stack(
    policy: StackValidationPolicy,
    resources: Sequence[Res],
    config: Mapping[str, Any] | None = None,
) -> Violations:
    """(message, urn) of each violation the stack policy reports on these resources."""
    return run_stack_records(policy, records(resources), config)


def run_stack_records(
    policy: StackValidationPolicy,
    registered: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any] | None = None,
) -> Violations:
    """The same for records shaped like `gpudr plan --format json` resources."""
    found: Violations = []
    args = StackValidationArgs(
        policy_resources(registered), dict(config) if config is not None else None
    )
    policy.validate(args, collector(found))
    return found


def run_resource(
    policy: ResourceValidationPolicy,
    resource: Res,
    config: Mapping[str, Any] | None = None,
) -> Violations:
    """(message, urn) of each violation the resource policy reports; the engine attaches the
    resource's own URN, as here."""
    found: Violations = []
    args = ResourceValidationArgs(
        resource.type,
        unknown_checking_proxy(copy.deepcopy(resource.inputs)),
        resource.urn,
        resource.name,
        _options(resource.protect, resource.parent),
        None,
        dict(config) if config is not None else None,
    )
    policy.validate(args, collector(found, resource.urn))
    return found


def check(violations: Violations, resource: Res, expected: str | None) -> None:
    """No violation when `expected` is None; else exactly one, on `resource`'s URN, whose
    message names the resource and contains `expected`."""
    if expected is None:
        assert violations == [], violations
        return
    assert len(violations) == 1, violations
    message, where = violations[0]
    assert where == resource.urn, (where, resource.urn)
    assert resource.name in message, message
    assert expected in message, message


def run_resource_records(
    policy: ResourceValidationPolicy,
    registered: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any] | None = None,
) -> Violations:
    """A resource policy over every record, as the engine calls Analyze once per resource."""
    found: Violations = []
    for r in registered:
        args = ResourceValidationArgs(
            r["type"],
            unknown_checking_proxy(copy.deepcopy(dict(r["inputs"]))),
            r["urn"],
            r["name"],
            _options(bool(r.get("protect")), r.get("parent")),
            None,
            dict(config) if config is not None else None,
        )
        policy.validate(args, collector(found, r["urn"]))
    return found


def evaluate_pack(
    registered: Sequence[Mapping[str, Any]], config: Mapping[str, Mapping[str, Any]] | None = None
) -> list[tuple[str, str, str, str]]:
    """(policy, level, urn, message) of every violation the whole pack reports on one stack,
    each policy given its part of the pack config, as `pulumi preview --policy-pack-config`
    does."""
    out = []
    for policy in POLICIES:
        level = (policy.enforcement_level or EnforcementLevel.ADVISORY).value
        own = (config or {}).get(policy.name)
        if isinstance(policy, StackValidationPolicy):
            found = run_stack_records(policy, registered, own)
        else:
            assert isinstance(policy, ResourceValidationPolicy)
            found = run_resource_records(policy, registered, own)
        out += [(policy.name, level, urn or "", message) for message, urn in found]
    return out
