"""The smallest council with every part of the protocol, for tests whose point is not the roster's size."""

from __future__ import annotations

from council.core.vendors import DEFAULT_RESERVES, DEFAULT_ROSTER

# Three regular seats and the reserve: an odd panel on every row, and self-exclusion filling the seat of a row of
# anthropic's, google's or openai's models from the reserve. With Ray each seat is an actor process (about a
# second of a core to start, measured by a process poller beside the tests), so a Ray run with this roster starts
# two fewer than the default council of five and a reserve.
SMALL_ROSTER = [
    *({"vendor": v, "judge_model": DEFAULT_ROSTER[v]} for v in ("anthropic", "google", "openai")),
    {"vendor": "mistral", "judge_model": DEFAULT_RESERVES["mistral"], "reserve": True},
]
