"""gpudr's exit codes (see gpudr/app/cli.py): one place, since `gpudr diff` reads them back from the
`gpudr plan` processes it runs."""

from __future__ import annotations

EXIT_NOT_MET = 1
EXIT_BAD_INPUT = 2
EXIT_PROGRAM = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a Ctrl-C
