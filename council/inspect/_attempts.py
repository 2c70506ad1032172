"""An eval retried (``inspect eval-retry``, or ``eval_set`` running a task again): each attempt of a task grades
into a run folder of its own (``inspect-<eval id>``), which names its task in ``inspect_task.json``.

A new attempt's folder lists the task's earlier attempts in its manifest's ``reuse_from``, so a vote an earlier
attempt archived for the same prompt (the same response, as a deterministic or cached model gives it again) is
copied, never paid for again. inspect runs again only the samples an attempt did not complete, and keeps the
scores of those it did: when the attempt ends, their rows (with their items, votes and sample uuids) are copied
from the latest earlier attempt that holds them, so that the folder's results cover the whole eval.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from council.core.schema import BankItem, ResponseRow
from council.store.runfolder import ITEMS, ROWS, RunFolder, dump_line, iter_json, iter_jsonl

TASK = "inspect_task.json"
SAMPLES = "inspect_samples.jsonl"  # sample uuid -> row id: which run folder a log's samples were graded in


def append(path: Path, objs: list[dict]) -> None:
    """Append ``objs`` to the JSON-lines file ``path`` in one write."""
    if objs:
        with open(path, "ab") as handle:
            handle.write(b"".join(map(dump_line, objs)))


def record_task(folder: Path, task_id: str, eval_id: str, *, created_at: str) -> None:
    (folder / TASK).write_bytes(orjson.dumps({"task_id": task_id, "eval_id": eval_id, "created_at": created_at}))


def earlier_attempts(runs_dir: Path, task_id: str, this_run: str) -> list[str]:
    """The run ids of the task's other attempts under ``runs_dir``, oldest first."""
    found = []
    for path in Path(runs_dir).glob(f"*/{TASK}"):
        task = orjson.loads(path.read_bytes())
        if task["task_id"] == task_id and path.parent.name != this_run:
            found.append((task["created_at"], path.parent.name))
    return [run for _, run in sorted(found)]


def merge_earlier(folder: RunFolder, runs_dir: Path, earlier: list[str], vendor_map: dict[str, str]) -> int:
    """Copy into ``folder`` the rows of ``earlier`` attempts (the latest holding a row wins) that it lacks, with
    their items, their round-one and round-two votes (marked ``reused_from``: paid for in that attempt) and their
    sample uuids; returns how many rows were copied."""
    have = {r.row_id for r in iter_jsonl(folder.path / ROWS, ResponseRow, missing_ok=True,
                                         context={"vendor_map": vendor_map})}
    items = {i.id for i in iter_jsonl(folder.path / ITEMS, BankItem, missing_ok=True)}
    copied = 0
    for run in reversed(earlier):
        source = RunFolder.open_run(Path(runs_dir), run)
        rows = [r for r in iter_jsonl(source.path / ROWS, ResponseRow, missing_ok=True,
                                      context={"vendor_map": vendor_map}) if r.row_id not in have]
        if not rows:
            continue
        wanted, answered = {r.row_id for r in rows}, {r.item_id for r in rows}
        new_items = [i for i in iter_jsonl(source.path / ITEMS, BankItem, missing_ok=True)
                     if i.id not in items and i.id in answered]
        append(folder.path / ITEMS, [i.model_dump(mode="json") for i in new_items])
        append(folder.path / ROWS, [r.model_dump(mode="json") for r in rows])
        folder.append_many(rec.model_copy(update={"reused_from": rec.reused_from or run})
                           for round_ in (1, 2) for rec in source.read_records(round_) if rec.row_id in wanted)
        append(folder.path / SAMPLES, [entry for _, entry in iter_json(source.path / SAMPLES, missing_ok=True)
                                       if entry["row_id"] in wanted])
        have |= wanted
        items |= {i.id for i in new_items}
        copied += len(rows)
    return copied
