"""What counts as a grant that backs a claim: one that reaches an identity, on this copy, with
no Deny or condition taking it back (policies/grants.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from policies.common import Stack
from policies.grants import read_grants, write_grants
from tests.policies.builders import WEIGHTS, azure, gcs, s3
from tests.policies.harness import Res, policy_resources, records

POLICY = "aws:iam/policy:Policy"
ATTACH = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"


def granted(resources: list[Res], target: Res) -> bool:
    found = policy_resources(records(resources))
    stack = Stack(found)
    bucket = next(r for r in found if r.urn == target.urn)
    return bool(write_grants(stack, bucket))


def s3_document(r: dict[str, Res]) -> dict[str, Any]:
    return json.loads(r["writer"].inputs["policy"])  # type: ignore[no-any-return]


def set_document(r: dict[str, Res], document: dict[str, Any]) -> None:
    r["writer"].inputs["policy"] = json.dumps(document)


def managed(r: dict[str, Res], attached: bool) -> list[Res]:
    """The writer's document as a managed policy, attached to a role or not."""
    policy = Res(POLICY, "writer-managed", {"policy": r["writer"].inputs["policy"]})
    out = [r["bucket"], policy]
    if attached:
        out.append(
            Res(ATTACH, "writer-attach", {"role": "w", "policyArn": "arn"}).link(
                "policyArn", policy
            )
        )
    return out


def deny_all(r: dict[str, Res]) -> None:
    document = s3_document(r)
    document["Statement"].append({"Effect": "Deny", "Action": "*", "Resource": "*"})
    set_document(r, document)


def conditioned(r: dict[str, Res]) -> None:
    document = s3_document(r)
    document["Statement"][0]["Condition"] = {"Bool": {"aws:ViaAWSService": "true"}}
    set_document(r, document)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, True, id="role-policy"),
        pytest.param(lambda r: r["writer"].inputs.pop("role"), False, id="role-policy-no-role"),
        pytest.param(deny_all, False, id="deny-in-the-same-document"),
        pytest.param(conditioned, False, id="conditional-allow"),
    ],
)
def test_s3_write_grants(mutate: Callable[[dict[str, Res]], Any], expected: bool) -> None:
    r = s3("weights", WEIGHTS)
    mutate(r)
    assert granted([r["bucket"], r["writer"]], r["bucket"]) is expected


@pytest.mark.parametrize("attached", [True, False])
def test_a_managed_policy_counts_only_attached(attached: bool) -> None:
    r = s3("weights", WEIGHTS)
    resources = managed(r, attached)
    assert granted(resources, r["bucket"]) is attached


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param({}, True, id="service-account"),
        pytest.param({"member": ""}, False, id="no-member"),
        pytest.param({"member": None, "members": []}, False, id="binding-to-nobody"),
        pytest.param({"member": "allUsers"}, False, id="everyone-is-no-one"),
        pytest.param({"condition": {"expression": "false"}}, False, id="conditional"),
    ],
)
def test_gcs_write_grants(change: dict[str, Any], expected: bool) -> None:
    r = gcs("weights", {**WEIGHTS, "dr-role": "data-replica"})
    r["writer"].inputs.update(change)
    assert granted([r["bucket"], r["writer"]], r["bucket"]) is expected


@pytest.mark.parametrize(
    ("change", "linked", "expected"),
    [
        pytest.param({}, True, True, id="scope-from-the-account"),
        pytest.param(
            {"principalId": "00000000-0000-0000-0000-000000000000"}, True, False, id="nil"
        ),
        pytest.param({}, False, False, id="scope-string-other-resource-group"),
        pytest.param(
            {"scope": "/nonexistent/storageAccounts/gpudrweights0123"}, False, False, id="bogus"
        ),
    ],
)
def test_azure_write_grants(change: dict[str, Any], linked: bool, expected: bool) -> None:
    r = azure("weights", WEIGHTS)
    writer = r["writer"]
    writer.inputs.update(change)
    if not linked:
        writer.property_dependencies.pop("scope")
    assert granted([r["account"], writer], r["account"]) is expected


def test_an_azure_scope_string_with_the_accounts_resource_group_counts() -> None:
    r = azure("weights", WEIGHTS)
    r["account"].inputs["resourceGroupName"] = "g"
    writer = r["writer"]
    writer.property_dependencies.pop("scope")
    assert granted([r["account"], writer], r["account"])


def test_reads_and_writes_are_told_apart() -> None:
    """A reader's objectViewer backs a pull's source, not a dual write."""
    r = gcs("checkpoints", {**WEIGHTS, "dr-role": "data-replica"})
    r["writer"].inputs["role"] = "roles/storage.objectViewer"
    stack = Stack(policy_resources(records([r["bucket"], r["writer"]])))
    bucket = next(b for b in stack.resources if b.urn == r["bucket"].urn)
    assert read_grants(stack, bucket) and not write_grants(stack, bucket)


def test_an_attachment_that_names_no_role_user_or_group_grants_nothing() -> None:
    r = s3("weights", WEIGHTS)
    policy = Res(POLICY, "writer-managed", {"policy": r["writer"].inputs["policy"]})
    empty = Res("aws:iam/policyAttachment:PolicyAttachment", "nobody", {"policyArn": "arn"})
    assert not granted([r["bucket"], policy, empty.link("policyArn", policy)], r["bucket"])


def test_a_deny_with_not_action_takes_the_grant_back() -> None:
    r = s3("weights", WEIGHTS)
    document = s3_document(r)
    document["Statement"].append({"Effect": "Deny", "NotAction": "s3:GetObject", "Resource": "*"})
    set_document(r, document)
    assert not granted([r["bucket"], r["writer"]], r["bucket"])


def test_the_buckets_own_deny_takes_a_write_grant_back() -> None:
    r = s3("weights", WEIGHTS)
    deny = {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": "*"}
    r["policy"].inputs["policy"] = json.dumps({"Statement": [deny]})
    assert not granted([r["bucket"], r["policy"], r["writer"]], r["bucket"])
    r = s3("weights", WEIGHTS)  # gpudr's own bucket policy denies only insecure transport
    assert granted([r["bucket"], r["policy"], r["writer"]], r["bucket"])


def test_an_azure_assignment_with_a_condition_grants_nothing() -> None:
    r = azure("weights", WEIGHTS)
    r["writer"].inputs["condition"] = "@Resource[Microsoft.Storage/x] StringEquals 'never'"
    assert not granted([r["account"], r["writer"]], r["account"])
