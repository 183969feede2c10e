"""`python -m gpudr`: the CLI, as the `gpudr` script runs it (`gpudr.app.cli`)."""

from gpudr.app.cli import entry

entry()
