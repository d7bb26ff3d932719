"""Check the adapter's import direction: packages in layers, imports flowing downward only.

Every import counts, at module level or inside a function or ``TYPE_CHECKING``: a module
may import modules of its own layer's package and of lower layers, never of a higher
layer, and the import graph between modules has no cycle. ``make lint`` runs this; the
layers are documented in docs/architecture.md.

Usage: python scripts/check_layers.py   (exit 1 and a list of violations if any)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "dbt.adapters.fastrefresh"
ROOT = Path(__file__).resolve().parents[1] / "adapter" / "dbt" / "adapters" / "fastrefresh"

# Lowest first. A name is a subpackage or a top-level module of the package.
LAYERS: list[tuple[str, ...]] = [
    ("__version__", "errors", "sqltext"),  # leaves: names, quoting, the error type
    ("runtime",),  # embedded Spark, jars, executor, process state, faults, clock
    ("iceberg",),  # columns, snapshots, commits and the files they touched
    ("protocol",),  # the durable state, decisions, change vectors, the environment
    ("ivm",),  # the planner: analysis and SQL generation (pure)
    ("mlog",),  # log DDL, capture, how views consume a log
    ("engine",),  # refresh and inspection
    ("registry",),  # the published registry and its migrations
    ("admin", "connections", "impl", "__init__"),  # the dbt surface
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def unit(module: str) -> str:
    """The layer unit of a module: its subpackage, or itself when top-level."""
    return module.split(".")[0]


def imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules ``path`` imports, wherever the import statement is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == PACKAGE or node.module.startswith(PACKAGE + "."):
                base = node.module[len(PACKAGE) :].lstrip(".")
                for alias in node.names:
                    candidate = f"{base}.{alias.name}" if base else alias.name
                    found.add(candidate if candidate in modules else base)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + "."):
                    found.add(alias.name[len(PACKAGE) + 1 :])
    return {m for m in found if m}


def graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(paths)
    return {m: imports(p, modules) - {m} for m, p in sorted(paths.items())}


def violations(edges: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in edges.items():
        if unit(module) not in LAYER:
            problems.append(f"{module}: not in any layer (add it to LAYERS in {__file__})")
            continue
        for target in sorted(targets):
            if target not in edges:
                problems.append(f"{module} imports {target}, which is not a module")
            elif LAYER[unit(target)] > LAYER[unit(module)]:
                problems.append(
                    f"{module} (layer {LAYER[unit(module)]}) imports {target} "
                    f"(layer {LAYER[unit(target)]}): imports must flow downward"
                )
            elif (
                LAYER[unit(target)] == LAYER[unit(module)]
                and unit(target) != unit(module)
                and "." in target
            ):
                problems.append(f"{module} imports {target}: another package of its layer")
    problems += [f"import cycle: {' -> '.join(c)}" for c in cycles(edges)]
    return problems


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append([*sorted(group), sorted(group)[0]])

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def main() -> int:
    problems = violations(graph())
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} import direction problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
