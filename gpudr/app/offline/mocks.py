"""Mocks for `pulumi.runtime.set_mocks`, and a monitor that records what the program registered.

The ids and outputs are what a provider would return, made deterministic (same plan, same ids)
so offline runs can be diffed: each cloud's answers are in mocks_aws.py, mocks_gcp.py and
mocks_azure.py. Nothing here was created anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import MockCallArgs, MockResourceArgs
from pulumi.runtime.mocks import MockMonitor

from gpudr.app.offline import mocks_aws


class UnreachableError(RuntimeError):
    """Raised by the mocks for anything that needs an unreachable region or another stack."""


@dataclass
class Registration:
    """One resource as the program registered it, in the engine's own terms."""

    urn: str
    type: str
    name: str
    id: str
    custom: bool
    parent: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    protect: bool
    retain_on_delete: bool
    provider: str
    # Properties the engine keeps as deployed (`ignore_changes`), in the engine's camelCase.
    ignore_changes: tuple[str, ...] = ()
    import_id: str = ""  # `import_`: the existing resource the engine takes into the stack

    def record(self) -> dict[str, Any]:
        """The resource as `gpudr plan --format json` lists it (and the policy tests read it)."""
        return {
            "type": self.type,
            "name": self.name,
            "urn": self.urn,
            "id": self.id,
            "custom": self.custom,
            "parent": self.parent,
            "protect": self.protect,
            "retain_on_delete": self.retain_on_delete,
            "dependencies": self.dependencies,
            "property_dependencies": self.property_dependencies,
            "inputs": self.inputs,
        }


@dataclass
class GpudrMocks(pulumi.runtime.Mocks):
    """Provider-like answers for the resources and data sources gpudr's program uses.

    `unreachable_regions`: any resource placed in, or lookup made against, one of these regions
    fails, as it would during a regional outage; so does any StackReference (another stack's
    state is assumed gone)."""

    default_region: str = "us-east-1"
    unreachable_regions: frozenset[str] = frozenset()
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # CloudWatch log groups that exist before the program runs, as on an account where EKS
    # created a cluster's log group itself; offline, none do.
    existing_log_groups: frozenset[str] = frozenset()

    def _check_region(self, what: str, region: str | None) -> None:
        if region and region in self.unreachable_regions:
            raise UnreachableError(f"{what}: region {region} is unreachable")

    @staticmethod
    def placed_in(inputs: dict[str, Any]) -> str | None:
        """The region a resource is placed in: AWS `region`, Azure `location`, GCP `region`
        or the region of a `location`/zone (`us-central1-a` -> `us-central1`)."""
        for key in ("region", "location"):
            value = inputs.get(key)
            if isinstance(value, str) and value:
                parts = value.split("-")
                if len(parts) == 3 and len(parts[2]) == 1 and parts[2].isalpha():  # GCP zone
                    return "-".join(parts[:2])
                return value
        return None

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == "pulumi:pulumi:StackReference":
            raise UnreachableError(
                f"StackReference {args.name}: the other stack's state is unreachable"
            )
        inputs = dict(args.inputs)
        placed = self.placed_in(inputs)
        region = placed or self.default_region
        self._check_region(f"{args.typ} {args.name}", placed)
        if not args.custom:
            return "", {}
        return self._provider_answer(args.typ, args.name, inputs, str(region))

    def _provider_answer(
        self, typ: str, name: str, inputs: dict[str, Any], region: str
    ) -> tuple[str, dict[str, Any]]:
        if typ.startswith("gcp:"):
            from gpudr.app.offline import mocks_gcp

            return mocks_gcp.answer(typ, name, inputs)
        if typ.startswith("azure-native:"):
            from gpudr.app.offline import mocks_azure

            return mocks_azure.answer(typ, name, inputs)
        if typ.startswith("random:"):
            from gpudr.app.offline import mocks_azure

            return mocks_azure.answer_random(typ, name, inputs)
        return mocks_aws.answer(typ, name, inputs, region)

    def call(self, args: MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        self.calls.append((args.token, dict(args.args)))
        region = self.placed_in(args.args)
        self._check_region(f"lookup {args.token}", region)
        return self._lookup(args.token, args.args, region), []

    def _lookup(self, token: str, args: dict[str, Any], region: str | None) -> dict[str, Any]:
        if token.startswith("gcp:"):
            from gpudr.app.offline import mocks_gcp

            return mocks_gcp.lookup(token, args)
        if token.startswith("azure-native:"):
            from gpudr.app.offline import mocks_azure

            return mocks_azure.lookup(token, args)
        return mocks_aws.lookup(
            token, args, region, self.default_region, existing_log_groups=self.existing_log_groups
        )


class RecordingMonitor(MockMonitor):
    """The SDK's mock monitor, also keeping each registration's parent, dependencies, property
    dependencies and options: what the policy engine sees in `AnalyzeStack`."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []
        self._by_urn: dict[str, Registration] = {}
        self.stack_urn: str | None = None
        # The root stack's exports, as `pulumi stack output` would show them; a secret stays
        # wrapped (`pulumi.runtime.rpc.is_rpc_secret`), so callers know to keep it secret.
        self.stack_outputs: dict[str, Any] = {}

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type == "pulumi:pulumi:Stack":
            self.stack_urn = response.urn
            return response
        from pulumi.runtime import rpc

        inputs = rpc.deserialize_properties(request.object)
        registration = self.resources.get(response.urn)
        outputs = dict(registration.state) if registration is not None else {}
        reg = Registration(
            urn=response.urn,
            type=request.type,
            name=request.name,
            id=response.id,
            custom=bool(request.custom),
            parent=request.parent,
            inputs=_plain(inputs),
            outputs=_plain(outputs),
            # The SDK gathers these from sets of resources, so their order follows object
            # addresses and changed from run to run; sorted, two runs of a plan are identical.
            dependencies=sorted(request.dependencies),
            property_dependencies={
                k: sorted(v.urns) for k, v in sorted(request.propertyDependencies.items())
            },
            protect=bool(request.protect),
            retain_on_delete=bool(request.retainOnDelete),
            provider=request.provider,
            ignore_changes=tuple(request.ignoreChanges),
            import_id=request.importId,
        )
        self.registrations.append(reg)
        self._by_urn[reg.urn] = reg
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        if self.stack_urn is not None and request.urn == self.stack_urn:
            from pulumi.runtime import rpc

            self.stack_outputs = _plain(rpc.deserialize_properties(request.outputs))
        return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]


def _plain(value: Any) -> Any:
    """Deserialized properties as plain JSON values (unknowns become None)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
