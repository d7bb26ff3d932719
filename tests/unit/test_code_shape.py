"""The adapter's shape: import direction (scripts/check_layers.py) and small functions
(scripts/check_functions.py), both also run by `make lint`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.conftest import REPO_ROOT


def _checker(name: str = "check_layers"):  # type: ignore[no-untyped-def]
    path = Path(REPO_ROOT) / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_adapter_imports_only_downward_and_has_no_cycle() -> None:
    checker = _checker()
    edges = checker.graph()
    assert "engine.refresh" in edges and "mlog.ddl" in edges["engine.refresh"]
    assert checker.violations(edges) == []


def test_an_upward_import_and_a_cycle_are_reported_and_downward_ones_are_not() -> None:
    checker = _checker()
    edges = {
        "errors": set(),
        "mlog.ddl": {"engine.refresh"},  # upward
        "engine.refresh": {"mlog.ddl", "errors"},
        "ivm.analysis": {"runtime.process"},
        "runtime.process": set(),
        "impl": {"admin"},  # the dbt surface's modules may import each other
        "admin": {"errors"},
    }
    problems = checker.violations(edges)
    assert any("mlog.ddl (layer 5) imports engine.refresh (layer 6)" in p for p in problems)
    assert "import cycle: engine.refresh -> mlog.ddl -> engine.refresh" in problems
    assert len(problems) == 2
    assert checker.violations({"nowhere.x": set()}) == [
        f"nowhere.x: not in any layer (add it to LAYERS in {checker.__file__})"
    ]


def test_no_function_is_long_or_takes_many_positional_arguments(tmp_path: Path) -> None:
    checker = _checker("check_functions")
    assert checker.offenders() == []
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    (tmp_path / "m.py").write_text(
        f"def long():\n{body}\n\ndef wide(a, b, c, d, e, f):\n    pass\n\n"
        "def fine(self, a, b, c, d, e, *, f):\n    pass\n"
    )
    assert checker.offenders(tmp_path) == [
        "m.py:1 long: 61 lines (at most 60; split it)",
        "m.py:63 wide: 6 positional parameters (at most 5; make the rest keyword-only)",
    ]
