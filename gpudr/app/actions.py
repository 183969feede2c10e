"""The GitHub Actions the generated workflows use, each pinned to one commit: a tag can be moved to
other code after review, a commit cannot. This is the one place a pin lives; the workflow
template writes `uses: <action>@<sha> # <version>` from it, and Dependabot's weekly pull request
(`.github/dependabot.yml`) says when one of them has a new release: copy its SHA and version
here and run `make generate`.

Each SHA is the commit the version's tag points to in the action's own repository. Every pin
stays on the major version the workflow was written and linted against (actionlint knows these
majors' inputs); a new major is a reviewed change of the template, not a bump.

A repository can hold several actions in sub-directories (`actions/cache/restore`,
`actions/cache/save`): one pin per repository, and the template names the sub-directory
(`Pin.at`), so they all run the same commit. Dependabot bumps each `uses:` line of the
repository to the same release, one SHA and version to copy here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pin:
    action: str  # owner/name, as `uses:` spells it
    sha: str  # the full 40-hex commit
    version: str  # the tag it was taken from, written as a comment (and read by Dependabot)

    @property
    def uses(self) -> str:
        return f"{self.action}@{self.sha} # {self.version}"

    def at(self, path: str) -> str:
        """`uses:` for the action in directory `path` of the repository, at the same commit."""
        return f"{self.action}/{path}@{self.sha} # {self.version}"


_PINS = (
    Pin("actions/checkout", "11d5960a326750d5838078e36cf38b85af677262", "v4.4.0"),
    Pin("actions/setup-python", "a26af69be951a213d495a4c3e4e4022e16d87065", "v5.6.0"),
    # Posts the diff comment: first-party code holds the write token, not a third party's.
    Pin("actions/github-script", "f28e40c7f34bde8b3046d885e986cb6290c5673b", "v7.1.0"),
    Pin(
        "aws-actions/configure-aws-credentials",
        "7474bc4690e29a8392af63c5b98e7449536d5c3a",
        "v4.3.1",
    ),
    Pin("google-github-actions/auth", "c200f3691d83b41bf9bbd8638997a462592937ed", "v2.1.13"),
    Pin("pulumi/actions", "8582a9e8cc630786854029b4e09281acd6794b58", "v6.6.1"),
    # The drills workflow: each drill's report kept as an artifact; the Azure CLI signed in
    # with OIDC for a drill's checks on an Azure DR site (they run `az`).
    Pin("actions/upload-artifact", "ea165f8d65b6e75b540449e92b4886f43607fa02", "v4.6.2"),
    Pin("azure/login", "7184910d9eb2b1c5e48f7073824a90609bb9b6d6", "v2.3.1"),
    # The plan and diff jobs' plan cache, through its `restore` and `save` actions (`Pin.at`):
    # the save runs even after a plan that fails; the one-step `actions/cache` saves only after
    # a job that succeeded (its post step's `post-if: success()`).
    Pin("actions/cache", "0057852bfaa89a56745cba8c7296529d2fc39830", "v4.3.0"),
)
# owner/name -> its pin. The template looks actions up by name: a missing one is an error.
PINS: dict[str, Pin] = {pin.action: pin for pin in _PINS}
