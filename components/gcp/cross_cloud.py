"""The GCP primary's side of GCP -> AWS disaster recovery: who may read the primary's buckets.

AWS DataSync reads another cloud's object storage only with an access key pair, so each AWS DR
site gets a service account of its own that can read the buckets it pulls and nothing else,
and an HMAC key for it. The key's secret leaves this stack only as a secret output
(`transfer_credentials`), from which the DR stack's operator copies it into that stack's
secret config; the DR stack never reads this stack's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.gcp.bucket import grant_bucket_roles
from gpudr.contract import grants
from gpudr.contract.site import DataSyncReader

# Read only: objects (get, list) and the bucket's metadata, which DataSync reads to list the
# bucket. No role that writes or deletes: the DR site can never change the primary's data.
READ_ROLES = {
    "object-viewer": grants.GCS_OBJECT_VIEWER,
    "bucket-reader": "roles/storage.legacyBucketReader",
}


@dataclass(frozen=True)
class GcsHmacReaderArgs:
    project: str
    reader: DataSyncReader
    # label -> bucket name, one per bucket of `reader.buckets`; Outputs of this stack's buckets,
    # so the grants wait for the buckets they name.
    buckets: Mapping[str, pulumi.Input[str]]


class GcsHmacReader(pulumi.ComponentResource):
    """A service account for one DR site's DataSync tasks, read grants on the buckets it pulls,
    and its HMAC key. The buckets' CMEK needs no grant: Cloud Storage's own service agent
    decrypts for any caller allowed to read the object."""

    email: pulumi.Output[str]
    access_id: pulumi.Output[str]
    secret: pulumi.Output[str]

    def __init__(
        self, name: str, args: GcsHmacReaderArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:transfer:GcsHmacReader", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        reader = args.reader
        if len(args.buckets) != len(reader.buckets):
            raise ValueError(
                f"DataSync reader for {reader.dr_site}: buckets {', '.join(reader.buckets)} are "
                "not all declared by this stack; regenerate the stack with `gpudr generate`"
            )
        account = gcp.serviceaccount.Account(
            f"{name}-account",
            account_id=reader.account_id,
            project=args.project,
            display_name=f"gpudr DataSync reader for {reader.dr_site}",
            description=(
                f"AWS DataSync at DR site {reader.dr_site} reads {', '.join(reader.buckets)} "
                "with this account's HMAC key; read only"
            ),
            opts=child,
        )
        grants: list[pulumi.Resource] = []
        for label, bucket in args.buckets.items():
            grants += grant_bucket_roles(
                f"{name}-{label}",
                bucket=bucket,
                roles=READ_ROLES,
                member=account.member,
                opts=child,
            )
        # After the grants: a key that exists can read, so the DR stack's first run succeeds.
        key = gcp.storage.HmacKey(
            f"{name}-hmac",
            project=args.project,
            service_account_email=account.email,
            state="ACTIVE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=grants),
        )
        self.email = account.email
        self.access_id = key.access_id
        # The provider marks it secret already; wrapped again so that no change there can ever
        # put it in plain text in the state or in `pulumi stack output`.
        self.secret = pulumi.Output.secret(key.secret)
        self.register_outputs(
            {"email": self.email, "access_id": self.access_id, "secret": self.secret}
        )
