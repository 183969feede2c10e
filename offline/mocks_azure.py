"""Provider-like answers for pulumi_azure_native resources and lookups under the offline mocks."""

from __future__ import annotations

import hashlib
from typing import Any

OFFLINE_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
OFFLINE_TENANT = "11111111-1111-1111-1111-111111111111"


def _short(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:12]


def answer(typ: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(id, outputs) for an Azure resource: an ARM id, inputs echoed, computed fields added."""
    state = dict(inputs)
    rg = inputs.get("resourceGroupName", "offline-rg")
    kind = typ.split(":")[-1]
    rid = f"/subscriptions/{OFFLINE_SUBSCRIPTION}/resourceGroups/{rg}/providers/{kind}/{name}"
    state.setdefault("id", rid)
    state.setdefault("name", name)
    return rid, state


def lookup(token: str, args: dict[str, Any]) -> dict[str, Any]:
    if token == "azure-native:authorization:getClientConfig":
        return {
            "subscriptionId": OFFLINE_SUBSCRIPTION,
            "tenantId": OFFLINE_TENANT,
            "clientId": "22222222-2222-2222-2222-222222222222",
            "objectId": "33333333-3333-3333-3333-333333333333",
        }
    raise LookupError(f"the offline mocks do not answer {token}; add it to offline/mocks_azure.py")
