"""The smallest council with every part of the protocol, for tests whose point is not the roster's size."""

from __future__ import annotations

from council.protocol.config import default_roster

# The default council's seats of anthropic, google and openai, and its reserve: an odd panel on every row, and
# self-exclusion filling the seat of a row of those vendors' models from the reserve. With Ray each seat is an
# actor process (about a second of a core to start, measured by a process poller beside the tests), so a Ray run
# with this roster starts two fewer than the default council of five and a reserve. As dicts: a JSON config
# file's roster, or CouncilConfig(roster=...).
SMALL_ROSTER = [seat.model_dump(mode="json") for seat in default_roster()
                if seat.reserve or seat.vendor in ("anthropic", "google", "openai")]
