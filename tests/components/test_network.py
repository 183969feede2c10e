from __future__ import annotations

from components.aws.network import subnet_plan


def test_subnet_plan() -> None:
    private, public = subnet_plan("10.10.0.0/16", ["a", "b"])
    assert private == ["10.10.0.0/20", "10.10.16.0/20"] and public == "10.10.32.0/20"
