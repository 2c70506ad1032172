"""MkDocs hook: the pages generated from the code at build time (never committed), and the tables put into
hand-written pages where they hold a marker (``<!-- council: NAME -->``).

Generated: the command line (``council.cli.build_parser``), the configuration file (``CouncilConfig``'s JSON
Schema), the embedded provider's configuration (``council.sim._doc``), the run folder and ``summary.json``
(``council.store.run_fields``) and the benchmarks (``bench/results/*.json`` through
``bench/support/render_docs.py``). Markers: ``exit-codes`` (``council.console.exits.EXIT_CODES``) and
``submit-exit-codes`` (``council submit``'s own).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for path in (str(HERE), str(ROOT)):
    if path not in sys.path:
        sys.path.insert(0, path)

from bench.support import render_docs  # noqa: E402
from cli_page import cli_page, command_epilog, exit_codes_table  # noqa: E402
from config_page import config_page, config_schema_json  # noqa: E402
from run_folder_page import run_folder_page  # noqa: E402

from council.sim._doc import sim_config_doc, sim_config_schema_json  # noqa: E402

MARKER = re.compile(r"<!-- council: ([a-z-]+) -->")
MARKERS = {"exit-codes": exit_codes_table, "submit-exit-codes": lambda: command_epilog("submit")}


def generated_pages() -> dict[str, str]:
    """Every generated file of the site: its path under ``docs/`` -> its content."""
    return {
        "reference/cli.md": cli_page(),
        "reference/config.md": config_page(),
        "reference/config.schema.json": config_schema_json(),
        "reference/sim-config.md": sim_config_doc(),
        "reference/sim-config.schema.json": sim_config_schema_json(),
        "reference/run-folder.md": run_folder_page(),
        "benchmarks.md": render_docs.render(),
    }


def fill_markers(markdown: str) -> str:
    """``markdown`` with each ``<!-- council: NAME -->`` replaced by the table it names."""
    def table(match: re.Match[str]) -> str:
        if match[1] not in MARKERS:
            raise ValueError(f"unknown docs marker {match[0]}")
        return MARKERS[match[1]]()
    return MARKER.sub(table, markdown)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, content in generated_pages().items():
        if files.get_file_from_path(path) is not None:
            raise ValueError(f"docs/{path} is generated at build time: remove the committed copy")
        files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return fill_markers(markdown)
