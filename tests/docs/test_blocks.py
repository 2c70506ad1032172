"""The docs run: every shell and Python block of README.md and of every hand-written page under docs/ is run against
the embedded provider, page by page, in order (the rules, the marks that skip a block or check its output, and how
install commands are kept off the network: ``tests/docs/blocks.py``). A block that no longer works, or whose
output no longer matches, fails here; a skipped block is reported with its reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.blocks import REPO, Block, DocsBlockError, prepare, read_blocks, run_block, run_page

PAGES = [REPO / "README.md", *sorted(p for p in (REPO / "docs").rglob("*.md") if "hooks" not in p.parts)]


def _blocks() -> list[Block]:
    out = []
    for path in PAGES:
        out += [b for b in read_blocks(path.read_text(encoding="utf-8"), str(path.relative_to(REPO))) if b.runs]
    return out


BLOCKS = _blocks()


@pytest.fixture(scope="module")
def page_folders(tmp_path_factory):
    """One folder per page (and its commands and environment), made when its first block runs."""
    made: dict[str, tuple[Path, dict[str, str]]] = {}

    def folder(page: str) -> tuple[Path, dict[str, str]]:
        if page not in made:
            root = tmp_path_factory.mktemp("docs-" + Path(page).stem)
            made[page] = (root / "work", prepare(root / "work", root / "bin"))
        return made[page]
    return folder


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_the_block_works(block: Block, page_folders) -> None:
    if block.skip is not None:
        pytest.skip(block.skip)
    folder, env = page_folders(block.page)
    problem = run_block(block, folder, env)
    assert problem is None, problem


def test_every_page_of_the_site_is_run_and_the_readme_too() -> None:
    from tests.docs._site import nav_pages

    run = {b.page for b in BLOCKS if b.skip is None}
    assert "README.md" in run and "docs/quickstart.md" in run
    assert {f"docs/{p}" for p in nav_pages()} >= {str(p.relative_to(REPO)) for p in PAGES[1:]}, \
        "a hand-written page the site's nav does not list"


def test_the_readme_is_short_and_types_no_timing_or_date() -> None:
    """At most 150 lines; a figure measured on a machine belongs on the benchmarks page, rendered from its file."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert not re.search(r"\b\d{4}-\d{2}-\d{2}\b|\b\d+(?:\.\d+)? ?(?:s|ms|h|seconds|minutes|hours)\b", text)


# -- the harness itself ------------------------------------------------------------------------------------------


PAGE = """# A page

```bash
council {command} > out.txt
echo made
```

<!-- docs-test: output -->
```text
made
```

<!-- docs-test: skip "needs a cluster" -->
```bash
council run --ray-address auto
```

```python
print(open("out.txt").read().splitlines()[0].split()[0])
```

<!-- docs-test: output -->
```text
{first}
```
"""


def _run(tmp_path: Path, command: str, first: str = "usage:") -> list[str | None]:
    blocks = read_blocks(PAGE.format(command=command, first=first), "page.md")
    assert [b.skip for b in blocks if b.runs] == [None, "needs a cluster", None]
    return [problem for _, problem in run_page(blocks, tmp_path / "work", tmp_path / "bin")]


def test_the_harness_passes_a_page_whose_blocks_work(tmp_path: Path) -> None:
    assert _run(tmp_path, "--help", "usage:") == [None, None]


def test_the_harness_fails_a_block_changed_to_a_command_that_no_longer_works(tmp_path: Path) -> None:
    problems = _run(tmp_path, "no-such-command")
    assert problems[0] is not None and "page.md:3: exit 2" in problems[0] and "no-such-command" in problems[0]


def test_the_harness_fails_an_output_that_no_longer_matches(tmp_path: Path) -> None:
    problems = _run(tmp_path, "--help", "something-else:")
    assert problems[0] is None and problems[1] is not None and "output differs" in problems[1]


def test_install_commands_never_reach_the_network(tmp_path: Path) -> None:
    blocks = read_blocks("```bash\npython3 -m pip install -e . && pip install 'no-such-package-x[y]'\n"
                         "council --help > /dev/null\n```\n", "page.md")
    assert [p for _, p in run_page(blocks, tmp_path / "work", tmp_path / "bin")] == [None]


def test_elided_lines_and_text() -> None:
    from tests.docs.blocks import output_matches

    assert output_matches("a\n...\nd\n", "a\nb\nc\nd\n") and output_matches("a\n...\nb\n", "a\nb\n")
    assert output_matches("run ... (2 rows, ...)\n", "run x (2 rows, 0.1 s)\n")
    assert not output_matches("a\nd\n", "a\nb\nd\n") and not output_matches("a ... z\n", "a b\n")


def test_a_mark_before_nothing_is_refused() -> None:
    with pytest.raises(DocsBlockError):
        read_blocks('<!-- docs-test: skip "why" -->\n\nsome prose\n', "page.md")
    with pytest.raises(DocsBlockError):
        read_blocks("<!-- docs-test: output -->\n```text\nx\n```\n", "page.md")
