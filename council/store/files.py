"""The names of a run folder's files (``runs/<run_id>/``, :mod:`council.store.runfolder`)."""

MANIFEST = "manifest.json"
ROWS = "rows.jsonl"
ITEMS = "items.jsonl"
ROUND_FILES = {1: "round1.jsonl", 2: "round2.jsonl"}
SHADOW = "shadow.jsonl"
AUDIT = "audit.jsonl"
REFUSED = "refused.jsonl"  # rows refused before any call (too large for the limits or a judge's context)
STATE = "state.json"  # running (or crashed), finished, or stopped (budget, interrupt, terminate, error)
ELICITED = "elicited.jsonl"
VERDICTS = "verdicts.jsonl"
SUMMARY = "summary.json"
LOG = "log.jsonl"
ARCHIVES = (*ROUND_FILES.values(), SHADOW, AUDIT, ELICITED)  # append-only record files, compressed with the folder
