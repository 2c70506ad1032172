"""Flat tables of a scored run for data tools: ``scores.csv`` (and ``scores.parquet``) and ``leaderboard.csv``.

Each is written from the run folder alone (``verdicts.jsonl``, ``items.jsonl``, ``manifest.json``,
``summary.json``) after every scoring, so ``council run`` and ``council rescore`` both leave them beside the
JSON. Any of them opens in one line::

    pandas.read_csv("runs/<id>/scores.csv")            # or pandas.read_parquet("runs/<id>/scores.parquet")
    duckdb.sql("select * from 'runs/<id>/scores.csv'")  # or 'runs/<id>/scores.parquet'

``scores.csv``: one header line, then one line per row of ``verdicts.jsonl``, in its order (RFC 4180: comma
separated, fields holding a comma, a quote or a line break are quoted, ``"`` doubled; UTF-8; ``\\n`` line ends).
An empty field is a missing value (``None`` in the JSON); booleans are ``true`` / ``false``. Columns, in order:

=======================  ===============================================================================
``row_id``               the row (``<item>::<model>`` unless the responses file named it)
``item_id``              the bank item it answers
``probe``                the item's probe
``model``, ``vendor``    the model under test and its vendor
``graded``               ``true`` when the whole panel voted in both rounds (only graded rows are scored)
``consensus``            ``correct`` / ``incorrect`` (round two); empty for a graded-scale row or a row not graded
``consensus_round1``     the same rule applied to the round-one votes
``council_score``        0-100 for every graded row: 100 / 0 for a correct / incorrect consensus, ``score_normalised``
                         for a graded-scale row; empty when not graded
``scale``                the graded item's scale name; empty for a correct / incorrect item
``score_normalised``     a graded-scale row's ``100 * sum_d w_d * level_d / high``
``<scale>.<dim>``        one column per dimension of each scale in the run (scales by name, dimensions in the
                         scale's order): the council's level (an integer ``0..high``); empty on other rows and
                         where no level was valid (``omitted:<dim>``, counted 0 in ``score_normalised``)
``gold_verdict``         the known truth, where the responses file gave one
``confidence``           the row's stated P(own answer correct), 0-1; empty when not stated
``abstained``            ``true`` when the answer was an abstention
``deliberated``          ``false`` when ``--deliberate disputed`` skipped the row's round two (its round one was
                         unanimous): its consensus is round one's, its round-two votes are round one's
``deliberation_audit``   ``true`` on a skipped row whose round two was asked for the audit (never counted)
``flags``                the row's flags joined with ``;`` (``tie``, ``no_quorum``, ``missing_votes``,
                         ``not_graded``, ``refused``, ``split:<dim>``, ``omitted:<dim>``...)
``members``              the panel that sat, joined with ``;`` (roster order)
``reserves``             those of ``members`` who sat in as reserves, joined with ``;``
``<member>.round1``      per roster seat (roster order), its round-one vote: ``correct`` / ``incorrect`` on a
``<member>.round2``      correct / incorrect row; on a graded-scale row its levels as ``dim=level`` joined with
                         ``;`` in the scale's order (a dimension it gave no valid level is left out). Empty
                         when the seat was not on the row's panel (see ``members``) or gave no valid vote.
=======================  ===============================================================================

In SQL a column name holding a dot is quoted: ``select "openai.round1" from 'scores.csv'``.

``scores.parquet`` (written when pyarrow is importable; the ``parquet`` extra) has the same columns and rows,
typed: strings, ``graded``, ``abstained``, ``deliberated`` and ``deliberation_audit`` boolean, ``council_score``,
``score_normalised`` and ``confidence`` float64, the ``<scale>.<dim>`` levels int64, nulls where the CSV field is empty.

``leaderboard.csv``: one line per model, from ``summary.json``, by model id. Columns: ``model``, ``vendor``,
``rows`` (graded correct / incorrect rows), ``not_graded``, ``score`` (share of those rows the council judged
correct, 0-1), ``ci_low``, ``ci_high`` (its bootstrap interval over items, ``summary.uncertainty.scores``),
``score_round1``, ``tie_rate``, ``true_score`` (share correct by ``gold_verdict`` among the model's rows with
gold, empty when it has none), then
per scale ``<scale>.rows``, ``<scale>.score``, ``<scale>.ci_low``, ``<scale>.ci_high`` (0-100, the scale's
bootstrap interval).

Both are streamed (the verdicts are read one line at a time and written as they come, parquet in row groups
of :data:`PARQUET_ROWS`), so memory does not grow with the run. Files are written under a temporary name and
then renamed: a reader never sees half a table.
"""

