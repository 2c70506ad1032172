"""What a run folder holds, described: each file of ``runs/<run_id>/`` and each top-level field of
``summary.json``. The docs' reference of the run folder is rendered from these tables at build time, and
``tests/council/test_run_fields.py`` grades the sample and fails when ``summary.json`` or the folder has an entry
these tables lack, or lacks one they say every run has.

An entry is ``(what it holds, when it is there)``; ``when`` is ``None`` for an entry every finished run has.
"""

from __future__ import annotations

Described = tuple[str, str | None]

FILES: dict[str, Described] = {
    "manifest.json": ("roster, protocol settings, prompt version and hashes, dataset fingerprint, the prices used "
                      "and the versions of everything that decides a verdict", None),
    "rows.jsonl": ("the rows graded, as validated", None),
    "items.jsonl": ("the bank items the rows answer, as validated", None),
    "round1.jsonl": ("one record per round-one vote: verdict, reason, raw output, usage, cost, latency, attempts, "
                     "parse status, finish reason, prompt hash and `request_key`, archived before it is read", None),
    "round2.jsonl": ("one record per round-two vote, as round one's (round two sent on disputed rows and the "
                     "deliberation audit's)", None),
    "verdicts.jsonl": ("one line per row: members, votes of both rounds, consensus of both rounds, flags, "
                       "`deliberated`, `deliberation_audit`, `council_score`", None),
    "summary.json": ("every figure of the run, field by field below", None),
    "state.json": ("`running` (or crashed), `finished`, or `stopped` with its reason: `budget`, `interrupt`, "
                   "`terminate`, `error`", None),
    "quota_stats.json": ("per vendor: requests sent (every attempt), tokens used, 429s, rate cuts, the configured, "
                         "announced and in-force limits (`null`: unlimited) and a timeline", None),
    "log.jsonl": ("structured JSON logs (keys, bearer tokens and key-shaped strings redacted)", None),
    "scores.csv": ("one line per row of `verdicts.jsonl`, as a flat table for data tools", None),
    "leaderboard.csv": ("one line per model: score, interval, round-one score, tie rate, true score", None),
    "scores.parquet": ("`scores.csv`'s columns, typed", "pyarrow is installed (the `parquet` extra)"),
    "report.html": ("one self-contained page: leaderboard with intervals, grader-rule sensitivity, votes moved, "
                    "agreement, herding, calibration, quota use, diagnostics, provenance",
                    "unless `--no-report` or `COUNCIL_NO_REPORT=1`; `council report RUN` writes it again"),
    ".lock": ("the writer's pid, host and command: a folder has one writer, and the lock goes with its process",
              None),
    "provider_stats.json": ("the embedded provider's request, 429 and billing counts", "the run is simulated"),
    "elicited.jsonl": ("the raw answers of the models under test", "`--models`"),
    "shadow.jsonl": ("the excluded own-vendor judge's round-one votes, never counted", "`--shadow-self`"),
    "audit.jsonl": ("batched votes asked again alone, never counted", "`--batch-audit`"),
    "refused.jsonl": ("rows refused before any call, with the reason", "some row was refused"),
    "batches.jsonl": ("every batch's requests and the votes each asks for, its provider id, end and result files",
                      "`--transport batch`"),
    "batches.json": ("the last poll of each batch: status, counts, expected end", "`--transport batch`"),
    "batches/": ("batches being uploaded and results being read", "`--transport batch`"),
    "shards/": ("each worker's own batch journal", "`--shards` with `--transport batch`"),
    "crossjudge/": ("`council crossjudge` results, one folder per grader", "`council crossjudge`"),
    "inspect_samples.jsonl": ("the inspect samples the run graded, by uuid", "the run is an inspect scorer's"),
}
"""Each file or folder of a run folder."""

