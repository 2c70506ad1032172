"""The docs site's build hook (``docs/hooks/build.py``), loaded as MkDocs loads it, for the tests that check what
the build generates."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
HOOK = DOCS / "hooks" / "build.py"


@cache
def hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("council_docs_build_hook", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nav_pages() -> list[str]:
    """Every page the site's nav lists (``mkdocs.yml``), in order."""
    import re

    return re.findall(r":\s*([\w./-]+\.md)\s*$", (REPO / "mkdocs.yml").read_text(encoding="utf-8"), re.M)
