"""Scrubbing peers' reasons: the project's Anonymiser against a plain baseline, on the same reasons.

Every round-two prompt carries its peers' round-one reasons, each scrubbed of vendor and model names, so
scrubbing runs once per peer reason: about 4 x 2 = 8 times per row of a five-member panel.

    ours      council.protocol.anonymise.Anonymiser(run names).scrub(reason, author_vendor), as round two
              scrubs each peer's reason: with the vendor of the member who wrote it
    baseline  one compiled ``re`` alternation of the same vocabulary (every name form in names.json and the
              run's names, longest first, as whole words, case-insensitive; the author-only product words
              left out): the simplest scrubber that could be written, without version tails, possessives,
              split names, the word rules or the author's own words

Reasons: 100,000 seeded sentences of judge-reason shape, each written by a seeded member of the default
roster; 10% name a model (a share above what real judges write), some by a product word or a split name.
Both sides scrub the same list, three passes each, medians reported.

Run from the repository root:  python bench/anonymise_speed.py      (about 10 s)
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import json
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from council.core.vendors import DEFAULT_ROSTER  # noqa: E402
from council.protocol.anonymise import Anonymiser, names_data  # noqa: E402

RUN_NAMES = [*DEFAULT_ROSTER, *DEFAULT_ROSTER.values(), "openai/gpt-4.1-mini", "qwen/qwen3-235b-a22b",
             "meta-llama/llama-3.3-70b-instruct", "meta"]
CLEAN = ["The response gives {n}, which matches the reference answer exactly.",
         "The answer {n} is wrong: 17 x 23 = 391, not {n}.",
         "It states it cannot know, which is the correct abstention for this item.",
         "The response rejects the false premise stated in the reference."]
NAMED = [("anthropic", "As Claude 3.5 Sonnet, I find the answer {n} correct."),
         ("openai", "I agree with GPT-4o that {n} is the product."),
         ("google", "Speaking as Gemini-2.5-Pro, the certificate {n} fails."),
         ("alibaba", "Qwen3-235B-A22B here: {n} is right."),
         ("anthropic", "As Sonnet, I find the answer {n} correct."), ("deepseek", "Deep Seek here: {n} is right.")]
AUTHORS = list(DEFAULT_ROSTER)


def vocabulary() -> list[str]:
    words: set[str] = set(RUN_NAMES)
    def walk(node: object) -> None:
        if isinstance(node, str):
            words.add(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    data = names_data()
    walk(data["words"])
    walk({v: {f: forms for f, forms in spec.items() if f != "own_words"} for v, spec in data["vendors"].items()})
    return sorted((w for w in words if len(w) >= 2), key=len, reverse=True)


def timed(fn, reasons: list[str], passes: int = 3) -> list[float]:
    out = []
    for _ in range(passes):
        start = time.perf_counter()
        for reason in reasons:
            fn(reason)
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    rng = random.Random(0)
    reasons = []
    for _ in range(100_000):
        author, template = rng.choice(NAMED) if rng.random() < 0.1 else (rng.choice(AUTHORS), rng.choice(CLEAN))
        reasons.append((template.format(n=rng.randint(10, 99999)), author))
    ours = Anonymiser(RUN_NAMES)
    for author in AUTHORS:
        ours.scrub(reasons[0][0], author)  # patterns compiled before timing
    baseline = re.compile(r"\b(?:" + "|".join(map(re.escape, vocabulary())) + r")\b", re.IGNORECASE)
    t_ours = timed(lambda r: ours.scrub(*r), reasons)
    t_base = timed(lambda r: baseline.sub("[redacted]", r[0]), reasons)
    named = sum(ours.scrub(*r) != r[0] for r in reasons)
    m_ours, m_base = statistics.median(t_ours), statistics.median(t_base)
    print(f"ours      {len(reasons):,} reasons  median {m_ours:.3f} s  ({1e6 * m_ours / len(reasons):.2f} us each)")
    print(f"baseline  {len(reasons):,} reasons  median {m_base:.3f} s  ({1e6 * m_base / len(reasons):.2f} us each)")
    print(f"baseline / ours = {m_base / m_ours:.2f}x  (reasons changed by ours: {named:,})")
    print(json.dumps({"reasons": len(reasons), "named_share": 0.1, "passes": 3, "ours_s_median": round(m_ours, 4),
                      "baseline_s_median": round(m_base, 4), "ratio_baseline_over_ours": round(m_base / m_ours, 3),
                      "reasons_changed": named}))


if __name__ == "__main__":
    main()