from __future__ import annotations

import csv
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from council.store.runfolder import ITEMS, MANIFEST, SUMMARY, VERDICTS, iter_json

SCORES_CSV = "scores.csv"
SCORES_PARQUET = "scores.parquet"
LEADERBOARD_CSV = "leaderboard.csv"
PARQUET_ROWS = 4096  # rows per parquet row group (held in memory as Arrow columns)
CHUNK_ROWS = 512  # rows held as Python values at once, on their way to Arrow columns

# (column, parquet type) of the fixed columns: the scales' columns come after _HEAD, the members' after _MIDDLE.
_HEAD = [("row_id", "string"), ("item_id", "string"), ("probe", "string"), ("model", "string"),
         ("vendor", "string"), ("graded", "bool"), ("consensus", "string"), ("consensus_round1", "string"),
         ("council_score", "float64"), ("scale", "string"), ("score_normalised", "float64")]
_MIDDLE = [("gold_verdict", "string"), ("confidence", "float64"), ("abstained", "bool"), ("deliberated", "bool"),
           ("deliberation_audit", "bool"), ("flags", "string"), ("members", "string"), ("reserves", "string")]
_LEADERBOARD = ["model", "vendor", "rows", "not_graded", "score", "ci_low", "ci_high", "score_round1", "tie_rate",
                "true_score"]


def write_scores(run_dir: Path) -> list[Path]:
    """Write ``scores.csv``, ``scores.parquet`` (when pyarrow is importable) and ``leaderboard.csv`` into
    ``run_dir`` from its scored files; return the paths written."""
    run_dir = Path(run_dir)
    members = [m["vendor"] for m in orjson.loads((run_dir / MANIFEST).read_bytes())["roster"]]
    scales = _scales(run_dir / ITEMS)
    columns = score_columns(scales, members)
    written = [_write_csv(run_dir / SCORES_CSV, [c for c, _ in columns], _records(run_dir, scales, members))]
    if importlib.util.find_spec("pyarrow") is not None:
        written.append(_write_parquet(run_dir / SCORES_PARQUET, columns, _records(run_dir, scales, members)))
    summary = orjson.loads((run_dir / SUMMARY).read_bytes())
    header, lines = leaderboard(summary)
    written.append(_write_csv(run_dir / LEADERBOARD_CSV, header, iter(lines)))
    return written


def score_columns(scales: dict[str, list[str]], members: list[str]) -> list[tuple[str, str]]:
    """(name, parquet type) of every column of ``scores.csv``, in order, for these scales (name -> dimensions)
    and roster seats."""
    dims = [(f"{name}.{d}", "int64") for name in sorted(scales) for d in scales[name]]
    votes = [(f"{m}.round{r}", "string") for m in members for r in (1, 2)]
    return [*_HEAD, *dims, *_MIDDLE, *votes]


def _scales(items: Path) -> dict[str, list[str]]:
    """Scale name -> its dimensions in order, for every scale an item of the run is graded on."""
    out: dict[str, list[str]] = {}
    for _, item in iter_json(items, missing_ok=True):
        scale = item.get("scale")
        if scale and scale["name"] not in out:
            out[scale["name"]] = [d["name"] for d in scale["dimensions"]]
    return out


def _records(run_dir: Path, scales: dict[str, list[str]], members: list[str]) -> Iterator[list[Any]]:
    """One list of values per verdict, in :func:`score_columns` order (None: missing)."""
    dim_columns = [(name, d) for name in sorted(scales) for d in scales[name]]
    for _, v in iter_json(run_dir / VERDICTS):
        scale = v.get("scale")
        council = v.get("score") or {}
        order = scales.get(scale, [])

        def vote(member: str, r: int) -> str | None:
            if scale is None:
                return v[f"votes_round{r}"].get(member)
            levels = v.get(f"scores_round{r}", {}).get(member)
            if not levels:
                return None
            return ";".join(f"{d}={levels[d]}" for d in [*order, *sorted(set(levels) - set(order))] if d in levels)

        yield [
            v["row_id"], v["item_id"], v.get("probe", ""), v["model"], v["vendor"], v["graded"], v["consensus"],
            v["consensus_round1"], v.get("council_score"), scale, v.get("score_normalised"),
            *(council.get(d) if name == scale else None for name, d in dim_columns),
            v.get("gold_verdict"), v.get("confidence"), v.get("abstained", False), v.get("deliberated", True),
            v.get("deliberation_audit", False), ";".join(v["flags"]) or None,
            ";".join(v["members"]) or None, ";".join(v.get("reserves", [])) or None,
            *(vote(m, r) for m in members for r in (1, 2)),
        ]


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _write_csv(path: Path, header: list[str], records: Iterator[list[Any]]) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as handle:
        out = csv.writer(handle, lineterminator="\n")
        out.writerow(header)
        for record in records:
            out.writerow([_cell(x) for x in record])
    os.replace(tmp, path)
    return path


