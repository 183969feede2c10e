"""The policies of gpudr's pack, in one list (policies/__main__.py serves them)."""

from __future__ import annotations

from pulumi_policy import Policy

from .bucket_versioning import bucket_versioning
from .cluster_control_plane_logged import cluster_control_plane_logged
from .data_access_logged import data_access_logged
from .default_network_closed import default_network_closed
from .deletion_protection import deletion_protection
from .dr_tags_verified import dr_tags_verified
from .encryption_at_rest import data_encrypted_at_rest
from .encryption_in_transit import encryption_in_transit
from .gpu_standby_sizing import gpu_standby_sizing
from .guarded_class_supported import guarded_class_supported
from .immutable_weights import immutable_weights
from .kms_key_rotation import kms_key_rotation
from .kubernetes_api_not_public import kubernetes_api_not_public
from .kubernetes_cluster_hardened import kubernetes_cluster_hardened
from .network_flow_logged import network_flow_logged
from .no_public_access import no_public_access
from .node_metadata_protected import node_metadata_protected
from .replication_bandwidth import replication_bandwidth
from .replication_meets_rpo import replication_meets_rpo
from .storage_network_restricted import storage_network_restricted
from .weights_lock import weights_immutability_locked

PACK_NAME = "gpudr"

POLICIES: list[Policy] = [
    data_encrypted_at_rest,
    kms_key_rotation,
    encryption_in_transit,
    no_public_access,
    bucket_versioning,
    kubernetes_api_not_public,
    kubernetes_cluster_hardened,
    node_metadata_protected,
    default_network_closed,
    storage_network_restricted,
    data_access_logged,
    network_flow_logged,
    cluster_control_plane_logged,
    dr_tags_verified,
    guarded_class_supported,
    replication_meets_rpo,
    replication_bandwidth,
    immutable_weights,
    weights_immutability_locked,
    deletion_protection,
    gpu_standby_sizing,
]
