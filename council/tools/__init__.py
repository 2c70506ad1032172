"""Operator tools: cost estimates and load tests."""
