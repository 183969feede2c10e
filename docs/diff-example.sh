#!/usr/bin/env bash
# Regenerates docs/diff-example.md: what `gpudr diff` posts on a pull request that raises the
# example's checkpoint size from 2TB to 6TB. A clone of this repository's HEAD gets one more
# commit with that change, and `gpudr diff --base HEAD~1` runs in it, exactly as CI runs it.
#   make diff-example        (or: bash docs/diff-example.sh, from the repository root)
set -euo pipefail
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone --quiet "$root" "$tmp/repo"
cd "$tmp/repo"
sed -i 's/^    size: 2TB /    size: 6TB /' examples/aws-two-region.yaml
git -c user.name="gpudr example" -c user.email="example@example.invalid" \
    commit --quiet -am "Checkpoints grow from 2TB to 6TB"
PYTHONPATH="$tmp/repo" "$root/.venv/bin/python" -m gpudr diff --base HEAD~1 \
    examples/aws-two-region.yaml -o "$root/docs/diff-example.md"
echo "wrote docs/diff-example.md ($(wc -c < "$root/docs/diff-example.md") characters)"
