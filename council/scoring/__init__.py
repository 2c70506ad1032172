"""Scores and summaries from a run's archive, and comparisons between runs."""
