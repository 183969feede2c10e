"""Synthetic plans for the benchmarks: deterministic (seeded), varied, and valid.

Plan `i` of a seed is always the same plan, whatever the portfolio size, so a portfolio of 10
systems is the first 10 of the 100. Each plan describes one protected system: a primary site
and a DR site, on one of the cloud pairs gpudr supports (`gpudr.core.spec.PAIRS`), in regions that
offer the plan's GPU type (`gpudr/core/data/catalog.yaml`), with varied clusters, services, data
classes, sizes, patterns and links. Every plan written is validated by `gpudr.core.spec.load_plan`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpudr.core import reference
from gpudr.core.spec import PAIRS, Plan, PlanError, load_plan

DEFAULT_SEED = 20261121
# The cloud pairs, in the order portfolios cycle through them: every 10 plans hold each pair
# at least once, same-cloud pairs more often (most systems are protected within one cloud).
PAIR_CYCLE: tuple[tuple[str, str], ...] = (
    ("aws", "aws"),
    ("gcp", "gcp"),
    ("azure", "azure"),
    ("aws", "gcp"),
    ("aws", "aws"),
    ("gcp", "aws"),
    ("azure", "gcp"),
    ("gcp", "gcp"),
    ("aws", "aws"),
    ("azure", "azure"),
    ("aws", "azure"),
)
# The data classes a plan may hold, in the order `change_size` looks for one to resize.
DATA_CLASSES = ("checkpoints", "weights", "datasets")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([A-Za-z]+)")
WORDS = ("llm", "asr", "vision", "rec", "embed", "speech", "code", "chat", "rank", "ocr")
DX_LOCATIONS = ("EqDC2", "EqSe2", "CSOW", "EqLA3", "EqCH2", "CoreSite")


@dataclass(frozen=True)
class SynthPlan:
    index: int
    name: str
    pair: tuple[str, str]
    path: Path


def _site_name(cloud: str, region: str) -> str:
    """A short site name from the region: aws us-east-1 -> aue1, gcp us-central1 -> guc1,
    azure eastus2 -> zeastus2 (at most 8 characters)."""
    parts = region.split("-")
    if len(parts) == 1:
        abbr = region[:7]
    else:
        abbr = "".join(p[0] for p in parts[:-1]) + "".join(ch for ch in parts[-1] if ch.isdigit())
        abbr = abbr or parts[-1][:2]
    return {"aws": "a", "gcp": "g", "azure": "z"}[cloud] + abbr


def _zones(cloud: str, region: str, gpu_zones: frozenset[str], rng: random.Random) -> list[str]:
    if cloud == "azure":
        return ["1", "2"]
    if cloud == "aws":
        return [f"{region}a", f"{region}b"]
    # GCP: GPU pools go in the first zone, which must offer the machine type.
    here = sorted(z for z in gpu_zones if z.startswith(f"{region}-"))
    first = rng.choice(here)
    others = [f"{region}-{c}" for c in "abcf" if f"{region}-{c}" != first]
    return [first, others[0]]


def _common_gpus(a: str, b: str) -> list[str]:
    return sorted(set(reference.gpu_types(a)) & set(reference.gpu_types(b)))


def _gpu_regions(cloud: str, gpu: str) -> list[str]:
    offer = reference.gpu_offer(cloud, gpu)
    assert offer is not None
    regions = sorted(offer.regions & reference.regions(cloud))
    if cloud == "gcp":  # only regions with a zone known to offer the machine type
        regions = [r for r in regions if any(z.startswith(f"{r}-") for z in offer.zones)]
    return regions


def plan_dict(index: int, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Plan number `index` of `seed`, as the YAML document a user would write."""
    # One generator per plan, drawn from in a fixed order: the helpers below run in this order.
    rng = random.Random(f"{seed}/{index}")
    pair = PAIR_CYCLE[index % len(PAIR_CYCLE)]
    assert pair in PAIRS
    gpu = rng.choice(_common_gpus(*pair))
    name = f"{WORDS[index % len(WORDS)]}-{index:03d}"
    plan: dict[str, Any] = {
        "name": name,
        "sites": _sites(name, pair, gpu, rng),
        "clusters": _clusters(gpu, rng),
    }
    services = _services(gpu, rng)
    if services:
        plan["services"] = services
    data = _data(pair, rng)
    if data:
        plan["data"] = data
    if "weights" not in data:
        # A service's RPO is judged on its site's weights: without any, the model reaches the
        # DR site another way (its container image), and a stated RPO would be refused.
        for service in services.values():
            service["rpo"] = "none"
    if pair == ("aws", "aws"):
        plan["quotas"] = {"s3_rtc_gbps": 5}
    return plan


