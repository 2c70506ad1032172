"""``council loadtest``: the request and token rate an OpenAI-compatible endpoint really sustains; its options and
its run live with the load test itself (:mod:`council.tools.loadtest`)."""

from __future__ import annotations

import argparse

from council.tools import loadtest


def add_parser(sub: argparse._SubParsersAction) -> None:
    loadtest.add_parser(sub)


run = loadtest.run
