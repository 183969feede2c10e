"""The stack's configuration, read once from `pulumi.Config()` and validated before any resource.

Keys (documented in Pulumi.yaml):
- `gpudr:site`  the site's whole configuration, generated from the plan by `gpudr generate`
- `gpudr:mode`  `standby` (default) or `failover`; only DR stacks read it
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from gpudr.stackconfig import MODES, SiteConfig


class StackConfigError(ValueError):
    """The stack config is missing or malformed; the message says which key and what to run."""


@dataclass(frozen=True)
class StackConfig:
    site: SiteConfig
    mode: str
    lock_weights: bool = False  # Azure: lock the weights accounts' immutability (irreversible)

    @property
    def failover(self) -> bool:
        return self.site.role == "dr" and self.mode == "failover"


def load() -> StackConfig:
    config = pulumi.Config("gpudr")
    raw = config.get_object("site")
    if not isinstance(raw, dict):
        raise StackConfigError(
            "gpudr:site is not set for this stack; run `gpudr generate PLAN.yaml` and select a "
            "stack it wrote under stacks/"
        )
    try:
        site = SiteConfig.from_dict(raw)
    except (KeyError, TypeError) as exc:
        raise StackConfigError(
            f"gpudr:site is malformed ({exc}); regenerate it with `gpudr generate PLAN.yaml`"
        ) from exc
    if site.cloud not in ("aws", "gcp", "azure"):
        raise StackConfigError(
            f'gpudr:site cloud "{site.cloud}" is not one of aws, gcp, azure; regenerate the stack'
        )
    mode = config.get("mode") or "standby"
    if mode not in MODES:
        raise StackConfigError(f'gpudr:mode "{mode}" is not allowed; use one of {", ".join(MODES)}')
    if mode == "failover" and site.role != "dr":
        raise StackConfigError(
            "gpudr:mode failover is set on a primary stack; the switch belongs on the DR stack"
        )
    lock = config.get_bool("lock_weights") or False
    return StackConfig(site=site, mode=mode, lock_weights=lock)
