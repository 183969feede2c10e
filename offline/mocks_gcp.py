"""Provider-like answers for pulumi_gcp resources and lookups under the offline mocks."""

from __future__ import annotations

import hashlib
from typing import Any

OFFLINE_PROJECT_NUMBER = "123456789012"


def _short(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:12]


def answer(typ: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(id, outputs) for a GCP resource: inputs echoed, plus the computed fields gpudr reads."""
    state = dict(inputs)
    project = inputs.get("project", "offline-project")
    rid = f"projects/{project}/{typ.split(':')[-1].lower()}s/{inputs.get('name') or name}"
    state.setdefault("name", inputs.get("name") or name)
    state.setdefault("selfLink", f"https://www.googleapis.com/{rid}")
    state.setdefault("id", rid)
    return rid, state


def lookup(token: str, args: dict[str, Any]) -> dict[str, Any]:
    raise LookupError(f"the offline mocks do not answer {token}; add it to offline/mocks_gcp.py")
