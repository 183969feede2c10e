"""gpudr.docs.cloudcli: one command line per cloud operation, as argv for a probe and as shell
text for a runbook, quoted the way the runbooks print it."""

from __future__ import annotations

import shlex

import pytest

from gpudr.build.stackconfig import build_site_configs
from gpudr.contract.site import BucketConfig
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from gpudr.docs import cloudcli as cli
from gpudr.docs.cloudcli import Quoted, shell
from tests.conftest import ROOT


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        # A variable stays one the shell expands: double quotes.
        (
            ("aws", "s3", "cp", "s3://b/$CHECKPOINTS_KEY", "-"),
            'aws s3 cp "s3://b/$CHECKPOINTS_KEY" -',
        ),
        (("gcloud", "transfer", "jobs", "run", "$JOB_X"), 'gcloud transfer jobs run "$JOB_X"'),
        # An option's value is quoted on its own.
        (("x", "--format=value(status)", "--limit=5"), "x --format='value(status)' --limit=5"),
        (("x", "--job-names=$JOB_X"), 'x --job-names="$JOB_X"'),
        (("x", "--sort-by=~startTime"), "x --sort-by='~startTime'"),
        # What the shell would split or glob: single quotes; single quotes inside: double.
        (("x", "--num-results", "*", "gs://b/**"), "x --num-results '*' 'gs://b/**'"),
        (("x", "--query", "Tasks[?Name=='t'].TaskArn"), "x --query \"Tasks[?Name=='t'].TaskArn\""),
        (("x", '{"Status":"ENABLED"}'), """x '{"Status":"ENABLED"}'"""),
        (("x", "<the newest one>"), "x '<the newest one>'"),
        # Bare where the shell takes it bare, unless marked.
        (("x", "--query", "cluster.status"), "x --query cluster.status"),
        (("x", "--query", Quoted("Schedule.Status")), "x --query 'Schedule.Status'"),
        (("x", "a@b.c:d,e/f+g%h=i"), "x a@b.c:d,e/f+g%h=i"),
    ],
)
def test_shell_quotes_as_the_runbooks_do(argv: tuple[str, ...], text: str) -> None:
    assert shell(argv) == text
    if not any("$" in w for w in argv):
        assert shlex.split(text) == list(argv)  # the shell runs exactly the argv


def test_a_word_that_cannot_be_quoted_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot quote"):
        shell(("echo", '"$X"'))


def _bucket() -> BucketConfig:
    d = design(load_plan(ROOT / "examples" / "azure-two-region.yaml"))
    return next(b for b in build_site_configs(d)["wus"].buckets if b.data_class == "checkpoints")


def test_one_argv_per_operation_whatever_the_output() -> None:
    b = _bucket()
    account = b.storage_account
    shown = cli.blob_show(b, "k", "q", "json")
    assert shown[: shown.index("--query")] == cli.blob_show(b, "k", "other")[:-2]
    assert shell(cli.read_object("azure", b, "$K", "westus")) == (
        f'az storage blob download --account-name {account} --container-name {b.name} --name "$K" '
        "--auth-mode login --file /dev/stdout --max-connections 1 --no-progress --output none"
    )
    assert cli.storage_url("azure", b) == f"https://{account}.blob.core.windows.net/{b.name}"
    assert cli.object_url("gcp", b, "a/b") == f"gs://{b.name}/a/b"
    assert cli.s3_sync("s3://a", "s3://b", "r1", "r2")[-4:] == (
        "--source-region",
        "r1",
        "--region",
        "r2",
    )
    assert cli.s3_sync("$L", "s3://b", "r2", size_only=True)[-3:] == (
        "--size-only",
        "--region",
        "r2",
    )
