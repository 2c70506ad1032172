"""The rooms of the code base and their order: a module imports only from its own room or a room below it.

Every ``.py`` under council/, bank/, elicitor/ and aggregator/ is parsed; every import of our own code is
checked (module level and inside functions, ``import x`` and ``from x import y``, relative imports
resolved). ``from package import name`` counts as an import of ``package.name`` when that is a module.

The same walk checks two more things: no module is over ``MAX_LINES`` lines, and no import circle joins our
modules (every import counts, ``if TYPE_CHECKING:`` and in-function ones included; a circle is reported as its
chain of modules with the file:line of each import).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("council", "bank", "elicitor", "aggregator")

# Bottom to top: (room, module prefixes). A room may import from itself and from the rooms before it.
ROOMS: list[tuple[str, tuple[str, ...]]] = [
    ("aggregator", ("aggregator",)),  # pure numpy: nothing of ours
    ("core", ("council.core",)),
    ("bank", ("bank",)),
    ("protocol", ("council.protocol",)),
    ("store", ("council.store",)),
    ("transport", ("council.transport",)),
    ("elicitor", ("elicitor",)),
    ("grading", ("council.grading",)),
    ("batching", ("council.batching",)),  # the batch transport: a judge pool's batch judges
    ("scoring", ("council.scoring",)),
    ("cluster", ("council.cluster",)),
    ("sim", ("council.sim",)),
    ("importers", ("council.importers",)),
    ("report", ("council.report",)),  # report.html: imports aggregator, core, protocol, store, scoring only
    ("run", ("council.run",)),
    ("service", ("council.service",)),
    ("tools", ("council.tools",)),
    ("inspect", ("council.inspect",)),  # the council as an inspect_ai scorer
    ("console", ("council.console",)),
    ("cli", ("council.cli",)),
]
LEVEL = {room: level for level, (room, _) in enumerate(ROOMS)}

# Packages that only group rooms, imported by Python on the way to a room's module: a docstring and nothing else.
GROUPING = ("council",)
# Room packages whose __init__ is the room's public interface (its modules are private) rather than a docstring.
# council.cli: the `council` command's main and entry (pyproject's script), its parser and exit codes.
INTERFACE_PACKAGES = ("council.sim", "council.importers", "council.inspect", "council.cli")


def source_files() -> dict[str, Path]:
    """Module name -> file, for every module of our packages."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


MODULES = source_files()


def room_of(module: str) -> str | None:
    best = None
    for room, prefixes in ROOMS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[1])):
                best = (room, prefix)
    return best[0] if best else None


