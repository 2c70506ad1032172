"""Run folders as the command line shows them: a run named by its id, a prefix or a path; the list of runs; one
run's headline; one row's two rounds, member by member."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

from rich.markup import escape

from council.console.exits import EXIT_OK
from council.batching.journal import read_status
from council.console.batches import HEADER, batch_rows, waiting_text
from council.console.output import clock, console, out, pairs, points, say, table, usd
from council.console.results import print_leaderboard, print_partial, print_scales, print_simulated, print_warnings
from council.core.errors import ConfigError, RunFolderError
from council.store.runfolder import MANIFEST, ROUND_FILES, STATE, SUMMARY, VERDICTS, RunFolder, iter_json, run_path


def open_run(runs_dir: Path, run: str) -> RunFolder:
    """A run named by its id under ``runs_dir``, by a unique prefix of one, or by its folder's path."""
    try:
        candidate = run_path(runs_dir, run)
    except RunFolderError:
        candidate = None
    if candidate is not None and candidate.is_dir():
        return RunFolder.open(candidate)
    given = Path(run)
    if (given / MANIFEST).is_file():
        return RunFolder.open(given)
    matches = sorted(p.name for p in _run_dirs(runs_dir) if p.name.startswith(run)) if "/" not in run else []
    if len(matches) == 1:
        return RunFolder.open(runs_dir / matches[0])
    if len(matches) > 1:
        raise ConfigError(f"{run!r} names {len(matches)} runs under {runs_dir} ({', '.join(matches[:5])}"
                          f"{', ...' if len(matches) > 5 else ''}); give more of the id")
    return RunFolder.open_run(runs_dir, run)  # says what is wrong with the name, or that there is no such run


def _run_dirs(runs_dir: Path) -> list[Path]:
    if not runs_dir.is_dir():
        return []
    return [p for p in runs_dir.iterdir() if p.is_dir() and (p / MANIFEST).is_file()]


def _read_json(path: Path) -> Any:
    import orjson

    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def _state_text(state: dict[str, Any] | None) -> str:
    if not state:
        return "unknown"
    reason = state.get("reason")
    return f"{state.get('state', 'unknown')}{f' ({reason})' if reason else ''}"


def list_runs(runs_dir: Path) -> int:
    """``council runs``: the run folders under ``runs_dir``, newest first."""
    if runs_dir.exists() and not runs_dir.is_dir():
        raise ConfigError(f"{runs_dir}: not a folder")
    listed = []
    for path in _run_dirs(runs_dir):
        manifest = _read_json(path / MANIFEST) or {}
        summary = _read_json(path / SUMMARY) or {}
        state = _read_json(path / STATE)
        total = summary.get("rows_total", manifest.get("rows"))
        not_graded = summary.get("not_graded_rows", 0) if summary else None
        rows = "-" if total is None else f"{total - not_graded}/{total}" if not_graded else str(total)
        models = summary.get("models") or {}
        listed.append((manifest.get("created_at") or "", [
            path.name, _state_text(state), rows, str(len(models) or len(manifest.get("models", [])) or "-"),
            usd(summary.get("cost_usd")), _when(manifest.get("created_at")),
            "yes" if manifest.get("simulated") else "no"]))
    if not listed:
        say(f"no runs under {escape(str(runs_dir))}", to=console)
        return EXIT_OK
    listed.sort(key=lambda entry: (entry[0], entry[1][0]), reverse=True)
    table(f"runs in {runs_dir} (newest first)", ("run", "state", "rows", "models", "cost", "created", "simulated"),
          [row for _, row in listed], align="llrrrll")
    return EXIT_OK


def _when(iso: str | None) -> str:
    """An ISO time as ``YYYY-MM-DD HH:MM`` UTC."""
    if not iso:
        return "-"
    try:
        return dt.datetime.fromisoformat(iso).astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return iso


