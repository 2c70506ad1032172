"""``council loadtest``: the request and token rate an OpenAI-compatible endpoint really sustains; its options and
its run live with the load test itself (:mod:`council.tools.loadtest`)."""

from __future__ import annotations

import argparse

from council.console.help import add_example
from council.tools import loadtest


def add_parser(sub: argparse._SubParsersAction) -> None:
    loadtest.add_parser(sub)
    add_example(sub.choices["loadtest"], "council loadtest --model openai/gpt-5 --steps 4 --step-s 5")


run = loadtest.run
