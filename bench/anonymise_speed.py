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
The check (the bench exits 1 when it fails): ours changes every reason that names a model and none of the
ordinary ones. The last line is one JSON object with the figures.
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


def main() -> int:
    rng = random.Random(0)
    reasons, naming = [], []
    for _ in range(100_000):
        named = rng.random() < 0.1
        author, template = rng.choice(NAMED) if named else (rng.choice(AUTHORS), rng.choice(CLEAN))
        reasons.append((template.format(n=rng.randint(10, 99999)), author))
        naming.append(named)
    ours = Anonymiser(RUN_NAMES)
    for author in AUTHORS:
        ours.scrub(reasons[0][0], author)  # forms gathered untimed; each text's pattern compiled in pass one
    baseline = re.compile(r"\b(?:" + "|".join(map(re.escape, vocabulary())) + r")\b", re.IGNORECASE)
    t_ours = timed(lambda r: ours.scrub(*r), reasons)
    t_base = timed(lambda r: baseline.sub("[redacted]", r[0]), reasons)
    changed = [ours.scrub(*r) != r[0] for r in reasons]
    named = sum(changed)
    missed = sum(n and not c for n, c in zip(naming, changed, strict=True))  # a name left in
    spoiled = sum(c and not n for n, c in zip(naming, changed, strict=True))  # an ordinary sentence changed
    m_ours, m_base = statistics.median(t_ours), statistics.median(t_base)
    print(f"ours      {len(reasons):,} reasons  median {m_ours:.3f} s  ({1e6 * m_ours / len(reasons):.2f} us each)")
    print(f"baseline  {len(reasons):,} reasons  median {m_base:.3f} s  ({1e6 * m_base / len(reasons):.2f} us each)")
    print(f"baseline / ours = {m_base / m_ours:.2f}x  (reasons changed by ours: {named:,})")
    ok = not missed and not spoiled
    print("OK: ours changes every reason that names a model and none of the others" if ok else
          f"FAILED: {missed:,} reasons that name a model left unchanged, {spoiled:,} others changed")
    print(json.dumps({"reasons": len(reasons), "named_share": 0.1, "passes": 3, "ours_s_median": round(m_ours, 4),
                      "baseline_s_median": round(m_base, 4), "ratio_baseline_over_ours": round(m_base / m_ours, 3),
                      "reasons_changed": named, "named_left": missed, "ordinary_changed": spoiled, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