def show_run(folder: RunFolder) -> int:
    """``council show RUN``: the run's headline."""
    manifest = folder.read_json(MANIFEST)
    summary = _read_json(folder.path / SUMMARY)
    state = folder.read_state()
    command = " ".join(str(manifest.get("command", "")).split()[:2]) or "council"
    label = "  SIMULATED" if manifest.get("simulated") else ""
    facts = [("state", _state_text(state)), ("created", _when(manifest.get("created_at"))), ("command", command)]
    if state.get("detail"):
        facts.append(("detail", str(state["detail"])))
    roster = manifest.get("roster", [])
    facts.append(("council", ", ".join(f"{m['vendor']} ({m['judge_model']}{', reserve' if m.get('reserve') else ''})"
                                       for m in roster)))
    facts.append(("quorum / seed", f"{manifest.get('quorum')} / {manifest.get('seed')}"))
    if summary is None:
        facts.append(("rows", str(manifest.get("rows", "-"))))
        pairs(f"run {folder.path.name}{label}", facts)
        say(f"no summary yet: the run is {escape(_state_text(state))}; `council rescore {folder.path.name}` scores "
            "what its archive holds")
        print_batches(folder)
        return EXIT_OK
    total, not_graded = summary["rows_total"], summary.get("not_graded_rows", 0)
    scaled = f", {summary['scaled_rows']} on a graded scale" if summary.get("scaled_rows") else ""
    facts.append(("rows", f"{total - not_graded} graded of {total} ({not_graded} not graded, "
                          f"{summary.get('refused_rows', 0)} refused{scaled})"))
    facts.append(("cost", usd(summary.get("cost_usd"))))
    if manifest.get("command") == "inspect":  # a scorer's samples, handed over one by one
        responses = "the samples an inspect scorer handed over (inspect_samples.jsonl)"
    else:
        responses = manifest.get("responses_path") or f"asked: {', '.join(manifest.get('models', []))}"
    facts.append(("responses", responses))
    pairs(f"run {folder.path.name}{label}", facts)
    if summary.get("scaled_rows", 0) < summary["rows_total"] and summary.get("models"):
        print_leaderboard(summary, "leaderboard (council score, 95% bootstrap interval over items)")
    if summary.get("scales"):
        print_scales(summary)
    print_simulated(summary)
    print_partial(summary)
    print_warnings(summary, to=out)
    print_batches(folder)
    return EXIT_OK


def print_batches(folder: RunFolder) -> None:
    """The run's batches as of its last poll (the batch transport), and what to do about the open ones."""
    status = read_status(folder.path)
    if status is None:
        return
    rows = batch_rows(status["batches"])
    if not rows:
        return
    when = f"as of the last poll, {clock(time.time() - status['at'])} ago" if status["at"] else "none polled yet"
    table(f"batches ({when})", HEADER, rows, text_columns=3)
    waiting = waiting_text(status["batches"])
    if waiting:
        say(f"{waiting}: `council run --resume {folder.path.name}` polls them and goes on where the run stopped")


def _find_row(folder: RunFolder, row: str) -> dict[str, Any]:
    """The verdict of the row ``row`` names (its id, or a unique prefix of one)."""
    exact, prefixed = None, []
    for _, verdict in iter_json(folder.path / VERDICTS, missing_ok=True):
        row_id = verdict.get("row_id", "")
        if row_id == row:
            exact = verdict
            break
        if row_id.startswith(row):
            prefixed.append(verdict)
    if exact is not None:
        return exact
    if len(prefixed) == 1:
        return prefixed[0]
    if prefixed:
        names = ", ".join(v["row_id"] for v in prefixed[:5])
        raise ConfigError(f"{row!r} begins {len(prefixed)} row ids of run {folder.path.name} ({names}"
                          f"{', ...' if len(prefixed) > 5 else ''}); give more of it")
    raise ConfigError(f"run {folder.path.name} has no row {row!r} (nor one beginning with it) in {VERDICTS}")


def _row_records(folder: RunFolder, row_id: str) -> dict[int, dict[str, dict[str, Any]]]:
    """Each round's counted vote of every member on the row (a later record supersedes an earlier one)."""
    votes: dict[int, dict[str, dict[str, Any]]] = {1: {}, 2: {}}
    for round_, name in ROUND_FILES.items():
        for _, record in iter_json(folder.path / name, missing_ok=True):
            if record.get("row_id") == row_id and not record.get("shadow") and record.get("audit_of") is None:
                votes[round_][record["member"]] = record
    return votes


