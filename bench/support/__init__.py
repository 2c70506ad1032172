"""What the benchmarks share and run beside them: helpers, not benchmarks (none prints figures of its own)."""
