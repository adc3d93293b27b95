"""Example apps instrumented with citeline (used by the demo, the tests and the benchmarks)."""
