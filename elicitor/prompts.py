"""The elicitation contract: what the models under test are asked, and the exact reply format.

Predict-then-answer: the model first states the probability that its answer is correct, then answers,
or abstains. The system prompt is versioned and hashed like the judge prompts, so a run records exactly
which contract its answers were given under. ``elicitor.parsing.parse_elicited`` reads the replies.
"""

from __future__ import annotations

import hashlib

ELICIT_VERSION = "elicit-v1"

ABSTAIN = "ABSTAIN"
"""The answer that means "I do not answer"."""

ELICIT_SYSTEM = (
    "You will be asked a question. Before answering, estimate how likely your answer is to be correct.\n"
    "Reply in exactly this format:\n"
    "Confidence: <number from 0 to 1: the probability that your answer is correct>\n"
    "Answer: <your answer>\n"
    f"If you cannot or should not answer, reply with `Answer: {ABSTAIN}` as the answer line.\n"
    "Write nothing before the Confidence line."
)

ELICIT_HASH = hashlib.sha256((ELICIT_VERSION + ELICIT_SYSTEM).encode()).hexdigest()[:16]


def elicit_messages(item_prompt: str) -> list[dict[str, str]]:
    """The chat messages that ask a model under test one item: the system contract, then the item's prompt."""
    return [{"role": "system", "content": ELICIT_SYSTEM}, {"role": "user", "content": item_prompt.strip()}]
