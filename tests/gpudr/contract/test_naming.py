"""Naming rules whose cloud limits a name could break: GCP service account ids."""

from __future__ import annotations

import pytest

from gpudr.contract.naming import (
    GCP_ACCOUNT_ID,
    datasync_reader_id,
    writer_account_id,
    writer_name,
    writer_role_name,
)

CLASSES = ["weights", "checkpoints", "datasets", "Model_Weights.v2", "x", "-", "a" * 60]


@pytest.mark.parametrize("data_class", CLASSES)
@pytest.mark.parametrize("system", ["llm", "vision-models-with-a-long-name"])
def test_writer_account_ids_keep_gcps_rule(system: str, data_class: str) -> None:
    account_id = writer_account_id(system, "use4", data_class)
    assert GCP_ACCOUNT_ID.match(account_id), account_id
    assert 6 <= len(account_id) <= 30


def test_writer_account_ids_read_as_their_class_and_differ_by_site_and_system() -> None:
    assert writer_account_id("llm", "use4", "weights").startswith("gpudr-weights-wr-")
    ids = {writer_account_id(s, site, "weights") for s in ("a", "b") for site in ("x", "y")}
    assert len(ids) == 4


def test_the_rule_refuses_what_gcp_refuses() -> None:
    for bad in ("short", "9starts-with-digit", "ends-with-hyphen-", "Upper-case-id", "a" * 31):
        assert not GCP_ACCOUNT_ID.match(bad), bad
    assert GCP_ACCOUNT_ID.match(datasync_reader_id("llm", "use1"))


def test_writer_names_fit_iam_and_azure_limits() -> None:
    assert writer_name("llm", "usw2", "weights") == "gpudr-llm-usw2-weights-writer"
    assert len(writer_name("s" * 200, "site", "weights")) == 128


def test_writer_role_names_fit_iams_role_limit_and_stay_distinct() -> None:
    assert writer_role_name("llm", "usw2", "weights") == writer_name("llm", "usw2", "weights")
    long_names = {writer_role_name("s" * 60, "site", c) for c in ("weights-a", "weights-b")}
    assert len(long_names) == 2
    assert all(len(n) == 64 and n.startswith("gpudr-" + "s" * 45) for n in long_names)
