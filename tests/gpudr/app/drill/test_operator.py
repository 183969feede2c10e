"""Who runs the drill: the AWS caller from STS (moto's STS, and botocore's Stubber for callers
moto does not produce), the gcloud account, and nobody when neither can be had."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from gpudr.app.drill import operator as op
from gpudr.app.drill.commands import CommandFailed

FAKE_KEYS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key, value in FAKE_KEYS.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        yield


def test_an_iam_user_is_the_operator(aws: None) -> None:
    # moto answers get-caller-identity for access keys it does not know with its root user;
    # a real IAM user's keys name the user.
    iam = boto3.client("iam", region_name="us-west-2")
    iam.create_user(Path="/ops/", UserName="alice")
    keys = iam.create_access_key(UserName="alice")["AccessKey"]
    sts = boto3.client(
        "sts",
        region_name="us-west-2",
        aws_access_key_id=keys["AccessKeyId"],
        aws_secret_access_key=keys["SecretAccessKey"],
    )
    assert op.aws_operator("us-west-2", sts) == "arn:aws:iam::123456789012:user/ops/alice"


def test_a_role_session_is_the_operator(aws: None) -> None:
    iam = boto3.client("iam", region_name="us-west-2")
    iam.create_role(RoleName="DrillRunner", Path="/ci/", AssumeRolePolicyDocument="{}")
    creds = boto3.client("sts", region_name="us-west-2").assume_role(
        RoleArn="arn:aws:iam::123456789012:role/ci/DrillRunner", RoleSessionName="alice"
    )["Credentials"]
    sts = boto3.client(
        "sts",
        region_name="us-west-2",
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
    )
    # The path is gone from the session's ARN: the reader's trust allows for it.
    expected = "arn:aws:sts::123456789012:assumed-role/DrillRunner/alice"
    assert op.aws_operator("us-west-2", sts) == expected


def stubbed(response: dict[str, Any] | None = None, error: str | None = None) -> Any:
    sts = boto3.client(
        "sts", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="y"
    )
    stub = Stubber(sts)
    if error:
        stub.add_client_error("get_caller_identity", service_error_code=error)
    else:
        stub.add_response("get_caller_identity", response or {})
    stub.activate()
    return sts


@pytest.mark.parametrize(
    "arn", ["arn:aws:iam::123456789012:root", "arn:aws:sts::123456789012:federated-user/bob"]
)
def test_a_caller_that_cannot_assume_a_role_is_nobody(arn: str) -> None:
    sts = stubbed({"UserId": "AIDA", "Account": "123456789012", "Arn": arn})
    assert op.aws_operator("us-west-2", sts) is None


def test_refused_credentials_are_nobody() -> None:
    assert op.aws_operator("us-west-2", stubbed(error="ExpiredToken")) is None


def test_no_credentials_at_all_is_nobody(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for key in (*FAKE_KEYS, "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert op.aws_operator("us-west-2") is None


class Gcloud:
    def __init__(self, answer: str | None) -> None:
        self.answer = answer

    def run(self, argv: list[str], env: Any = None) -> str:
        assert argv == ["gcloud", "config", "get-value", "account"]
        if self.answer is None:
            raise CommandFailed("`gcloud config get-value ...` failed: not installed")
        return self.answer + "\n"


@pytest.mark.parametrize(
    ("answer", "member"),
    [
        ("alice@example.com", "user:alice@example.com"),
        ("ci@proj.iam.gserviceaccount.com", "serviceAccount:ci@proj.iam.gserviceaccount.com"),
        ("", None),
        (None, None),
    ],
)
def test_the_gcloud_account_as_an_iam_member(
    monkeypatch: pytest.MonkeyPatch, answer: str | None, member: str | None
) -> None:
    from gpudr.app.drill import commands

    monkeypatch.setattr(commands, "SubprocessRunner", lambda: Gcloud(answer))
    assert op.gcp_operator() == member
    assert op.discover("gcp", "us-east4") == member
    assert op.discover("azure", "westus") is None