def _sites(
    name: str, pair: tuple[str, str], gpu: str, rng: random.Random
) -> dict[str, dict[str, Any]]:
    """The primary and the DR site by their short names, in regions that offer `gpu`."""
    primary_cloud, dr_cloud = pair
    p_region = rng.choice(_gpu_regions(primary_cloud, gpu))
    dr_choices = [
        r for r in _gpu_regions(dr_cloud, gpu) if (dr_cloud, r) != (primary_cloud, p_region)
    ]
    d_region = rng.choice(dr_choices)
    p_name = _site_name(primary_cloud, p_region)
    d_name = _site_name(dr_cloud, d_region)
    if d_name == p_name:
        d_name = f"{d_name[:7]}d"
    primary: dict[str, Any] = {"cloud": primary_cloud, "region": p_region, "role": "primary"}
    dr: dict[str, Any] = {
        "cloud": dr_cloud,
        "region": d_region,
        "role": "dr",
        "protects": p_name,
        "warm_fraction": rng.choice([0.1, 0.25, 0.5]),
    }
    for cloud, region, site in ((primary_cloud, p_region, primary), (dr_cloud, d_region, dr)):
        offer = reference.gpu_offer(cloud, gpu)
        assert offer is not None
        site["azs"] = _zones(cloud, region, offer.zones, rng)
        if cloud == "gcp":
            site["project"] = f"acme-{name}-{site['role']}"
    if pair in (("aws", "gcp"), ("aws", "azure")):
        primary["account"] = f"{rng.randrange(10**11, 10**12):012d}"
    dr.update(_dr_options(pair, rng))
    return {p_name: primary, d_name: dr}


def _dr_options(pair: tuple[str, str], rng: random.Random) -> dict[str, Any]:
    """Now and then: an explicit standby pattern, reserved capacity, a Direct Connect link."""
    out: dict[str, Any] = {}
    if rng.random() < 0.25:
        out["pattern"] = rng.choice(["pilot-light", "warm-standby"])
    if rng.random() < 0.2 and pair[1] in ("aws", "azure"):
        out["reserve_capacity"] = True
    if pair == ("aws", "aws") and rng.random() < 0.3:
        first, second = rng.sample(DX_LOCATIONS, 2)
        out["link"] = {"kind": "direct-connect", "location": first, "secondary_location": second}
    return out


def _clusters(gpu: str, rng: random.Random) -> dict[str, Any]:
    """One or two training clusters."""
    return {
        ("train", "tune")[c]: {
            "gpu": gpu,
            "nodes": rng.choice([2, 4, 8, 16, 32]),
            "rto": rng.choice(["2h", "4h", "8h"]),
        }
        for c in range(rng.choice([1, 1, 2]))
    }


def _services(gpu: str, rng: random.Random) -> dict[str, Any]:
    """Zero to two inference services on the training cluster."""
    return {
        ("chat", "search")[s]: {
            "cluster": "train",
            "gpu": gpu,
            "nodes": rng.choice([1, 2, 4]),
            "rpo": rng.choice(["5m", "15m"]),
            "rto": rng.choice(["15m", "30m", "1h"]),
        }
        for s in range(rng.choice([0, 1, 1, 2]))
    }


