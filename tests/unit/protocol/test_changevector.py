"""The change vector's encoding (seed 004) and its SQL."""

from __future__ import annotations

import pytest

from dbt.adapters.fastrefresh.protocol import changevector as cv


def test_change_vectors_follow_the_seed_encoding() -> None:
    # Seed 004: insert FE, delete 00, key-update insert FF, update of the 2nd column 04.
    assert cv.insert_vector(2).hex() == "fe"
    assert cv.delete_vector(2).hex() == "00"
    assert cv.key_update_vector(2).hex() == "ff"
    assert cv.update_vector([2], 2).hex() == "04"
    assert cv.update_vector([1], 2).hex() == "02"
    assert cv.update_vector([3, 5], 5).hex() == "28"
    # More than 8 columns: extra bytes, little-endian (11th and 17th → 00 08 02).
    assert cv.update_vector([11, 17], 17).hex() == "000802"
    assert cv.insert_vector(9).hex() == "feff"
    assert cv.changed_columns(bytes.fromhex("000802")) == [11, 17]
    with pytest.raises(ValueError):
        cv.update_vector([3], 2)


def test_touches_sql_tests_the_right_bytes() -> None:
    sql = cv.sql_touches("v", [2, 11], 17)
    assert "substring(v, 1, 1)" in sql and "& 4" in sql
    assert "substring(v, 2, 1)" in sql and "& 8" in sql
    assert cv.sql_touches("v", [], 3) == "FALSE"
