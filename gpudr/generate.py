"""Render the per-site stack files (`stacks/Pulumi.<stack>.yaml`) from a design with jinja2."""

from __future__ import annotations

from pathlib import Path

import jinja2
import yaml

from gpudr.design import Design
from gpudr.stackconfig import stack_config_values, stack_name

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_stack_files(design: Design, command: str) -> dict[str, str]:
    """File name -> content, one per site; the same plan renders byte-identical files."""
    plan = design.plan
    template = _env().get_template("stack.yaml.j2")
    files: dict[str, str] = {}
    for site in plan.sites.values():
        name = stack_name(plan, site)
        body = yaml.safe_dump(
            {"config": stack_config_values(design, site)},
            sort_keys=False,
            default_flow_style=False,
            width=100,
        )
        files[f"Pulumi.{name}.yaml"] = template.render(
            command=command,
            plan_name=plan.name,
            stack=name,
            role=site.role,
            cloud=site.cloud,
            body=body.rstrip(),
        )
    return files


def write_stack_files(files: dict[str, str], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, content in files.items():
        path = out_dir / name
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written
