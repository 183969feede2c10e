"""What a drill checks in Google Cloud and Azure, through their CLIs (tests fake the runner);
AWS's checks are `probes/aws.py`, through boto3.

Replicas are read as the drill's reader identity where the CLI can take it on: GCP
impersonates the reader service account (`--impersonate-service-account`, which the drill
stack grants the operator and no one else). Azure's reader is a user-assigned identity, which
only an Azure resource can sign in as: the data commands run as the operator
(`--auth-mode login`, which needs Storage Blob Data Reader on the accounts). GPU capacity is
read with the operator's own credentials: the reader can read data and nothing else.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gpudr.app.drill.commands import Runner
from gpudr.app.drill.probes.base import ObjectInfo, PoolState, StoredChecksum, parse_time
from gpudr.app.drill.probes.base import Probe as BaseProbe
from gpudr.build.drill import DrillPool, DrillSetup
from gpudr.contract.drill import reader_name, resource_group_name
from gpudr.contract.site import BucketConfig
from gpudr.docs import cloudcli as cli


def _json(text: str) -> Any:
    return json.loads(text) if text.strip() else None


class Probe(BaseProbe):
    """A probe that runs the cloud's CLI through `runner`."""

    def __init__(
        self, setup: DrillSetup, runner: Runner, sleep: Callable[[float], None] | None = None
    ) -> None:
        super().__init__(setup, sleep)
        self.runner = runner


class GcpProbe(Probe):
    def __init__(
        self, setup: DrillSetup, runner: Runner, sleep: Callable[[float], None] | None = None
    ) -> None:
        super().__init__(setup, runner, sleep)
        self.project = setup.site.project or ""
        self.impersonate: list[str] = []

    def sign_in(self, outputs: Mapping[str, Any]) -> None:
        reader = str(outputs.get("reader") or "")
        # The stack lets the operator act as the reader only when it knows the operator.
        if reader and self.setup.drill.operator:
            self.impersonate = [f"--impersonate-service-account={reader}"]

    def identity(self) -> str:
        if self.impersonate:
            return f"the reader service account ({self.impersonate[0].split('=', 1)[1]})"
        return super().identity()

    def list_objects(self, bucket: BucketConfig) -> list[ObjectInfo]:
        out = _json(self.runner.run([*cli.gcs_list_objects(bucket), *self.impersonate]))
        return [
            ObjectInfo(
                str(o["name"]),
                int(o.get("size") or 0),
                parse_time(str(o.get("update_time") or o.get("updated"))),
            )
            for o in out or []
        ]

    def stored_checksum(self, bucket: BucketConfig, key: str) -> StoredChecksum | None:
        argv = cli.gcs_describe_object(bucket, key, "json(md5_hash,crc32c_hash,size)")
        out = _json(self.runner.run([*argv, *self.impersonate])) or {}
        # MD5 where Cloud Storage has it (not on composite objects): hashed at C speed.
        if out.get("md5_hash"):
            return StoredChecksum("md5", str(out["md5_hash"]))
        if out.get("crc32c_hash"):
            return StoredChecksum("crc32c", str(out["crc32c_hash"]))
        return None

    def read(self, bucket: BucketConfig, key: str) -> Iterator[bytes]:
        argv = cli.read_object("gcp", bucket, key, self.site.region)
        return self.runner.stream([*argv, *self.impersonate])

    def pool_state(self, pool: DrillPool) -> PoolState:
        argv = cli.gke_node_pool(
            pool.pool, pool.cluster_name, self.site.region, self.project, "json"
        )
        described = _json(self.runner.run(argv))
        status = described.get("status", "?")
        ready = 0
        for url in described.get("instanceGroupUrls") or []:
            parts = str(url).split("/")
            zone, name = parts[parts.index("zones") + 1], parts[-1]
            instances = _json(self.runner.run(cli.gce_group_instances(name, zone, self.project)))
            ready += sum(1 for i in instances or [] if i.get("instanceStatus") == "RUNNING")
        return PoolState(ready, f"node pool {status}, {ready} instance(s) running")


class AzureProbe(Probe):
    def __init__(
        self, setup: DrillSetup, runner: Runner, sleep: Callable[[float], None] | None = None
    ) -> None:
        super().__init__(setup, runner, sleep)
        self.group = resource_group_name(setup.id)

    def identity(self) -> str:
        return (
            "the operator's own credentials (--auth-mode login): the drill's reader identity, "
            f"{reader_name(self.setup.id, 'azure')}, can only be signed in to from Azure"
        )

    def list_objects(self, bucket: BucketConfig) -> list[ObjectInfo]:
        listed = "[].{name:name,size:properties.contentLength,modified:properties.lastModified}"
        out = _json(self.runner.run(cli.blob_list(bucket, listed, "json")))
        return [
            ObjectInfo(str(o["name"]), int(o.get("size") or 0), parse_time(str(o["modified"])))
            for o in out or []
        ]

    def stored_checksum(self, bucket: BucketConfig, key: str) -> StoredChecksum | None:
        md5 = "properties.contentSettings.contentMd5"
        out = _json(self.runner.run(cli.blob_show(bucket, key, md5, "json")))
        if not out:
            return None  # Azure keeps Content-MD5 only when the uploader set it
        if isinstance(out, list):  # some CLI versions print the bytes as a list
            out = base64.b64encode(bytes(out)).decode("ascii")
        return StoredChecksum("md5", str(out))

    def read(self, bucket: BucketConfig, key: str) -> Iterator[bytes]:
        return self.runner.stream(cli.read_object("azure", bucket, key, self.site.region))

    def pool_state(self, pool: DrillPool) -> PoolState:
        argv = cli.aks_node_pool(self.group, pool.cluster_name, pool.agent, None, "json")
        shown = _json(self.runner.run(argv))
        state = shown.get("provisioningState", "?")
        power = (shown.get("powerState") or {}).get("code", "?")
        count = int(shown.get("count") or 0)
        # AKS reports Succeeded once the scale set has its instances; count is their number.
        ready = count if state == "Succeeded" and power == "Running" else 0
        return PoolState(ready, f"node pool {state}, {power}, count {count}")


PROBES: dict[str, type[Probe]] = {"gcp": GcpProbe, "azure": AzureProbe}
