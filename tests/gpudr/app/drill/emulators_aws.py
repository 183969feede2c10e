"""AWS on loopback for the drill probe's tests: moto's server, started once per test session
in this process (so that a test can change an object's bytes behind S3's back), with IAM
enforced: every call is signed by a moto IAM identity and judged by its policies.

Import `moto_aws` and `moto_server` into a test module (pytest finds fixtures in its
namespace), then take `aws` (a clean account per test) as a test's argument.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

ACCOUNT = "123456789012"  # moto's default account
START_TIMEOUT_S = 30.0
ADMIN = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}
# The credential chain must find the emulator's operator and nothing of this machine's: no
# profile, no config or credentials file, no instance metadata, no endpoint but the one given.
UNSET = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL")
ISOLATED = {
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}


@dataclass
class MotoAws:
    url: str
    operator: Any  # a boto3 Session: an IAM user allowed everything, as boto3's default chain
    operator_arn: str

    clients: dict[tuple[str, str], Any] = field(default_factory=dict)

    def client(self, service: str, region: str = "us-west-2", **kwargs: Any) -> Any:
        """The operator's client (made once per service and region unless `kwargs`)."""
        if kwargs or (service, region) not in self.clients:
            made = self.operator.client(
                service, region_name=region, endpoint_url=self.url, **kwargs
            )
            if kwargs:
                return made
            self.clients[service, region] = made
        return self.clients[service, region]

    def role(self, name: str, policies: dict[str, str], trusted: bool = True) -> str:
        """An IAM role with inline `policies`; `trusted`: the operator may assume it (moto
        matches a trust policy's principal exactly: an account's root does not cover its
        users, as it does on AWS)."""
        iam = self.client("iam")
        arn: str = iam.create_role(RoleName=name, AssumeRolePolicyDocument=self.trust(trusted))[
            "Role"
        ]["Arn"]
        for policy, document in policies.items():
            iam.put_role_policy(RoleName=name, PolicyName=policy, PolicyDocument=document)
        return arn

    def trust(self, trusted: bool) -> str:
        principal = self.operator_arn if trusted else f"arn:aws:iam::{ACCOUNT}:user/nobody"
        statement = {"Effect": "Allow", "Principal": {"AWS": principal}, "Action": "sts:AssumeRole"}
        return json.dumps({"Version": "2012-10-17", "Statement": [statement]})

    def overwrite(self, bucket: str, key: str, data: bytes) -> None:
        """Replace an object's bytes in S3's storage, leaving what S3 recorded at upload (its
        checksum) as it was: bit rot, or a replica written wrong."""
        self._stored(bucket, key).value = data

    def backdate(self, bucket: str, key: str, seconds: float) -> None:
        """Make an object `seconds` older: S3 lists times to the second, and a test cannot wait
        hours for a checkpoint to age."""
        stored = self._stored(bucket, key)
        stored.last_modified -= timedelta(seconds=seconds)

    def seed(self, bucket: str, objects: dict[str, bytes]) -> None:
        """Objects written straight into S3's storage, without a request each (no checksum)."""
        from moto.s3.models import s3_backends

        for key, data in objects.items():
            s3_backends[ACCOUNT]["aws"].put_object(bucket, key, data)

    def _stored(self, bucket: str, key: str) -> Any:
        from moto.s3.models import s3_backends

        stored = s3_backends[ACCOUNT]["aws"].get_object(bucket, key)
        assert stored is not None, f"s3://{bucket}/{key} does not exist"
        return stored

    def reset(self) -> None:
        """A clean account for the next test: no bucket, cluster, group or role; the operator
        stays."""
        from moto.backends import get_backend

        for service in ("s3", "eks", "autoscaling"):
            get_backend(service)[ACCOUNT].reset()  # type: ignore[call-overload]
        iam = self.client("iam")
        for role in iam.list_roles()["Roles"]:
            for policy in iam.list_role_policies(RoleName=role["RoleName"])["PolicyNames"]:
                iam.delete_role_policy(RoleName=role["RoleName"], PolicyName=policy)
            iam.delete_role(RoleName=role["RoleName"])


def _start() -> tuple[Any, str]:
    """moto's server on a free loopback port, or the test fails saying why."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        pytest.fail(f"moto's server cannot be imported ({exc}): pip install -e '.[dev]'")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    # start() waits for ever when the server thread dies (a port it cannot bind): bounded here.
    starting = threading.Thread(target=server.start, daemon=True)
    starting.start()
    starting.join(START_TIMEOUT_S)
    if starting.is_alive():
        pytest.fail(f"moto's server did not start on 127.0.0.1 within {START_TIMEOUT_S:.0f} s")
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    try:
        urllib.request.urlopen(f"{url}/moto-api/data.json", timeout=START_TIMEOUT_S).close()
    except OSError as exc:
        server.stop()
        pytest.fail(f"moto's server at {url} does not answer: {exc}")
    return server, url


def _sign_gets_as_sent() -> Callable[[], None]:
    """moto 5.2.5 checks the signature of a bodiless GET (EKS's DescribeNodegroup) as if the
    request's headers were its form-encoded body, and so refuses every one of them with
    SignatureDoesNotMatch once IAM is enforced. Checked as sent: with an empty body."""
    from moto.iam.access_control import IAMRequest

    original = IAMRequest._create_aws_request

    def create(self: Any) -> Any:
        request = original(self)
        if self._method in ("GET", "HEAD", "DELETE") and not self._body:
            request.data = b""
        return request

    IAMRequest._create_aws_request = create

    def undo() -> None:
        IAMRequest._create_aws_request = original

    return undo


def _operator(url: str) -> tuple[str, str, str]:
    """An IAM user allowed everything, created before IAM is enforced: its key id, secret and
    ARN."""
    import boto3

    iam = boto3.client(
        "iam",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="bootstrap",
        aws_secret_access_key="bootstrap",
    )
    arn = iam.create_user(UserName="operator")["User"]["Arn"]
    iam.put_user_policy(UserName="operator", PolicyName="admin", PolicyDocument=json.dumps(ADMIN))
    key = iam.create_access_key(UserName="operator")["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"], arn


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoAws]:
    import boto3
    from moto.core import enable_iam_authentication

    server, url = _start()
    names = (*UNSET, *ISOLATED, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    saved = {k: os.environ.get(k) for k in names}
    try:
        key_id, secret, arn = _operator(url)
        undo = _sign_gets_as_sent()
        for name in UNSET:
            os.environ.pop(name, None)
        os.environ.update(ISOLATED, AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret)
        try:
            with enable_iam_authentication():
                yield MotoAws(url, boto3.Session(), arn)
        finally:
            undo()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        server.stop()


@pytest.fixture(name="aws")
def moto_aws(moto_server: MotoAws) -> MotoAws:
    moto_server.reset()
    return moto_server