SUMMARY: dict[str, Described] = {
    "run_id": ("the run's id (its folder's name)", None),
    "simulated": ("true when the embedded provider graded: no real model was asked", None),
    "quorum": ("valid round-two votes a consensus needs", None),
    "members": ("the roster's vendors, in seat order", None),
    "reserves": ("the vendors that sit only where self-exclusion emptied a seat", None),
    "rows_total": ("rows in the run", None),
    "rows": ("graded rows scored correct / incorrect (graded-scale rows are scored under `scales`)", None),
    "not_graded_rows": ("rows whose panel did not vote in full: counted, never scored as incorrect", None),
    "refused_rows": ("rows refused before any call (`refused.jsonl`)", None),
    "state": ("`state.json` as scoring read it: `state`, `reason`, `detail`", None),
    "complete": ("true when the run finished and every row was graded; a partial run's leaderboard is PARTIAL",
                 None),
    "panels": ("rows by panel size, even-panel rows, rows where a reserve sat, whether panel sizes differ", None),
    "deliberation": ("`mode`, rows deliberated and skipped, the audit's share, rows and result: verdicts round two "
                     "would have changed, a 95% Wilson interval, `candidates`, `stop_at`, `stopped_early`", None),
    "models": ("per model under test: vendor, rows, not graded, council score, round-one score, tie rate, true "
               "score where gold is known", None),
    "flags": ("counts of ties, no-quorum rows (each round) and missing votes", None),
    "diagnostics": ("truncated, empty and unparseable outputs, repair re-asks, errors, no-quorum rows, their "
                    "rates, per-member error and parse-status rates, self-identifying responses, and `warnings`",
                    None),
    "deliberation_impact": ("share of member votes that changed between rounds, on the rows that deliberated",
                            None),
    "agreement_lift": ("mean agreement in round two minus round one, on the rows that deliberated", None),
    "consensus_flip_rate": ("share of deliberated rows whose consensus changed in round two", None),
    "unanimity_lift": ("unanimous rows in round two minus round one, as a share of deliberated rows", None),
    "member_flips": ("per member: votes moved to correct, to incorrect, and valid in both rounds", None),
    "ties_round1": ("graded rows tied in round one", None),
    "ties_round2": ("graded rows tied in round two (a tie resolves to incorrect)", None),
    "no_quorum_round1": ("graded rows without a quorum of valid votes in round one", None),
    "no_quorum_round2": ("graded rows without a quorum of valid votes in round two", None),
    "agreement": ("per round: pairwise agreement and Cohen's kappa per member pair, Fleiss' kappa, Krippendorff's "
                  "alpha", None),
    "herding": ("flips conforming to or dissenting from the peers' round-one majority, conformity share per "
                "member, the part of `agreement_lift` from weak majorities", None),
    "grader_rules": ("scores under other grading rules (`round1`, `single:<vendor>`, `without:<vendor>`, "
                     "`all_concur`), each rule's top model, Kendall's tau and largest change against the council",
                     None),
    "uncertainty": ("seeded percentile bootstrap over items, paired across models: score intervals overall and per "
                    "probe, P(A outranks B) for adjacent models, intervals on `deliberation_impact` and "
                    "`agreement_lift`", None),
    "honesty": ("per model: the abstention-aware `composite` (with its `weights`), `paraphrase_consistency`, "
                "`compute_signature`", None),
    "anonymisation": ("per member: its reasons shown to peers and the names cut from them", None),
    "cost_usd": ("what the run cost (or would have, on the real providers), elicitation included", None),
    "cost_by_round_usd": ("judge cost per round", None),
    "cost_by_vendor_usd": ("judge cost per judge vendor", None),
    "cost_elicitation_usd": ("what asking the models under test cost", None),
    "judge_tokens": ("per judge: votes paid, prompt, completion and reasoning tokens, reasoning tokens and cost per "
                     "vote, the reasoning's cost and share of the judge's cost", None),
    "accuracy_vs_gold": ("council and each member against the known truth, with bootstrap intervals; "
                         "`council_minus_member` on exactly the rows each member voted, paired over items, and "
                         "`council_minus_best_member`", "rows carry `gold_verdict`"),
    "reliability_vs_truth": ("each member's and the consensus's accuracy and kappa against the truth, error "
                             "correlations, effective number of independent judges", "rows carry `gold_verdict`"),
    "calibration": ("Brier score, ECE over 10 bins and the selective score per model", "responses state a "
                    "confidence"),
    "batch_audit": ("batched-vs-solo agreement per member, with a Wilson interval", "`--batch-audit`"),
    "self_preference": ("per vendor: how much more lenient its excluded judge is on its own vendor's rows, with a "
                        "bootstrap interval, and `leniency_gap`", "`--shadow-self`"),
    "elicitation": ("per model under test: answers asked, graded, truncated, empty, abstained, tokens, speed and "
                    "cost", "`--models`"),
    "scales": ("per graded scale: each model's score with intervals overall and per dimension, Krippendorff's "
               "alpha, ICC, weighted kappa, deliberation impact, agreement lift, leniency", "the bank has graded "
               "scales"),
    "scaled_rows": ("rows graded on a scale", "the bank has graded scales"),
}
"""Each top-level field of ``summary.json``."""
