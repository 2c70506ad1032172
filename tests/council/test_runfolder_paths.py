"""Run ids name a folder directly inside the runs root, and nothing else: ``run_path`` and the RunFolder
constructors that use it refuse every id that could reach outside, symlinks included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from council.core.errors import RunFolderError
from council.store.runfolder import MANIFEST, MAX_RUN_ID, RunFolder, run_id_problem, run_path


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    root.mkdir()
    return root


def _run(root: Path, run_id: str) -> Path:
    folder = root / run_id
    folder.mkdir()
    (folder / MANIFEST).write_bytes(b"{}\n")
    return folder


@pytest.mark.parametrize("run_id", [
    "20250601-101500-ab12", "my_run.v2", "run-1", "résumé", "a" * MAX_RUN_ID, "x", "run 7", "a.b.c", "1",
])
def test_plain_names_are_accepted(runs, run_id):
    assert run_path(runs, run_id) == runs / run_id
    folder = RunFolder.create(runs, run_id)
    assert folder.path == runs / run_id and folder.path.is_dir()


@pytest.mark.parametrize("run_id, says", [
    ("", "must not be empty"),
    ("/etc", "absolute"),
    ("/", "absolute"),
    ("\\\\server\\share", "absolute"),
    ("C:\\runs", "absolute"),
    ("c:x", "absolute"),
    ("a/b", "'/'"),
    ("a\\b", "'\\'"),
    ("../escape", "'/'"),
    ("..", "'..'"),
    ("a..b", "'..'"),
    ("...", "'..'"),
    (".", "start with '.'"),
    (".hidden", "start with '.'"),
    ("-rf", "start with '-'"),
    ("--resume", "start with '-'"),
    ("a\x00b", "NUL"),
    ("a\nb", "control characters (U+000A)"),
    ("tab\there", "control characters (U+0009)"),
    ("bell\x07", "control characters"),
    ("esc\x1b[31m", "control characters"),
    ("del\x7f", "control characters"),
    ("zero\u200bwidth", "control characters"),
    ("rtl\u202eoverride", "control characters"),
    ("line\u2028sep", "control characters"),
    ("a" * (MAX_RUN_ID + 1), f"longer than {MAX_RUN_ID} characters"),
    ("\U0001F600" * 64, "255 bytes"),
])
def test_bad_ids_are_refused_with_a_reason(runs, run_id, says):
    with pytest.raises(RunFolderError) as excinfo:
        run_path(runs, run_id)
    message = str(excinfo.value)
    assert message.startswith("invalid run id ") and says in message, message
    assert "\n" not in message and "\x1b" not in message  # the id is shown escaped
    with pytest.raises(RunFolderError):
        RunFolder.create(runs, run_id)
    with pytest.raises(RunFolderError):
        RunFolder.open_run(runs, run_id)
    assert list(runs.iterdir()) == []


def test_non_string_ids_are_refused(runs):
    for run_id in (None, 7, b"run", Path("run")):
        with pytest.raises(RunFolderError):
            run_path(runs, run_id)  # type: ignore[arg-type]


def test_a_symlink_leading_outside_the_root_is_refused(tmp_path, runs):
    outside = tmp_path / "outside"
    _run(tmp_path, "outside")
    (runs / "evil").symlink_to(outside, target_is_directory=True)
    (runs / "evil-relative").symlink_to(Path("..") / "outside", target_is_directory=True)
    (runs / "dangling").symlink_to(tmp_path / "nowhere" / "run")
    for run_id in ("evil", "evil-relative", "dangling"):
        with pytest.raises(RunFolderError, match="not inside the runs folder"):
            run_path(runs, run_id)
        with pytest.raises(RunFolderError, match="not inside the runs folder"):
            RunFolder.open_run(runs, run_id)
        with pytest.raises(RunFolderError, match="not inside the runs folder"):
            RunFolder.create(runs, run_id)
    assert not (tmp_path / "nowhere").exists()
    assert sorted(p.name for p in outside.iterdir()) == [MANIFEST]


def test_a_symlink_to_the_root_itself_is_refused(runs):
    (runs / "self").symlink_to(runs, target_is_directory=True)
    (runs / "parent").symlink_to(runs.parent, target_is_directory=True)
    for run_id in ("self", "parent"):
        with pytest.raises(RunFolderError, match="not inside the runs folder"):
            RunFolder.open_run(runs, run_id)


def test_a_symlink_loop_is_refused(runs):
    (runs / "loop-a").symlink_to(runs / "loop-b")
    (runs / "loop-b").symlink_to(runs / "loop-a")
    with pytest.raises(RunFolderError):
        RunFolder.open_run(runs, "loop-a")
    with pytest.raises(RunFolderError):
        RunFolder.create(runs, "loop-a")


def test_a_symlink_inside_the_root_and_a_symlinked_root_are_fine(tmp_path, runs):
    _run(runs, "real")
    (runs / "alias").symlink_to(runs / "real", target_is_directory=True)
    assert RunFolder.open_run(runs, "alias").path == runs / "alias"
    linked_root = tmp_path / "runs-link"
    linked_root.symlink_to(runs, target_is_directory=True)
    assert RunFolder.open_run(linked_root, "real").path == linked_root / "real"
    assert RunFolder.create(linked_root, "new").path.resolve() == (runs / "new").resolve()


def test_relative_runs_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = RunFolder.create(Path("runs"), "r1")
    assert folder.path == Path("runs") / "r1" and (tmp_path / "runs" / "r1").is_dir()
    with pytest.raises(RunFolderError):
        RunFolder.create(Path("runs"), "../r2")
    assert not (tmp_path / "r2").exists()


def test_create_never_reuses_and_open_needs_a_manifest(runs):
    first = RunFolder.create(runs, "once")
    with pytest.raises(RunFolderError, match="already exists"):
        RunFolder.create(runs, "once")
    with pytest.raises(RunFolderError, match=f"being written by pid {os.getpid()} .*being created"):
        RunFolder.open_run(runs, "once")
    first.release()  # as when its process is killed before the manifest: nothing paid, nobody writing
    with pytest.raises(RunFolderError, match=f"killed before it began \\(no {MANIFEST}.*council run --run-id once"):
        RunFolder.open_run(runs, "once")
    again = RunFolder.create(runs, "once")
    assert again.recovered and [p.name for p in again.path.iterdir()] == [".lock"]  # made anew: its own lock in it
    again.release()
    with pytest.raises(RunFolderError, match="no such folder"):
        RunFolder.open_run(runs, "never")
    _run(runs, "done")
    assert RunFolder.open_run(runs, "done").path == runs / "done"
    (runs / "a-file").write_bytes(b"")
    with pytest.raises(RunFolderError, match="not a folder"):
        RunFolder.open_run(runs, "a-file")
    with pytest.raises(RunFolderError, match="already exists"):
        RunFolder.create(runs, "a-file")


@settings(max_examples=200, deadline=None)
@given(run_id=st.text(max_size=140))
def test_any_text_is_refused_or_stays_inside(tmp_path_factory, run_id):
    root = tmp_path_factory.getbasetemp() / "prop-runs"
    root.mkdir(exist_ok=True)
    try:
        path = run_path(root, run_id)
    except RunFolderError as exc:
        assert run_id_problem(run_id) is not None or "runs folder" in str(exc)
        return
    assert path.parent == root and path.name == run_id
    assert os.path.realpath(path).startswith(os.path.realpath(root) + os.sep)
    assert not run_id.startswith((".", "-")) and ".." not in run_id and "/" not in run_id and "\\" not in run_id
    assert all(ord(c) >= 32 and c != "\x7f" for c in run_id) and 0 < len(run_id) <= MAX_RUN_ID
