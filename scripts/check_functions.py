"""Check the adapter's functions stay small: at most 60 lines and 5 positional parameters.

``self``/``cls`` do not count; parameters after ``*`` are keyword-only and do not count.
``make lint`` runs this.

Usage: python scripts/check_functions.py   (exit 1 and a list of offenders if any)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "adapter" / "dbt" / "adapters" / "fastrefresh"
MAX_LINES = 60
MAX_POSITIONAL = 5


def offenders(root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            where = f"{path.relative_to(root)}:{node.lineno} {node.name}"
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            positional = [*node.args.posonlyargs, *node.args.args]
            if positional and positional[0].arg in ("self", "cls"):
                positional = positional[1:]
            if lines > MAX_LINES:
                found.append(f"{where}: {lines} lines (at most {MAX_LINES}; split it)")
            if len(positional) > MAX_POSITIONAL:
                found.append(
                    f"{where}: {len(positional)} positional parameters (at most "
                    f"{MAX_POSITIONAL}; make the rest keyword-only)"
                )
    return found


def main() -> int:
    found = offenders()
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
