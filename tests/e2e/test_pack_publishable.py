"""The policy pack as `pulumi policy publish` ships it: the folder alone, under a name of the
CLI's choosing, with nothing but what policies/requirements.txt installs in a fresh virtualenv.

The publish and enable steps need the Pulumi CLI and Pulumi Cloud, which the tests do not have.
What they can prove is the rest: that the folder runs outside this repository. The slow test
gathers the pack's wheels in one folder as `make pack-dist` does (every pin but gpudr downloaded
from the index by its exact pin, then the gpudr wheel built from this checkout), creates the
pack's virtualenv as the CLI does (`python -m venv venv`, `pip install --upgrade pip setuptools
wheel`, `pip install -r requirements.txt`), starts the copied pack as the CLI does, with no
PYTHONPATH, and analyzes two stacks over gRPC.

The installs read that folder alone (--no-index --find-links): gpudr is not a PyPI project, and
pip offered an index beside the folder would take whichever `gpudr` it ranks highest there, one
that anybody may register (dependency confusion), in every `make test`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from gpudr.app.offline.policy import PolicyPackProcess
from tests.conftest import ROOT
from tests.policies.builders import rtc_rule, s3
from tests.policies.harness import records

PACK = ROOT / "policies"
REQUIREMENTS = PACK / "requirements.txt"
# Each command is bounded, so that a stalled index fails the test instead of hanging it. A cold
# pip cache downloads about 30 wheels (grpcio, protobuf...); a warm one takes seconds.
BUILD_TIMEOUT_S = 300.0
INSTALL_TIMEOUT_S = 600.0


def _name(distribution: str) -> str:
    """PEP 503's normal form, so that `pip freeze`'s spelling and the file's compare equal."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _pins(text: str) -> dict[str, str]:
    pins: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep, f"requirements.txt: {raw!r} is not pinned with =="
        pins[_name(name)] = version.strip()
    return pins


def _tail(stream: str | bytes | None, lines: int = 30) -> str:
    text = stream.decode(errors="replace") if isinstance(stream, bytes) else stream or ""
    return "\n".join(text.strip().splitlines()[-lines:]) or "(nothing)"


def _run(
    what: str,
    args: Sequence[str | Path],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
) -> str:
    """Runs one step and returns its stdout; a failure names the step, the command and the end
    of its stderr, where pip says which requirement it could not satisfy."""
    command = [str(a) for a in args]
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(
            f"{what}: `{shlex.join(command)}` did not finish in {timeout:g} s; stderr ends:\n"
            f"{_tail(e.stderr)}"
        )
    if done.returncode != 0:
        pytest.fail(
            f"{what}: `{shlex.join(command)}` exited {done.returncode}; stderr ends:\n"
            f"{_tail(done.stderr)}"
        )
    return done.stdout


