"""DuckDB and polars baselines for ``bench/aggregate_scale.py``: the same metrics from the same long arrays
(``row`` int64, ``member`` int8, ``round`` int8, ``vote`` int8: -1 missing, 0 incorrect, 1 correct), written
the way an analyst would with each tool, returning the dict ``compare`` checks against ours.

Each side has a conversion (timed inside every pass, like the others'): DuckDB registers the arrays as a
view of an in-memory connection (no copy), polars builds a DataFrame from them. Both run with their default
thread pools (every core the machine has). A package that is not installed raises ImportError at the
conversion; the benchmark reports that side as skipped.
"""

from __future__ import annotations

import numpy as np

CORRECT, INCORRECT = 1, 0


def _pairs(members: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(members) for j in range(i + 1, members)]


def _finish(rows: int, members: int, quorum: int, y: np.ndarray, n: np.ndarray, per_row: tuple[int, int],
            flips: dict[str, np.ndarray], pairwise: np.ndarray) -> dict:
    """The metric dict from per-row tallies ``y``/``n`` (rows, 2) and the per-row / per-member counts."""
    verdict = (y > n - y) & (n >= quorum)
    tie = (n >= quorum) & (y == n - y)
    both = (n[:, 0] > 0) & (n[:, 1] > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        agr = np.maximum(y, n - y) / n
    unanimous = (y == n) | (y == 0)
    changed_rows, eligible_rows = per_row
    return {
        "verdict": verdict.astype(np.int8),
        "ties": tie.sum(axis=0),
        "no_quorum": (n < quorum).sum(axis=0),
        "deliberation_impact": float(changed_rows / eligible_rows),
        "agreement_lift": float(agr[both, 1].mean() - agr[both, 0].mean()),
        "consensus_flip_rate": float((verdict[:, 0] != verdict[:, 1]).mean()),
        "unanimity_lift": float(unanimous[both, 1].mean() - unanimous[both, 0].mean()),
        **flips,
        "pairwise": pairwise,
    }


# ---- DuckDB --------------------------------------------------------------------------------------------


def to_duckdb(cols: dict[str, np.ndarray]):  # noqa: ANN201 - a duckdb connection
    import duckdb

    con = duckdb.connect()
    con.register("votes", {k: cols[k] for k in ("row", "member", "round", "vote")})
    return con


def duckdb_metrics(con, rows: int, members: int, quorum: int) -> dict:  # noqa: ANN001
    # Tallies per row and round, every row present (a row with no valid vote counts 0 of 0).
    tally = con.execute(f"""
        WITH t AS (SELECT row, round, sum(vote) AS y, count(*) AS n FROM votes WHERE vote >= 0 GROUP BY row, round)
        SELECT r.range AS row,
               coalesce(t1.y, 0) AS y1, coalesce(t1.n, 0) AS n1, coalesce(t2.y, 0) AS y2, coalesce(t2.n, 0) AS n2
        FROM range({rows}) r
        LEFT JOIN t t1 ON t1.row = r.range AND t1.round = 1
        LEFT JOIN t t2 ON t2.row = r.range AND t2.round = 2
        ORDER BY row""").fetchnumpy()
    y = np.stack([tally["y1"], tally["y2"]], axis=1).astype(np.int64)
    n = np.stack([tally["n1"], tally["n2"]], axis=1).astype(np.int64)

    # Each member's two votes side by side.
    con.execute("""
        CREATE OR REPLACE TEMP TABLE pairs AS
        SELECT row, member, max(vote) FILTER (WHERE round = 1) AS v1, max(vote) FILTER (WHERE round = 2) AS v2
        FROM votes GROUP BY row, member""")
    per_row = con.execute("""
        SELECT count(*) FILTER (WHERE changed), count(*) FILTER (WHERE eligible) FROM (
            SELECT row, bool_or(v1 >= 0 AND v2 >= 0 AND v1 <> v2) AS changed, bool_or(v1 >= 0 AND v2 >= 0) AS eligible
            FROM pairs GROUP BY row)""").fetchone()
    per_member = con.execute(f"""
        SELECT m.range AS member,
               count(*) FILTER (WHERE v1 = {INCORRECT} AND v2 = {CORRECT}) AS to_correct,
               count(*) FILTER (WHERE v1 = {CORRECT} AND v2 = {INCORRECT}) AS to_incorrect,
               count(*) FILTER (WHERE v1 >= 0 AND v2 >= 0) AS valid_both
        FROM range({members}) m LEFT JOIN pairs p ON p.member = m.range
        GROUP BY m.range ORDER BY m.range""").fetchnumpy()
    flips = {k: per_member[k].astype(np.int64) for k in ("to_correct", "to_incorrect", "valid_both")}

    # Pairwise percent agreement, per round, from one wide row per (row, round).
    wide = ", ".join(f"max(vote) FILTER (WHERE member = {i}) AS m{i}" for i in range(members))
    shares = ", ".join(
        f"count(*) FILTER (WHERE m{i} >= 0 AND m{j} >= 0 AND m{i} = m{j})"
        f" / count(*) FILTER (WHERE m{i} >= 0 AND m{j} >= 0) AS p{i}_{j}" for i, j in _pairs(members))
    got = con.execute(f"""
        SELECT round, {shares} FROM (SELECT row, round, {wide} FROM votes GROUP BY row, round)
        GROUP BY round ORDER BY round""").fetchall()
    pairwise = np.full((2, members, members), np.nan)
    for k, record in enumerate(got):
        for (i, j), share in zip(_pairs(members), record[1:], strict=True):
            pairwise[k, i, j] = pairwise[k, j, i] = np.nan if share is None else share
    return _finish(rows, members, quorum, y, n, per_row, flips, pairwise)


# ---- polars --------------------------------------------------------------------------------------------


def to_polars(cols: dict[str, np.ndarray]):  # noqa: ANN201 - a polars DataFrame
    import polars as pl

    return pl.DataFrame({k: cols[k] for k in ("row", "member", "round", "vote")})


def polars_metrics(df, rows: int, members: int, quorum: int) -> dict:  # noqa: ANN001
    import polars as pl

    # One wide row per (row, round): the members' votes as columns m0..m4 (null where a vote is absent).
    wide = (df.pivot(on="member", index=["row", "round"], values="vote")
            .rename({str(i): f"m{i}" for i in range(members)}, strict=False))
    for i in range(members):
        if f"m{i}" not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Int8).alias(f"m{i}"))
    member_cols = [pl.col(f"m{i}") for i in range(members)]

    # Tallies per row and round, every row present.
    counted = wide.select("row", "round", y=pl.sum_horizontal([(c == CORRECT).cast(pl.Int64) for c in member_cols]),
                          n=pl.sum_horizontal([(c >= 0).fill_null(False).cast(pl.Int64) for c in member_cols]))
    t = pl.DataFrame({"row": np.arange(rows, dtype=np.int64)})
    for k in (1, 2):
        part = (counted.filter(pl.col("round") == k)
                .select("row", pl.col("y").alias(f"y{k}"), pl.col("n").alias(f"n{k}")))
        t = t.join(part, on="row", how="left")
    t = t.fill_null(0).sort("row")
    y = t.select("y1", "y2").to_numpy().astype(np.int64)
    n = t.select("n1", "n2").to_numpy().astype(np.int64)

    # Each member's two votes side by side.
    pairs = (df.pivot(on="round", index=["row", "member"], values="vote")
             .rename({"1": "v1", "2": "v2"}, strict=False))
    valid = ((pl.col("v1") >= 0) & (pl.col("v2") >= 0)).fill_null(False)
    per_row = pairs.group_by("row").agg((valid & (pl.col("v1") != pl.col("v2"))).any().alias("changed"),
                                        valid.any().alias("eligible"))
    counts = per_row.select(pl.col("changed").sum(), pl.col("eligible").sum()).row(0)
    per_member = (pairs.group_by("member").agg(
        ((pl.col("v1") == INCORRECT) & (pl.col("v2") == CORRECT)).fill_null(False).sum().alias("to_correct"),
        ((pl.col("v1") == CORRECT) & (pl.col("v2") == INCORRECT)).fill_null(False).sum().alias("to_incorrect"),
        valid.sum().alias("valid_both")))
    per_member = (pl.DataFrame({"member": np.arange(members, dtype=np.int8)})
                  .join(per_member, on="member", how="left").fill_null(0).sort("member"))
    flips = {k: per_member[k].to_numpy().astype(np.int64) for k in ("to_correct", "to_incorrect", "valid_both")}

    # Pairwise percent agreement, per round.
    exprs = []
    for i, j in _pairs(members):
        both = ((pl.col(f"m{i}") >= 0) & (pl.col(f"m{j}") >= 0)).fill_null(False)
        exprs.append(((both & (pl.col(f"m{i}") == pl.col(f"m{j}"))).sum() / both.sum()).alias(f"p{i}_{j}"))
    got = wide.group_by("round").agg(exprs).sort("round")
    pairwise = np.full((2, members, members), np.nan)
    for k, record in enumerate(got.iter_rows()):
        for (i, j), share in zip(_pairs(members), record[1:], strict=True):
            pairwise[k, i, j] = pairwise[k, j, i] = np.nan if share is None else share
    return _finish(rows, members, quorum, y, n, counts, flips, pairwise)
