"""Where the project's own files are: the Pulumi project (Pulumi.yaml, `__main__.py`), the
jinja2 templates and the policy pack. gpudr runs from a checkout of this repository (an
editable install), so they are found relative to this package."""

from __future__ import annotations

from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]
PROGRAM = PROJECT_DIR / "__main__.py"
TEMPLATES_DIR = PROJECT_DIR / "templates"
PACK_DIR = PROJECT_DIR / "policies"
