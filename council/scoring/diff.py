"""``council diff RUN_A RUN_B``: are two runs comparable, and what changed between them."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from council.core.schema import RowVerdict
from council.store import archive
from council.store.runfolder import MANIFEST, ROWS, SUMMARY, VERDICTS, RunFolder, read_jsonl

# What must agree for two runs' numbers to be compared: same prompts, rules, data and judges.
COMPARABLE_FIELDS = ("judge_prompt_version", "prompt_hashes", "methodology_version", "dataset_fingerprint",
                     "roster", "quorum", "self_exclusion")


def diff_runs(a: RunFolder, b: RunFolder) -> dict[str, Any]:
    ma, mb = a.read_json(MANIFEST), b.read_json(MANIFEST)
    mismatches = [
        {"field": f, "a": ma.get(f), "b": mb.get(f)} for f in COMPARABLE_FIELDS if ma.get(f) != mb.get(f)
    ]
    sa, sb = a.read_json(SUMMARY), b.read_json(SUMMARY)
    for name, s in (("a", sa), ("b", sb)):  # a partial run's scores cover only the rows it graded
        if not s.get("complete", False):
            state = s.get("state", {})
            mismatches.append({"field": "complete", "a": sa.get("complete", False), "b": sb.get("complete", False),
                               "why": f"run {name} is partial ({state.get('state', 'unknown')}"
                                      f"{', ' + state['reason'] if state.get('reason') else ''}; "
                                      f"{s.get('not_graded_rows', '?')} rows not graded)"})
            break
    models = {}
    for model in sorted(set(sa["models"]) | set(sb["models"])):
        x, y = sa["models"].get(model, {}).get("score"), sb["models"].get(model, {}).get("score")
        models[model] = {"a": x, "b": y, "delta": None if x is None or y is None else round(y - x, 6)}
    va = {v.row_id: v for v in read_jsonl(a.path / VERDICTS, RowVerdict)}
    vb = {v.row_id: v for v in read_jsonl(b.path / VERDICTS, RowVerdict)}
    rows = [
        {"row_id": rid, "a": va[rid].consensus if rid in va else None, "b": vb[rid].consensus if rid in vb else None}
        for rid in sorted(set(va) | set(vb))
        if rid not in va or rid not in vb or va[rid].consensus != vb[rid].consensus
    ]
    # Graded on other answers: the grading may still be comparable, but a changed verdict may be a changed answer.
    fa, fb = ma.get("responses_fingerprint") or "", mb.get("responses_fingerprint") or ""
    responses_changed = bool(fa and fb and fa != fb)
    if responses_changed:
        ha, hb = _response_hashes(a), _response_hashes(b)
        for row in rows:
            rid = row["row_id"]
            row["response_changed"] = rid in ha and rid in hb and ha[rid] != hb[rid]
    return {"a": a.path.name, "b": b.path.name, "comparable": not mismatches, "mismatches": mismatches,
            "responses_changed": responses_changed,
            "responses_changed_rows": sum(r.get("response_changed", False) for r in rows),
            "models": models, "changed_rows": rows, "rows_compared": len(set(va) & set(vb))}


def _response_hashes(folder: RunFolder) -> dict[str, bytes]:
    """Each row's response text, as a short digest, from the run's own copy of its rows (none when it has none)."""
    out: dict[str, bytes] = {}
    try:
        for line in archive.iter_lines(folder.path / ROWS):  # streamed: a regrade's rows need not fit in memory
            if line.strip():
                row = orjson.loads(line)
                out[row["row_id"]] = hashlib.blake2b(row["response"].encode(), digest_size=16).digest()
    except FileNotFoundError:
        return {}
    return out
