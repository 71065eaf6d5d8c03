"""Benchmarks: ``python -m tests.perf.run`` (``make bench``); see docs/BENCHMARKS.md."""