def is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def imports_of(module: str) -> list[tuple[int, str]]:
    """(line, imported module) for every import of our own code in ``module``, wherever it sits in the file."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"), filename=str(MODULES[module]))
    package = module if is_package(module) else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.append((node.lineno, submodule if submodule in MODULES else source))
    return sorted({(line, target) for line, target in found if target.split(".")[0] in PACKAGES})


def violations() -> list[str]:
    problems = []
    for module, path in MODULES.items():
        where = path.relative_to(REPO)
        room = room_of(module)
        if room is None:
            if module not in GROUPING:
                problems.append(f"{where}: module {module} belongs to no room")
            continue
        for line, target in imports_of(module):
            target_room = room_of(target)
            if target not in MODULES:
                problems.append(f"{where}:{line}: imports {target}, which does not exist")
            elif target_room is None:
                problems.append(f"{where}:{line}: imports {target}, which belongs to no room")
            elif LEVEL[target_room] > LEVEL[room]:
                problems.append(f"{where}:{line}: {room} imports {target} from {target_room}, a room above it")
    return problems


def test_rooms_cover_the_packages():
    assert {prefix.split(".")[0] for _, prefixes in ROOMS for prefix in prefixes} == set(PACKAGES)
    for _, prefixes in ROOMS:
        for prefix in prefixes:
            assert prefix in MODULES, f"room prefix {prefix} is not a module"


def test_no_import_points_to_a_room_above():
    problems = violations()
    assert not problems, "\n" + "\n".join(problems)


DOCSTRING_ONLY = [p for p in (*GROUPING, *(p for _, ps in ROOMS for p in ps))
                  if p.startswith("council") and p in MODULES and is_package(p) and p not in INTERFACE_PACKAGES]


@pytest.mark.parametrize("package", DOCSTRING_ONLY)
def test_room_packages_hold_only_a_one_line_docstring(package):
    """Importing one module of a room loads nothing else of the room."""
    body = ast.parse(MODULES[package].read_text(encoding="utf-8")).body
    assert len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant), package
    assert "\n" not in body[0].value.value.strip(), package


# The embedded provider plays the judges and the models under test: it must be a black box to the council, so
# that a bug in the council's prompts or parsers can show in its answers instead of being agreed with. It reads
# prompts with its own reader and decides vendors from its own world (council/sim/_world.py).
SIM_MUST_NOT_IMPORT = ("council.protocol", "elicitor", "council.core.vendors")


def sim_imports_of_the_council() -> list[str]:
    return [f"{MODULES[module].relative_to(REPO)}:{line}: imports {target}"
            for module in MODULES if module == "council.sim" or module.startswith("council.sim.")
            for line, target in imports_of(module)
            if any(target == banned or target.startswith(banned + ".") for banned in SIM_MUST_NOT_IMPORT)]


def test_the_embedded_provider_imports_nothing_of_the_council_it_plays_against():
    problems = sim_imports_of_the_council()
    assert not problems, "\n" + "\n".join(problems)


# No module is longer than this many lines (counted as `wc -l` counts them): a longer one holds more than one room's
# worth of code and is split along its seams.
MAX_LINES = 600


def too_long() -> list[str]:
    found = []
    for path in MODULES.values():
        lines = path.read_bytes().count(b"\n")
        if lines > MAX_LINES:
            found.append(f"{path.relative_to(REPO).as_posix()}: {lines} lines, over {MAX_LINES}")
    return found


def test_no_module_is_over_the_line_limit():
    problems = too_long()
    assert not problems, "\n" + "\n".join(problems)


def import_graph() -> dict[str, dict[str, int]]:
    """Module -> {module it imports: line of the first such import}, among our own modules."""
    graph: dict[str, dict[str, int]] = {}
    for module in MODULES:
        edges: dict[str, int] = {}
        for line, target in imports_of(module):
            if target in MODULES and target != module:
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The groups of modules that reach each other through imports (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            advanced = False
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    advanced = True
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def shortest_cycle_through(graph: dict[str, dict[str, int]], start: str, group: set[str]) -> list[str]:
    """The shortest chain of imports from ``start`` back to itself, within ``group``."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node]):
                if target not in group:
                    continue
                if target == start:
                    chain = [node]
                    while chain[-1] != start:
                        chain.append(came_from[chain[-1]])
                    return [*reversed(chain), start]
                if target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    return []


def import_cycles() -> list[str]:
    """Each import circle among our modules, as the chain of its imports with the file:line of each."""
    graph = import_graph()
    cycles = []
    for group in strongly_connected(graph):
        seen = set()
        for start in group:
            chain = shortest_cycle_through(graph, start, set(group))
            turn = chain.index(min(chain[:-1]))
            key = tuple(chain[turn:-1] + chain[:turn])
            if key in seen:
                continue
            seen.add(key)
            steps = [f"{MODULES[a].relative_to(REPO).as_posix()}:{graph[a][b]} imports {b}"
                     for a, b in zip(chain, chain[1:])]
            cycles.append(" -> ".join(chain) + "\n    " + "\n    ".join(steps))
    return cycles


def test_no_import_circle():
    problems = import_cycles()
    assert not problems, "\n" + "\n".join(problems)


def test_an_import_circle_is_found_and_reported_with_its_lines():
    graph = {"a": {"b": 3}, "b": {"c": 5}, "c": {"a": 7, "d": 1}, "d": {}}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert shortest_cycle_through(graph, "b", {"a", "b", "c"}) == ["b", "c", "a", "b"]
