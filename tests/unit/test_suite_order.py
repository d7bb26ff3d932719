"""The default suite's longest-first order (``LONGEST_FIRST`` in tests/conftest.py)."""

from __future__ import annotations

import re

from tests.conftest import LONGEST_FIRST, REPO_ROOT, expected_seconds


def test_every_entry_names_a_test_module_class_or_function_that_exists() -> None:
    # A renamed test would leave its entry matching nothing: the order would quietly
    # lose it. (Parameter ids are generated, so only the names before them are checked.)
    for key in LONGEST_FIRST:
        module, *names = re.sub(r"\[.*\]$", "", key).split("::")
        source = (REPO_ROOT / module).read_text(encoding="utf-8")
        for name in names:
            assert re.search(rf"^\s*(def|class) {name}\b", source, re.M), (key, name)


def test_an_entry_covers_its_own_test_its_class_and_its_module() -> None:
    # The figures are re-measured now and then; what an entry covers is the rule checked.
    oracle = "tests/functional/test_oracle.py::test_views_equal_their_queries_after_every_refresh"
    for case in ("scn-sql-sync", "ts-java-deferred"):
        assert expected_seconds(f"{oracle}[{case}]") == LONGEST_FIRST[f"{oracle}[{case}]"] > 0
    assert expected_seconds(f"{oracle}[ts-sql-sync]") == 0  # another case of the same test
    dag = "tests/functional/test_dag.py::TestDagRefreshesFast"
    test = f"{dag}::test_every_level_refreshes_fast_after_random_dml"
    assert expected_seconds(test) == LONGEST_FIRST[dag] > 0
    demo = "tests/functional/test_demo.py"
    assert expected_seconds(f"{demo}::test_setup_doctor_and_log") == LONGEST_FIRST[demo] > 0
    assert expected_seconds("tests/functional/test_demo_other.py::test_x") == 0
    assert expected_seconds("tests/unit/test_sqltext.py::test_table_names") == 0