def _vote_text(record: dict[str, Any] | None, verdicts: dict[str, Any], member: str) -> str:
    if record is None:
        return f"{verdicts.get(member) or 'no vote'} (no record)" if member in verdicts else "no vote"
    if record.get("scores"):
        return ", ".join(f"{dim} {level}" for dim, level in record["scores"].items())
    if record.get("verdict"):
        return str(record["verdict"])
    return f"no valid vote ({record.get('error') or record.get('parse_status', 'unparseable')})"


def show_row(folder: RunFolder, row: str) -> int:
    """``council show RUN ROW``: the row's two rounds, member by member, and the key from letters to vendors."""
    verdict = _find_row(folder, row)
    row_id = verdict["row_id"]
    records = _row_records(folder, row_id)
    members = list(verdict.get("members", []))
    reserves = set(verdict.get("reserves", []))
    graded_item = bool(verdict.get("scale"))
    probe = f" (probe {verdict['probe']})" if verdict.get("probe") else ""
    facts = [("item", f"{verdict.get('item_id')}{probe}"),
             ("model", f"{verdict.get('model')} (vendor {verdict.get('vendor')})"),
             ("panel", ", ".join(f"{m}{' (reserve)' if m in reserves else ''}" for m in members) or "-")]
    if graded_item:
        score = verdict.get("score") or {}
        facts.append(("scale", str(verdict["scale"])))
        facts.append(("council levels", ", ".join(f"{d} {'-' if v is None else v}" for d, v in score.items()) or "-"))
        facts.append(("council score", points(verdict.get("score_normalised"))))
    else:
        facts.append(("consensus", f"{verdict.get('consensus') or 'none'} (round one: "
                                   f"{verdict.get('consensus_round1') or 'none'})"))
    if not verdict.get("deliberated", True):
        facts.append(("round two", "sent as the deliberation audit, never counted" if verdict.get("deliberation_audit")
                      else "not sent: round one was not disputed, so its consensus stands"))
    if verdict.get("gold_verdict"):
        facts.append(("truth", str(verdict["gold_verdict"])))
    if not verdict.get("graded", True):
        facts.append(("graded", "no: the panel did not vote in full; not scored"))
    facts.append(("flags", ", ".join(verdict.get("flags", [])) or "none"))
    pairs(f"row {row_id}", facts)

    # letters: viewer -> {letter: vendor}; a member's letters: [(viewer, letter)]
    keys = {viewer: rec.get("peer_letters") or {} for viewer, rec in records[2].items()}
    seen_as: dict[str, list[str]] = {m: [] for m in members}
    for viewer, letters in sorted(keys.items()):
        for letter, vendor in sorted(letters.items()):
            seen_as.setdefault(vendor, []).append(f"{letter} by {viewer}")
    votes = {1: verdict.get("votes_round1", {}), 2: verdict.get("votes_round2", {})}
    for member in dict.fromkeys([*members, *records[1], *records[2]]):
        title = f"{member}{' (reserve)' if member in reserves else ''}"
        letters = seen_as.get(member)
        title += f": seen as {', '.join(letters)}" if letters else ": seen by no peer in round two"
        say(title, markup=False)
        for round_ in (1, 2):
            record = records[round_].get(member)
            if round_ == 2 and record is None and not verdict.get("deliberated", True):
                say("  round 2: not sent", markup=False)
                continue
            reason = (record or {}).get("reason") or ""
            changed = ""
            if round_ == 2 and record is not None and records[1].get(member) is not None:
                before = _vote_text(records[1][member], votes[1], member)
                changed = " (changed)" if before != _vote_text(record, votes[2], member) else ""
            say(f"  round {round_}: {_vote_text(record, votes[round_], member)}{changed}"
                f"{f' - {reason}' if reason else ''}", markup=False)
    say("", markup=False)
    if keys:
        say("key: the letter under which each member saw its peers in round two", markup=False)
        for viewer, letters in sorted(keys.items()):
            say(f"  {viewer} saw: " + ", ".join(f"{letter} = {vendor}" for letter, vendor in sorted(letters.items())),
                markup=False)
    else:
        say("key: no round-two record (no letters were shown)", markup=False)
    return EXIT_OK
