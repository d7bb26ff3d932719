"""The adapter's import direction (scripts/check_layers.py, also run by `make lint`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.conftest import REPO_ROOT


def _checker():  # type: ignore[no-untyped-def]
    path = Path(REPO_ROOT) / "scripts" / "check_layers.py"
    spec = importlib.util.spec_from_file_location("check_layers", path)
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
