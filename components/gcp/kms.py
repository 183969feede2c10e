"""A Cloud KMS key for a site's data in one location, with rotation, and the service agents
allowed to use it.

Cloud KMS keys are regional, and a bucket's CMEK key must live in the bucket's location (`us`
for a US dual-region), a GKE cluster's in the cluster's region: a site has one key ring per
location it needs, named `<key_ring>-<location>`, each holding one key named `data`. The names
are deterministic, so another stack can name a key without reading this stack's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

ENCRYPTER = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
# 90 days: key versions rotate; old versions stay enabled, so older objects stay readable.
ROTATION_PERIOD = "7776000s"
# 30 days between "destroy" and the material being gone, as the AWS keys' deletion window.
DESTROY_SCHEDULED = "2592000s"


@dataclass(frozen=True)
class DataKeyArgs:
    project: str
    location: str  # a region (us-east4) or a multi-region (us, eu, asia), lower case
    key_ring: str  # the site's key ring prefix; the ring is `<key_ring>-<location>`
    labels: Mapping[str, str]
    # Members (`serviceAccount:...`) that encrypt and decrypt with this key, keyed by a short
    # stable label used in the grant's name (`storage`, `gke`, `transfer`).
    encrypters: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)


KEY_NAME = "data"


def ring_name(prefix: str, location: str) -> str:
    """The key ring of a location: one per region (and one for the multi-region buckets)."""
    return f"{prefix}-{location}"


def key_path(project: str, prefix: str, location: str) -> str:
    """The resource path of the data key a DataKey declares, for a stack that only uses it."""
    ring = ring_name(prefix, location)
    return f"projects/{project}/locations/{location}/keyRings/{ring}/cryptoKeys/{KEY_NAME}"


class DataKey(pulumi.ComponentResource):
    key_id: pulumi.Output[str]
    key_ring_id: pulumi.Output[str]
    # The IAM grants, by label: a resource that encrypts with the key depends on its grant, or
    # its creation fails with a permission error on the first apply.
    grants: dict[str, gcp.kms.CryptoKeyIAMMember]

    def __init__(
        self, name: str, args: DataKeyArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:kms:DataKey", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        # A key ring can never be deleted in Cloud KMS (removing it only drops it from state):
        # protected so that a refactor cannot try to re-create it under the same name.
        ring = gcp.kms.KeyRing(
            f"{name}-ring",
            name=ring_name(args.key_ring, args.location),
            location=args.location,
            project=args.project,
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        # Destroying this key makes every object encrypted with it unreadable, replicas included.
        key = gcp.kms.CryptoKey(
            f"{name}-key",
            name=KEY_NAME,
            key_ring=ring.id,
            purpose="ENCRYPT_DECRYPT",
            rotation_period=ROTATION_PERIOD,
            destroy_scheduled_duration=DESTROY_SCHEDULED,
            labels=dict(args.labels),
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        # One non-authoritative member per (key, role, member): two resources holding the same
        # binding would remove it for both when either is deleted, so the site grants each
        # service agent once per key, here.
        self.grants = {
            label: gcp.kms.CryptoKeyIAMMember(
                f"{name}-{label}-encrypter",
                crypto_key_id=key.id,
                role=ENCRYPTER,
                member=member,
                opts=child,
            )
            for label, member in args.encrypters.items()
        }
        self.key_id = key.id
        self.key_ring_id = ring.id
        self.register_outputs({"key_id": self.key_id, "key_ring_id": self.key_ring_id})