def _data(pair: tuple[str, str], rng: random.Random) -> dict[str, Any]:
    """Some or all of checkpoints, weights and datasets."""
    data: dict[str, Any] = {}
    if rng.random() < 0.85:
        checkpoints: dict[str, Any] = {
            "size": rng.choice(["200GB", "500GB", "1TB", "2TB"]),
            "interval": rng.choice(["30m", "45m", "1h"]),
            "keep": rng.randint(2, 6),
            "dedup_ratio": rng.choice([0.3, 0.5, 0.6]),
            "compression_ratio": rng.choice([1.5, 2, 3]),
            "rpo": rng.choice(["4h", "8h"]),
            "rto": rng.choice(["4h", "8h"]),
        }
        if pair == ("azure", "azure") and rng.random() < 0.5:
            checkpoints["replication"] = "dual-write"
        data["checkpoints"] = checkpoints
    if rng.random() < 0.8:
        data["weights"] = {
            "size": rng.choice(["20GB", "60GB", "150GB"]),
            "retention": rng.choice(["90d", "180d", "365d"]),
            "rpo": rng.choice([0, "1h"]),
            "rto": "1h",
        }
    if rng.random() < 0.7:
        data["datasets"] = {
            "size": rng.choice(["5TB", "40TB", "100TB"]),
            "daily_change": rng.choice(["100GB", "500GB", "1TB"]),
            "rpo": rng.choice(["24h", "none"]),
        }
    return data


def write_portfolio(
    directory: Path, count: int, seed: int = DEFAULT_SEED
) -> tuple[list[SynthPlan], list[Plan]]:
    """Write plans 0..count-1 of `seed` into `directory` and validate each with `load_plan`.

    Raises ValueError naming the plan and its problems if one does not validate: that is a bug
    in this generator, not something to measure."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[SynthPlan] = []
    loaded: list[Plan] = []
    for index in range(count):
        doc = plan_dict(index, seed)
        path = directory / f"{index:03d}-{doc['name']}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        try:
            loaded.append(load_plan(path))
        except PlanError as exc:
            problems = "; ".join(str(e) for e in exc.errors)
            raise ValueError(f"synthetic plan {path.name} does not validate: {problems}") from exc
        sites = list(doc["sites"].values())
        written.append(SynthPlan(index, doc["name"], (sites[0]["cloud"], sites[1]["cloud"]), path))
    return written, loaded


def pairs_of(plans: Sequence[SynthPlan]) -> dict[str, int]:
    """How many plans per cloud pair, e.g. {"aws->aws": 3}."""
    out: dict[str, int] = {}
    for p in plans:
        key = f"{p.pair[0]}->{p.pair[1]}"
        out[key] = out.get(key, 0) + 1
    return out


def _data_class(path: Path) -> str | None:
    """The first of DATA_CLASSES the plan file holds, if any."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")).get("data") or {}
    return next((name for name in DATA_CLASSES if name in data), None)


def change_size(path: Path) -> str:
    """Double the size of the plan's first data class, in place: a plan that really differs
    (its buckets' sizing, the bandwidth and the cost follow the size) and is still valid
    (`load_plan`). Returns what changed, e.g. "data.checkpoints.size: 2TB -> 4TB".

    Raises ValueError when the plan has no data class, or the changed plan does not validate."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    name = _data_class(path)
    if name is None:
        raise ValueError(f"{path.name} has no data class to resize")
    old = str(doc["data"][name]["size"])
    match = _SIZE.fullmatch(old)
    if match is None:
        raise ValueError(f"{path.name}: data.{name}.size {old!r} is not a number and a unit")
    new = f"{float(match.group(1)) * 2:g}{match.group(2)}"
    doc["data"][name]["size"] = new
    # As write_portfolio writes it: only the size differs from the file it replaces.
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    try:
        load_plan(path)
    except PlanError as exc:
        problems = "; ".join(str(e) for e in exc.errors)
        raise ValueError(
            f"{path.name} with data.{name}.size {new} does not validate: {problems}"
        ) from exc
    return f"data.{name}.size: {old} -> {new}"


def plans_to_change(plans: Sequence[SynthPlan]) -> list[SynthPlan]:
    """For each cloud pair the portfolio holds, in PAIR_CYCLE order, its first plan with a data
    class (which `change_size` can resize)."""
    chosen = []
    for pair in dict.fromkeys(PAIR_CYCLE):  # each pair once, in the cycle's order
        found = (p for p in plans if p.pair == pair and _data_class(p.path) is not None)
        first = next(found, None)
        if first is not None:
            chosen.append(first)
    return chosen
