"""Benchmarks: each module in BENCHMARKS compares ours against a baseline measured in the same
run."""
