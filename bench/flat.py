"""The flat baseline: the custom resources gpudr's program registered, registered again directly.

`flat_resources` takes what one stack's run registered (offline.mocks.Registration, through
offline.plan's stack records) and keeps each custom resource's type, name, inputs and options.
`bench/flat_program.py` registers them under the same mocks and the same `offline.run.run_stack`
harness, each with the cloud SDK's own resource class for its type (so aliases, declared output
properties and input translation cost what they cost in gpudr's program), with the recorded
inputs as literal values: no ComponentResource, no Output passed between resources.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import pulumi
from pulumi import _types
from pulumi.runtime import rpc

PROGRAM = __file__.replace("flat.py", "flat_program.py")


@dataclass(frozen=True)
class FlatResource:
    type: str
    name: str
    inputs: dict[str, Any]
    protect: bool
    retain_on_delete: bool


# What bench/flat_program.py registers when run_stack runs it (one stack at a time).
CURRENT: list[FlatResource] = []


def flat_resources(resources: Iterable[Mapping[str, Any]]) -> list[FlatResource]:
    """The custom resources of one stack record (offline.plan), in registration-independent
    (URN) order."""
    return [
        FlatResource(
            type=str(r["type"]),
            name=str(r["name"]),
            inputs=dict(r["inputs"]),
            protect=bool(r["protect"]),
            retain_on_delete=bool(r["retain_on_delete"]),
        )
        for r in resources
        if r["custom"]
    ]


@cache
def sdk_class(type_token: str) -> type[pulumi.CustomResource]:
    """The SDK class registered for a resource type token, e.g. aws:s3/bucket:Bucket ->
    pulumi_aws.s3.Bucket (the SDK package must have been imported)."""
    pkg, mod, _ = type_token.split(":")
    module = rpc.get_resource_module(pkg, mod, "")
    info = getattr(module, "mod_info", None)
    if not isinstance(info, dict) or type_token not in info.get("classes", {}):
        raise LookupError(f"no SDK class registered for {type_token}")
    cls = getattr(importlib.import_module(info["fqn"]), info["classes"][type_token])
    if not (isinstance(cls, type) and issubclass(cls, pulumi.CustomResource)):
        raise LookupError(f"{type_token}: {cls!r} is not a custom resource class")
    return cls


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@cache
def _keyword_names(cls: type) -> dict[str, str]:
    """Engine (camelCase) input name -> the SDK class's keyword argument for it: the name its
    input type gives the property, with the trailing `_` the SDK adds where that name is taken
    by the constructor's own arguments (e.g. azure-native's `resource_name_`)."""
    module = importlib.import_module(cls.__module__)
    args_names = [n for n in getattr(module, "__all__", ()) if n.endswith("Args")]
    if len(args_names) != 1:
        raise LookupError(f"{cls.__module__}: no single Args class among {args_names}")
    params = set(inspect.signature(cls._internal_init).parameters)  # type: ignore[attr-defined]
    out: dict[str, str] = {}
    for py_name, pulumi_name, _ in _types._py_properties(getattr(module, args_names[0])):
        taken = py_name in ("resource_name", "opts") and f"{py_name}_" in params
        out[pulumi_name] = f"{py_name}_" if taken else py_name
    return out


def kwargs_for(cls: type, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The recorded (engine-named) inputs as the SDK class's keyword arguments. Nested values
    stay as recorded: the SDK passes keys it does not know through unchanged."""
    names = _keyword_names(cls)
    return {names.get(k) or _snake(k): v for k, v in inputs.items()}


def register(resource: FlatResource) -> pulumi.CustomResource:
    cls = sdk_class(resource.type)
    opts = pulumi.ResourceOptions(
        protect=resource.protect or None, retain_on_delete=resource.retain_on_delete or None
    )
    made: pulumi.CustomResource = cls(resource.name, opts=opts, **kwargs_for(cls, resource.inputs))
    return made
