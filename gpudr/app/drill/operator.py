"""Who runs the drill: the one principal the drill stack lets act as its reader.

AWS: the caller's ARN from `sts get-caller-identity` (boto3), which the reader role's trust
policy names (`gpudr.contract.drill.aws_trusted`). GCP: the gcloud CLI's active account, as an
IAM member, granted Token Creator on the reader service account. Azure: none (its reader is a
user-assigned identity only an Azure resource can sign in as).

None means nobody could be identified: the drill stack then lets nobody act as the reader (on
AWS it declares no reader role at all) and the checks run with the operator's own credentials.
"""

from __future__ import annotations

from typing import Any

from gpudr.contract.drill import operator_cloud
from gpudr.core.enums import Cloud


def discover(cloud: str, region: str) -> str | None:
    """The operator of a drill of a `cloud` site in `region`, or None."""
    if cloud == Cloud.AWS:
        return aws_operator(region)
    if cloud == Cloud.GCP:
        return gcp_operator()
    return None


def aws_operator(region: str, sts: Any | None = None) -> str | None:
    """The caller's ARN (an IAM user, or a role session), or None without credentials or for a
    caller that cannot assume a role (the root user, a federated user). `sts`: a boto3 STS
    client, for tests; by default one for `region` (STS's regional endpoint)."""
    # botocore and boto3 ship no type information.
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        if sts is None:
            import boto3

            sts = boto3.client("sts", region_name=region)
        arn = str(sts.get_caller_identity()["Arn"])
    except (BotoCoreError, ClientError):
        return None
    return arn if operator_cloud(arn) == Cloud.AWS else None


def gcp_operator() -> str | None:
    """The gcloud CLI's active account as an IAM member, or None when gcloud has none."""
    from gpudr.app.drill.commands import CommandFailed, SubprocessRunner

    try:
        account = SubprocessRunner().run(["gcloud", "config", "get-value", "account"]).strip()
    except CommandFailed:
        return None
    if not account:
        return None
    kind = "serviceAccount" if account.endswith(".gserviceaccount.com") else "user"
    return f"{kind}:{account}"
