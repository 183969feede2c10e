"""Running a cloud CLI for the one thing a drill still asks a CLI (gcloud's signed-in account,
drill/operator.py): `run` returns the command's standard output, or raises CommandFailed with
one line. The replicas and pools are read through the clouds' SDKs (drill/probes/)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence

from gpudr.app.drill.errors import ProbeError
from gpudr.app.drill.interrupts import Children


class CommandFailed(ProbeError):
    """A CLI command exited non-zero; the message is one line: the command and its error."""


def _failure(argv: Sequence[str], code: int, stderr: str) -> CommandFailed:
    lines = [x.strip() for x in stderr.splitlines() if x.strip()]
    reason = lines[-1] if lines else f"exit code {code}"
    return CommandFailed(f"`{' '.join(argv[:3])} ...` failed: {reason}")


class SubprocessRunner:
    """The real CLIs. Each command runs in its own session (see drill/interrupts.py), with the
    drill's environment on top of this process's (e.g. the reader's temporary credentials)."""

    def __init__(self, children: Children | None = None, timeout_s: float = 900) -> None:
        self.children = children or Children()
        self.timeout_s = timeout_s

    def _env(self, env: Mapping[str, str] | None) -> dict[str, str]:
        """This process's environment with `env` on top; an empty value unsets a variable."""
        merged = {**os.environ, **(env or {})}
        return {k: v for k, v in merged.items() if v != "" or k not in (env or {})}

    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
        try:
            proc = subprocess.Popen(
                list(argv),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._env(env),
                text=True,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise CommandFailed(
                f"{argv[0]} is not installed or not on PATH; the drill's checks need the "
                f"{argv[0]} CLI, signed in to the DR site's account"
            ) from exc
        self.children.add(proc)
        try:
            out, err = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired as exc:
            proc.kill()
            proc.communicate()
            raise CommandFailed(
                f"`{' '.join(argv[:3])} ...` did not answer in {self.timeout_s:.0f}s"
            ) from exc
        finally:
            self.children.discard(proc)
        if proc.returncode != 0:
            raise _failure(argv, proc.returncode, err)
        return out
