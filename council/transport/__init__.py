"""Calls to providers: HTTP client, circuit breaker, quota ledger and limiter, micro-batching, judges."""
