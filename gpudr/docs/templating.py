"""The one jinja2 environment for every generated file (stack files, runbooks, the workflow,
drill reports): templates from the project's `templates/`, undefined names are errors."""

from __future__ import annotations

import jinja2

from gpudr.core.paths import TEMPLATES_DIR
from gpudr.core.units import fmt_duration

TEMPLATES = TEMPLATES_DIR


def environment(trim: bool = False) -> jinja2.Environment:
    """`trim`: drop the newline after a block tag and the indentation before it (prose templates
    such as the runbook; the YAML templates keep their whitespace as written)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=trim,
        lstrip_blocks=trim,
        autoescape=False,
    )
    env.filters["duration"] = fmt_duration
    return env
