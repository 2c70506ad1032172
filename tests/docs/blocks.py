"""Running the docs' code blocks: reading them out of a Markdown page, and running them in order in one folder.

Which blocks run
    Every fenced block whose language is ``bash``, ``sh``, ``shell`` or ``console`` (run by ``bash -e -o
    pipefail``) or ``python`` (run by the current interpreter). Other blocks (``text``, ``json``, ``toml``...) are
    prose, unless they are an expected output.

Marks (an HTML comment on the line just before a block, blank lines between allowed)
    ``<!-- docs-test: skip "REASON" -->``: the block is not run, and is reported skipped with REASON (a block
    that needs a cluster, a real key, a browser, a server that runs until stopped, or a long time).
    ``<!-- docs-test: output -->``: this block is the expected standard output of the block that runs before it.
    A line ``...`` stands for any number of lines, and ``...`` inside a line for any text; trailing spaces and
    blank lines at the end are ignored. A mismatch fails.

Where and how they run
    The blocks of one page run in order in one fresh folder, so a later block uses what an earlier one made (a
    run, a file). The folder holds links to the repository's ``bank/`` and ``deploy/``: the pages are written as
    run from a checkout. ``council``, ``python3`` and ``python`` on ``PATH`` are the current interpreter with this
    repository first on ``PYTHONPATH``; ``COUNCIL_*`` variables of the caller are dropped and
    ``COUNCIL_NO_REPORT=1`` is set (a run does not draw its report; ``council report`` still does).

Install commands never reach the network
    ``pip install ...``, ``pip3 install ...`` and ``python3 -m pip install ...`` (or ``python -m``) in a shell
    block are no-ops that print one line and succeed: the package under test is already importable from the
    checkout. Every other ``pip`` command runs.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHELL = {"bash", "sh", "shell", "console"}
PYTHON = {"python", "py"}
MARK = re.compile(r"<!--\s*docs-test:\s*(skip|output)\s*(?:\"([^\"]*)\")?\s*-->")
FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)")
LINKED = ("bank", "deploy")
BLOCK_TIMEOUT_S = 300


@dataclass
class Block:
    page: str
    line: int  # the line of its opening fence, from 1
    lang: str
    code: str
    skip: str | None = None  # the reason it is not run
    expected: str | None = None  # the expected standard output

    @property
    def runs(self) -> bool:
        return self.lang in SHELL | PYTHON

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


class DocsBlockError(ValueError):
    """A page whose marks cannot be read (a mark before nothing, an output with no block to check)."""


def read_blocks(text: str, page: str) -> list[Block]:
    """Every fenced block of ``text`` with its mark; expected outputs attached to the block they check."""
    lines = text.splitlines()
    blocks: list[Block] = []
    mark: tuple[str, str | None, int] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        found = MARK.search(line)
        fence = FENCE.match(line)
        if found:
            mark = (found[1], found[2], i + 1)
        elif fence:
            indent, ticks, lang = fence.groups()
            body, i = [], i + 1
            while i < len(lines) and not lines[i].strip().startswith(ticks):
                body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
                i += 1
            code = "\n".join(body) + "\n"
            if mark and mark[0] == "output":
                target = next((b for b in reversed(blocks) if b.runs), None)
                if target is None or target.skip is not None or target.expected is not None:
                    raise DocsBlockError(f"{page}:{mark[2]}: an expected output with no run block before it to check")
                target.expected = code
            else:
                if mark and not mark[1]:
                    raise DocsBlockError(f"{page}:{mark[2]}: a skip mark says why: <!-- docs-test: skip \"REASON\" -->")
                blocks.append(Block(page, i - len(body), lang.lower(), code, skip=mark[1] if mark else None))
            mark = None
        elif line.strip() and mark is not None:
            raise DocsBlockError(f"{page}:{mark[2]}: a docs-test mark must come just before a fenced block")
        i += 1
    if mark is not None:
        raise DocsBlockError(f"{page}:{mark[2]}: a docs-test mark at the end of the page")
    return blocks


def output_matches(expected: str, actual: str) -> bool:
    """``actual`` matches ``expected``: line by line, ``...`` standing for lines or for text within a line."""
    def lines(text: str) -> list[str]:
        out = [line.rstrip() for line in text.splitlines()]
        while out and not out[-1]:
            out.pop()
        return out

    pattern = []
    for line in lines(expected):
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(".*".join(re.escape(part) for part in line.split("...")) + r"\n")
    return re.fullmatch("".join(pattern), "".join(line + "\n" for line in lines(actual))) is not None


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)


def prepare(folder: Path, bin_dir: Path) -> dict[str, str]:
    """Make ``folder`` a page's working folder and ``bin_dir`` its commands; the environment its blocks run in."""
    folder.mkdir(parents=True, exist_ok=True)
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        if not (folder / name).exists():
            (folder / name).symlink_to(REPO / name, target_is_directory=True)
    python = shlex.quote(sys.executable)
    no_install = 'echo "docs-test: $0 $* not run (no network in the docs test)"; exit 0'
    for name in ("python3", "python"):
        _script(bin_dir / name, f'if [ "$1" = -m ] && [ "$2" = pip ] && [ "$3" = install ]; then {no_install}; fi\n'
                                f'exec {python} "$@"\n')
    for name in ("pip", "pip3"):
        _script(bin_dir / name, f'if [ "$1" = install ]; then {no_install}; fi\nexec {python} -m pip "$@"\n')
    _script(bin_dir / "council", f"exec {python} -c 'import sys; sys.argv[0] = \"council\"; "
                                 f"from council.cli import entry; entry()' \"$@\"\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", COUNCIL_NO_REPORT="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p))
    return env


def run_block(block: Block, folder: Path, env: dict[str, str]) -> str | None:
    """Run one block in ``folder``; None when it worked (and printed what it should), else what went wrong."""
    if block.lang in SHELL:
        argv = ["bash", "-e", "-o", "pipefail", "-c", block.code]
    else:
        argv = [sys.executable, "-c", block.code]
    try:
        done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"{block.where}: still running after {BLOCK_TIMEOUT_S} s"
    if done.returncode != 0:
        return (f"{block.where}: exit {done.returncode}\n--- block\n{block.code}--- stdout\n{done.stdout[-3000:]}"
                f"--- stderr\n{done.stderr[-3000:]}")
    if block.expected is not None and not output_matches(block.expected, done.stdout):
        return f"{block.where}: output differs\n--- expected\n{block.expected}--- got\n{done.stdout[-3000:]}"
    return None


def run_page(blocks: list[Block], folder: Path, bin_dir: Path) -> list[tuple[Block, str | None]]:
    """Run a page's blocks in order in ``folder``: each run block with what went wrong (None: it worked); a
    skipped block is not run."""
    env = prepare(folder, bin_dir)
    return [(b, run_block(b, folder, env)) for b in blocks if b.runs and b.skip is None]