def _write_parquet(path: Path, columns: list[tuple[str, str]], records: Iterator[list[Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"string": pa.string(), "bool": pa.bool_(), "float64": pa.float64(), "int64": pa.int64()}
    schema = pa.schema([(name, types[kind]) for name, kind in columns])
    tmp = path.with_name(path.name + ".tmp")

    def chunk(records: list[list[Any]]) -> Any:  # a few rows at a time, so that no row group is held as objects
        return pa.RecordBatch.from_arrays(
            [_arrow_column(pa, types[kind], kind, [r[k] for r in records]) for k, (_, kind) in enumerate(columns)],
            schema=schema)

    with pq.ParquetWriter(tmp, schema) as writer:
        group: list[Any] = []  # Arrow record batches of the row group being gathered
        pending: list[list[Any]] = []
        written = gathered = 0
        for record in records:
            pending.append(record)
            if len(pending) >= CHUNK_ROWS:
                group.append(chunk(pending))
                gathered, pending = gathered + len(pending), []
                if gathered >= PARQUET_ROWS:
                    writer.write_table(pa.Table.from_batches(group, schema=schema).combine_chunks())
                    written, gathered, group = written + gathered, 0, []
        if pending or not (written or group):
            group.append(chunk(pending))  # an empty run still gets its (typed) columns
        if group:
            writer.write_table(pa.Table.from_batches(group, schema=schema).combine_chunks())
    os.replace(tmp, path)
    return path


def _arrow_column(pa: Any, arrow_type: Any, kind: str, values: list[Any]) -> Any:
    """``values`` (None for a missing value) as an Arrow array of ``arrow_type``, built from its buffers: pyarrow's
    own converter (``pa.array``) imports pandas whenever it is installed, about 0.4 s of every scoring."""
    import numpy as np

    n = len(values)
    validity = pa.py_buffer(np.packbits(np.fromiter((v is not None for v in values), bool, n), bitorder="little"))
    if kind == "string":
        encoded = [b"" if v is None else v.encode("utf-8") for v in values]
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(np.fromiter(map(len, encoded), np.int64, n), out=offsets[1:])
        buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    elif kind == "bool":
        buffers = [validity, pa.py_buffer(np.packbits(np.fromiter((bool(v) for v in values), bool, n),
                                                       bitorder="little"))]
    else:
        dtype = np.float64 if kind == "float64" else np.int64
        buffers = [validity, pa.py_buffer(np.fromiter((0 if v is None else v for v in values), dtype, n))]
    return pa.Array.from_buffers(arrow_type, n, buffers)


def leaderboard(summary: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """The header and lines of ``leaderboard.csv`` (one per model, by model id) from a run's summary."""
    models = summary.get("models", {})
    intervals = summary.get("uncertainty", {}).get("scores", {})
    scales = summary.get("scales", {})
    header = [*_LEADERBOARD, *(f"{s}.{k}" for s in sorted(scales) for k in ("rows", "score", "ci_low", "ci_high"))]
    lines = []
    for model in sorted(models):
        m, ci = models[model], intervals.get(model) or {}
        line = [model, m.get("vendor"), m.get("rows"), m.get("not_graded"), m.get("score"), ci.get("ci_low"),
                ci.get("ci_high"), m.get("score_round1"), m.get("tie_rate"), m.get("true_score")]
        for s in sorted(scales):
            sm = (scales[s].get("models") or {}).get(model) or {}
            line += [sm.get("rows"), sm.get("score"), sm.get("ci_low"), sm.get("ci_high")]
        lines.append(line)
    return header, lines
