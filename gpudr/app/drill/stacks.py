"""The stack interface a drill uses, and its implementation with the Pulumi Automation API.

`StackInterface` is all a drill does to Pulumi: create a stack, configure and tag it, `up`,
`destroy`, remove it, and list stacks with their tags for cleanup. Tests drive the drill against
a fake of it. `AutomationStacks` is the real one: a `LocalWorkspace` on this project's directory
(`Pulumi.yaml`, `stacks/` as stackConfigDir, the program in `.venv`), so the drill runs the same
`__main__.py` as every other stack, against the backend you are logged in to.

Destroy and remove refuse any name that is not a drill stack's, whoever calls them.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from gpudr.app.drill.interrupts import Children
from gpudr.contract.drill import check_stack_name

OnOutput = Callable[[str], None]
# The project: Pulumi.yaml, stacks/ (stackConfigDir) and the program a drill stack runs.


class PulumiMissingError(RuntimeError):
    """The Pulumi CLI is not installed: a drill needs it and cloud credentials."""


class StackInterface(Protocol):
    def create(self, name: str) -> None: ...

    def set_config(self, name: str, values: Mapping[str, Any]) -> None:
        """Replace `values` in the stack's config; structured values are set as JSON."""

    def set_tags(self, name: str, tags: Mapping[str, str]) -> None: ...

    def up(self, name: str, on_output: OnOutput) -> dict[str, Any]:
        """Deploy; return the stack's outputs (plain values)."""

    def destroy(self, name: str, on_output: OnOutput) -> None: ...

    def remove(self, name: str) -> None: ...

    def cancel(self, name: str) -> None:
        """Cancel the update holding the stack (`pulumi cancel`)."""

    def list(self) -> list[str]:
        """Every stack of this project in the current backend."""

    def tags(self, name: str) -> dict[str, str]: ...


def pulumi_available() -> bool:
    return shutil.which("pulumi") is not None


def missing_cli_message() -> str:
    return (
        "a drill needs the Pulumi CLI (not found on PATH) and cloud credentials for the DR "
        "site; `gpudr drill PLAN.yaml --site SITE --dry-run` shows what it would do, offline"
    )


class AutomationStacks:
    """`StackInterface` with `pulumi.automation` on the project in `work_dir`."""

    def __init__(self, work_dir: Path, children: Children | None = None) -> None:
        if not pulumi_available():
            raise PulumiMissingError(missing_cli_message())
        from pulumi import automation as auto

        self._auto = auto
        self._children = children or Children()
        self._ws = auto.LocalWorkspace(
            work_dir=str(work_dir), pulumi_command=_session_command(auto, self._children)
        )
        self._stacks: dict[str, Any] = {}

    def _stack(self, name: str) -> Any:
        if name not in self._stacks:
            self._stacks[name] = self._auto.Stack.select(name, self._ws)
        return self._stacks[name]

    def create(self, name: str) -> None:
        check_stack_name(name)
        self._stacks[name] = self._auto.Stack.create(name, self._ws)

    def set_config(self, name: str, values: Mapping[str, Any]) -> None:
        config = {
            key: self._auto.ConfigValue(value if isinstance(value, str) else json.dumps(value))
            for key, value in values.items()
        }
        self._stack(name).set_all_config(config)

    def set_tags(self, name: str, tags: Mapping[str, str]) -> None:
        for key, value in tags.items():
            self._ws.set_tag(name, key, value)

    def up(self, name: str, on_output: OnOutput) -> dict[str, Any]:
        result = self._stack(name).up(on_output=on_output, color="never")
        return {k: v.value for k, v in result.outputs.items()}

    def destroy(self, name: str, on_output: OnOutput) -> None:
        check_stack_name(name)
        self._stack(name).destroy(on_output=on_output, color="never")

    def cancel(self, name: str) -> None:
        check_stack_name(name)
        self._stack(name).cancel()

    def remove(self, name: str) -> None:
        check_stack_name(name)
        self._ws.remove_stack(name)
        self._stacks.pop(name, None)

    def list(self) -> list[str]:
        return [s.name.rsplit("/", 1)[-1] for s in self._ws.list_stacks()]

    def tags(self, name: str) -> dict[str, str]:
        return dict(self._ws.list_tags(name))


def _session_command(auto: Any, children: Children) -> Any:
    """A PulumiCommand that starts the CLI in its own session and registers it, so that Ctrl-C
    reaches gpudr only and gpudr decides what the CLI gets (drill/interrupts.py). The rest is
    the SDK's own `PulumiCommand.run` (pulumi 3.272), unchanged."""

    class SessionCommand(auto.PulumiCommand):  # type: ignore[misc]
        def run(
            self,
            args: list[str],
            cwd: str,
            additional_env: Mapping[str, str],
            on_output: OnOutput | None = None,
            on_error: OnOutput | None = None,
        ) -> Any:
            import os

            from pulumi.automation._cmd import CommandResult
            from pulumi.automation.errors import create_command_error

            if "--non-interactive" not in args:
                args.insert(0, "--non-interactive")
            env = {**os.environ, **additional_env, "PULUMI_AUTOMATION_API": "true"}
            stdout_chunks: list[str] = []
            stderr_chunks: list[str] = []

            def consume(stream: Any, callback: OnOutput | None, chunks: list[str]) -> None:
                for line in iter(stream.readline, ""):
                    if callback:
                        # A callback that fails (a write to a terminal that is gone) must not
                        # stop this reader: the CLI would block on a full pipe for ever.
                        with contextlib.suppress(Exception):
                            callback(line.rstrip())
                    chunks.append(line.rstrip())
                stream.close()

            with subprocess.Popen(
                [self.command, *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                encoding="utf-8",
                start_new_session=True,
            ) as process:
                children.add(process)
                try:
                    readers = [
                        threading.Thread(
                            target=consume, args=(process.stdout, on_output, stdout_chunks)
                        ),
                        threading.Thread(
                            target=consume, args=(process.stderr, on_error, stderr_chunks)
                        ),
                    ]
                    for t in readers:
                        t.start()
                    for t in readers:
                        t.join()
                    process.wait()
                finally:
                    children.discard(process)
            result = CommandResult(
                stdout="\n".join(stdout_chunks),
                stderr="\n".join(stderr_chunks),
                code=process.returncode,
            )
            if process.returncode != 0:
                raise create_command_error(result)
            return result

    return SessionCommand()