def _clean_env(venv: Path | None = None) -> dict[str, str]:
    """This process's environment without what could lead Python back to the repository, and
    with `venv` activated as the CLI activates a pack's virtualenv. pip never prompts."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.pop("VIRTUAL_ENV", None)
    env["PIP_NO_INPUT"] = "1"
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _download_public_pins(workdir: Path, wheels: Path) -> None:
    """Every pin of requirements.txt but gpudr, and the pip, setuptools and wheel the CLI
    upgrades first, downloaded into `wheels` as wheels by exact name: the one step that reads
    an index, and it never asks it for gpudr."""
    pins = _pins(REQUIREMENTS.read_text())
    third_party = workdir / "third-party.txt"
    third_party.write_text("".join(f"{n}=={v}\n" for n, v in pins.items() if n != "gpudr"))
    _run(
        "download the public pins (requirements.txt without gpudr)",
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--progress-bar",
            "off",
            "--dest",
            wheels,
            "-r",
            third_party,
            "pip",
            "setuptools",
            "wheel",
        ],
        cwd=workdir,
        env=_clean_env(),
        timeout=INSTALL_TIMEOUT_S,
    )
    assert not list(wheels.glob("gpudr-*")), "the index was asked for gpudr"


def _build_gpudr_wheel(workdir: Path, wheels: Path) -> None:
    """The gpudr wheel, built into `wheels` from a copy of its sources: in the checkout,
    setuptools would write build/ and reuse a stale one (with modules deleted since) as `make
    pack-dist` avoids too."""
    src = workdir / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    src.mkdir()
    shutil.copy2(ROOT / "pyproject.toml", src)
    for package in ("gpudr", "components"):
        shutil.copytree(ROOT / package, src / package, ignore=skip)
    _run(
        "build the gpudr wheel",
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", wheels, src],
        cwd=workdir,
        env=_clean_env(),
        timeout=BUILD_TIMEOUT_S,
    )
    built = sorted(wheels.glob("gpudr-*"))
    assert len(built) == 1, built


# --- quick checks of the files --------------------------------------------------------------


def test_requirements_pin_what_the_project_runs() -> None:
    """Every pin equals the project's own virtualenv, gpudr's equals pyproject's version: the
    published pack runs the versions the tests ran."""
    pins = _pins(REQUIREMENTS.read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert pins.get("gpudr") == project["version"], "requirements.txt must pin gpudr==<pyproject>"
    differ = {
        name: (version, metadata.version(name))
        for name, version in pins.items()
        if name != "gpudr" and metadata.version(name) != version
    }
    assert differ == {}, f"requirements.txt pin vs .venv: {differ}"


def test_the_pack_builds_its_virtualenv_inside_itself_and_does_not_publish_it() -> None:
    options = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())["runtime"]["options"]
    venv = Path(options["virtualenv"])
    assert not venv.is_absolute() and ".." not in venv.parts, venv
    # `pulumi policy publish` honours the pack folder's own .gitignore only.
    ignored = (PACK / ".gitignore").read_text().splitlines()
    assert f"{venv.as_posix()}/" in ignored, ignored


# --- the published pack, run as the CLI runs it ---------------------------------------------


@pytest.mark.slow
def test_pack_runs_from_its_requirements_alone_outside_the_repository(tmp_path: Path) -> None:
    started = time.monotonic()
    wheels = tmp_path / "wheels"
    _download_public_pins(tmp_path, wheels)
    _build_gpudr_wheel(tmp_path, wheels)

    # Another name than `policies`, as the CLI installs a published pack in a versioned folder.
    pack = tmp_path / "gpudr-0.1.0"
    shutil.copytree(PACK, pack, ignore=shutil.ignore_patterns("venv", "__pycache__", "*.pyc"))
    venv = pack / "venv"
    python = venv / "bin" / "python"
    _run(
        "create the pack's virtualenv",
        [sys.executable, "-m", "venv", venv],
        cwd=pack,
        env=_clean_env(),
        timeout=120,
    )
    # No index: every file comes from `wheels`, and this checkout's wheel is the only gpudr.
    pip = [python, "-m", "pip", "install", "--progress-bar", "off", "--no-index"]
    pip += ["--find-links", wheels]
    _run(
        "upgrade pip, setuptools and wheel as the Pulumi CLI does first",
        [*pip, "--upgrade", "pip", "setuptools", "wheel"],
        cwd=pack,
        env=_clean_env(venv),
        timeout=INSTALL_TIMEOUT_S,
    )
    _run(
        "install policies/requirements.txt",
        [*pip, "-r", "requirements.txt"],
        cwd=pack,
        env=_clean_env(venv),
        timeout=INSTALL_TIMEOUT_S,
    )

    # Pinned means all of it: nothing installed that requirements.txt does not name.
    frozen = _run(
        "list the pack's virtualenv",
        [python, "-m", "pip", "freeze"],
        cwd=pack,
        env=_clean_env(venv),
        timeout=120,
    )
    assert _pins(frozen) == _pins((pack / "requirements.txt").read_text())
    # The gpudr it imports is this checkout's, installed in the venv: not the repository's
    # files, and not another distribution of the same name from an index.
    where = _run(
        "import gpudr in the pack's virtualenv",
        [python, "-c", "import gpudr.core.sizing as m; print(m.__file__)"],
        cwd=pack,
        env=_clean_env(venv),
        timeout=60,
    ).strip()
    assert Path(where).resolve().is_relative_to(venv.resolve()), where
    assert Path(where).read_bytes() == (ROOT / "gpudr" / "core" / "sizing.py").read_bytes()

    # The same S3 data bucket twice, the second without Replication Time Control: the one
    # verdict between them is replication-meets-rpo's, which runs gpudr's sizing code and reads
    # its reference data. (Compared as a difference, so that what the pack says of both alike,
    # as its policies and their default config evolve, does not matter here.)
    compliant = s3()
    broken = s3()
    broken["replication"].inputs["rules"][0] = rtc_rule(rtc=False)
    with PolicyPackProcess(pack, python=python, env=_clean_env(venv)) as process:
        assert process.info is not None and process.info.name == "gpudr"
        passed = process.evaluate_stack("compliant", records(list(compliant.values())))
        found = process.evaluate_stack("broken", records(list(broken.values())))
    assert all(v.policy != "replication-meets-rpo" for v in passed), passed
    seen = {(v.policy, v.level, v.urn) for v in passed}
    new = [v for v in found if (v.policy, v.level, v.urn) not in seen]
    assert [(v.policy, v.level, v.urn) for v in new] == [
        ("replication-meets-rpo", "mandatory", broken["bucket"].urn)
    ], found
    assert "Replication Time Control" in new[0].message
    print(f"fresh-venv pack test: {time.monotonic() - started:.1f} s")
