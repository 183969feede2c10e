"""Fakes for drill tests: a clock that only moves when told, the stack interface recording
every call, and a probe answering from an in-memory replica."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from gpudr.app.drill.probes import ObjectInfo, PoolState, Probe, StoredChecksum
from gpudr.build.drill import DrillPool, DrillSetup
from gpudr.contract.site import BucketConfig

START = datetime(2025, 1, 31, 3, 12, tzinfo=UTC)


class Clock:
    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class CommandError(RuntimeError):
    """Stands for pulumi.automation.CommandError: the CLI's whole output in one message."""


@dataclass
class FakeStacks:
    """The stack interface; `calls` records (operation, stack[, detail]) in order."""

    clock: Clock
    up_s: list[float] = field(default_factory=lambda: [900.0, 300.0])  # per up, in order
    fail_up: dict[int, BaseException] = field(default_factory=dict)  # up number -> raised
    destroy_failures: int = 0
    existing: dict[str, dict[str, str]] = field(default_factory=dict)  # stack -> tags
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    ups: int = 0
    locked: bool = False  # a killed update holds the stack: destroy fails until cancelled
    cancel_fails: bool = False

    def create(self, name: str) -> None:
        self.calls.append(("create", name))
        self.existing[name] = {}

    def set_config(self, name: str, values: Mapping[str, Any]) -> None:
        self.calls.append(("set_config", name, values["gpudr:drill"]["phase"]))

    def set_tags(self, name: str, tags: Mapping[str, str]) -> None:
        self.calls.append(("set_tags", name, dict(tags)))
        self.existing[name] = dict(tags)

    def up(self, name: str, on_output: Callable[[str], None]) -> dict[str, Any]:
        self.calls.append(("up", name))
        self.ups += 1
        self.clock.advance(self.up_s[min(self.ups, len(self.up_s)) - 1])
        on_output(f"Updating ({name})")
        if self.ups in self.fail_up:
            raise self.fail_up[self.ups]
        return dict(self.outputs)

    def destroy(self, name: str, on_output: Callable[[str], None]) -> None:
        self.calls.append(("destroy", name))
        self.clock.advance(600)
        if self.locked:
            raise CommandError(
                "code: 255\n stderr: error: [409] Conflict: "
                "Another update is currently in progress."
            )
        if self.destroy_failures:
            self.destroy_failures -= 1
            raise CommandError("code: 255\n stderr: error: the cloud said no")

    def cancel(self, name: str) -> None:
        self.calls.append(("cancel", name))
        if self.cancel_fails:
            raise CommandError(
                "code: 255\n stderr: error: the current backend does not support cancel"
            )
        self.locked = False

    def remove(self, name: str) -> None:
        self.calls.append(("remove", name))
        self.existing.pop(name, None)

    def list(self) -> list[str]:
        return list(self.existing)

    def tags(self, name: str) -> dict[str, str]:
        return dict(self.existing[name])

    def ops(self) -> list[str]:
        return [c[0] for c in self.calls]


def b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


@dataclass
class Obj:
    data: bytes
    age_s: float  # how long before START it was written
    recorded: str | None = "sha256"  # the algorithm the cloud recorded; None: nothing
    corrupt: bool = False  # the bytes read differ from the ones hashed at upload


class FakeProbe(Probe):
    """A replica in memory, per bucket name; pools ready `ready_after_s` after it starts."""

    def __init__(
        self,
        setup: DrillSetup,
        clock: Clock,
        buckets: dict[str, dict[str, Obj]],
        ready_after_s: float = 0.0,
        fail_list: int = 0,
    ) -> None:
        super().__init__(setup)
        self.clock = clock
        self.base = clock()  # objects were written, and pools get ready, relative to this
        self.buckets = buckets
        self.ready_at = self.base + timedelta(seconds=ready_after_s)
        self.fail_list = fail_list
        self.signed_in: Mapping[str, Any] | None = None
        self.reads: list[str] = []

    def sign_in(self, outputs: Mapping[str, Any]) -> None:
        self.signed_in = outputs

    def list_objects(self, bucket: BucketConfig) -> list[ObjectInfo]:
        from gpudr.app.drill.commands import CommandFailed

        self.clock.advance(2)
        if self.fail_list:
            self.fail_list -= 1
            raise CommandFailed("`aws s3api list-objects-v2 ...` failed: AccessDenied")
        return [
            ObjectInfo(k, len(o.data), self.base - timedelta(seconds=o.age_s))
            for k, o in self.buckets.get(bucket.name, {}).items()
        ]

    def stored_checksum(self, bucket: BucketConfig, key: str) -> StoredChecksum | None:
        obj = self.buckets[bucket.name][key]
        if obj.recorded is None:
            return None
        return StoredChecksum(obj.recorded, b64(hashlib.new(obj.recorded, obj.data).digest()))

    def read(self, bucket: BucketConfig, key: str) -> Iterator[bytes]:
        self.reads.append(key)
        obj = self.buckets[bucket.name][key]
        data = obj.data[:-1] + b"!" if obj.corrupt else obj.data
        self.clock.advance(len(data) / 1e6)
        for i in range(0, len(data), 7):
            yield data[i : i + 7]

    def pool_state(self, pool: DrillPool) -> PoolState:
        ready = pool.nodes if self.clock() >= self.ready_at else 0
        return PoolState(ready, f"{ready} running")
