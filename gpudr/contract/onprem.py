"""Facts of an on-premises site's replication that the planner's runbooks and the Pulumi
program both use, written once: the ports the DataSync agents open and are opened to, the
kinds of store read over NFS or over an S3 API, and the range on-premises hosts reach Google's
APIs at over an Interconnect. The runbook formats the ports as text
(`gpudr.docs.onprem_runbook`); the program opens them (`components/aws/onprem.py`).

Standard library and core's enums only: the Pulumi program reads this module.

Source: AWS DataSync network requirements, VPC service endpoints (reference data
`sources.datasync-network`), https://docs.aws.amazon.com/datasync/latest/userguide/datasync-network.html
"""

from __future__ import annotations

# Re-exported: the planner reads them from core's enums (it cannot import the contract).
from gpudr.core.enums import NFS_STORAGE_KINDS as NFS_STORAGE_KINDS
from gpudr.core.enums import OBJECT_STORAGE_KINDS as OBJECT_STORAGE_KINDS

# The TCP port ranges (first, last) each agent opens to the DataSync endpoint's network
# interfaces: 443 for the data and the activation, 1024-1064 for control traffic.
DATASYNC_ENDPOINT_PORTS: tuple[tuple[int, int], ...] = ((443, 443), (1024, 1064))
# What opens to an agent while it is activated (TCP, from where the activation key is fetched);
# closed after.
DATASYNC_ACTIVATION_PORT = 80
# What the agents open to an NFS server: NFS v4.1's one port; NFS v3 also needs the portmapper
# (TCP and UDP) and the server's mountd port, which the server chooses.
NFS_PORT = 2049
PORTMAPPER_PORT = 111
# Private Google Access for on-premises hosts: private.googleapis.com, which a GCP DR site's
# Cloud Router advertises over the Interconnect and its VPC routes to Google's front ends
# (components/gcp/onprem.py), and which the runbook has the agent hosts resolve to.
PRIVATE_GOOGLE_APIS = "199.36.153.8/30"
