"""gpudr's benchmarks: how the cost of `gpudr plan` grows with the size of what it protects.

`make bench` (or `python -m bench.run`) generates synthetic portfolios of plans, measures them
and rewrites docs/benchmarks.md. Not part of `make test`.
"""
