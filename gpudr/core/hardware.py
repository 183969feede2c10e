"""What changes when an on-premises cluster fails over to a cloud GPU pool: training throughput
(reference data gpudr/core/data/hardware.yaml, with sources), the extra time and GPU cost of
running there, and the fabric, image and driver differences the runbook must handle."""

from __future__ import annotations

from dataclasses import dataclass

from gpudr.core import reference
from gpudr.core.enums import GpuInterconnect
from gpudr.core.spec import GpuInventory
from gpudr.core.units import fmt_duration

DAY_S = 86400.0


@dataclass(frozen=True)
class HardwareDifference:
    onprem_model: str
    cloud_gpu: str  # the catalog key the DR site runs (h100, a100-80gb, ...)
    cloud_model: str | None  # its model, None when gpudr does not know it
    onprem_gpus: int  # GPUs the cluster uses on premises
    cloud_gpus: int  # GPUs its DR pool has
    # The DR pool's training throughput over the on-premises cluster's; None: not measured.
    relative: float | None
    onprem_fabric: GpuInterconnect
    cloud_fabric: str
    bare_metal: bool

    @property
    def same(self) -> bool:
        return self.cloud_model == self.onprem_model and self.cloud_gpus == self.onprem_gpus

    @property
    def slowdown(self) -> float | None:
        """Extra time for the same work: 0.8 means 80% longer."""
        return None if self.relative is None else 1.0 / self.relative - 1.0

    def day_s(self) -> float | None:
        """How long a day of on-premises training takes at the DR site."""
        return None if self.relative is None else DAY_S / self.relative


def difference(
    inventory: GpuInventory, nodes: int, cloud: str, gpu: str, gpus_per_node: int
) -> HardwareDifference:
    """The DR pool (`nodes` x `gpus_per_node` of catalog GPU `gpu` on `cloud`) against the
    same number of nodes of the on-premises inventory."""
    model = reference.cloud_gpu_model(gpu)
    onprem_gpus = nodes * inventory.gpus_per_node
    cloud_gpus = nodes * gpus_per_node
    mine = reference.relative_training(inventory.model)
    theirs = None if model is None else reference.relative_training(model)
    relative = None
    if mine and theirs:
        relative = cloud_gpus * theirs / (onprem_gpus * mine)
    return HardwareDifference(
        onprem_model=inventory.model,
        cloud_gpu=gpu,
        cloud_model=model,
        onprem_gpus=onprem_gpus,
        cloud_gpus=cloud_gpus,
        relative=relative,
        onprem_fabric=inventory.interconnect,
        cloud_fabric=reference.cloud_interconnect(cloud, gpu),
        bare_metal=inventory.bare_metal,
    )


def notes(d: HardwareDifference, instance_type: str, hourly_usd: float, nodes: int) -> list[str]:
    """What the plan says about running a cluster's training on its DR pool."""
    out: list[str] = []
    what = f"{d.cloud_gpus} x {d.cloud_model or d.cloud_gpu} ({nodes} {instance_type})"
    if d.relative is None:
        out.append(
            f"training throughput on {what} against {d.onprem_gpus} x {d.onprem_model} on "
            "premises is not known to gpudr (gpudr/core/data/hardware.yaml has no measured "
            "ratio for one of them): measure a training step on both before relying on the RTO"
        )
    elif not d.same or abs(d.relative - 1.0) > 1e-9:
        day_s = d.day_s() or 0.0
        extra = (d.slowdown or 0.0) * 100
        usd_day = hourly_usd * nodes * day_s / 3600
        faster = "longer" if extra >= 0 else "shorter"
        out.append(
            f"degraded: {what} trains at {d.relative:.0%} of {d.onprem_gpus} x "
            f"{d.onprem_model} on premises (hardware.yaml, MLPerf-based): a day of on-premises "
            f"training takes {fmt_duration(day_s)} ({abs(extra):.0f}% {faster}), "
            f"${usd_day:,.0f} of GPU time at list price"
        )
    same_fabric = d.onprem_fabric == GpuInterconnect.INFINIBAND and "InfiniBand" in d.cloud_fabric
    if not same_fabric:
        out.append(
            f"fabric: {d.onprem_fabric} on premises, {d.cloud_fabric} at the DR site: the "
            "training image needs the cloud's NCCL network plugin, and jobs tuned for "
            f"{d.onprem_fabric} (NCCL_IB_* settings, topology files) must be re-tuned"
        )
    machine = "bare metal" if d.bare_metal else "virtualised hosts"
    out.append(
        f"image and driver: the cluster runs on {machine} on premises and on the DR pool's "
        "managed GPU image at the DR site: build the training image for the DR image's CUDA "
        "driver and test it there in a drill (gpudr drill) before you need it"
    )
    return out
