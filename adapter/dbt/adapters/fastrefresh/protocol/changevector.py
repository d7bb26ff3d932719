"""The change vector (Oracle's ``CHANGE_VECTOR$$``): which master columns a change touched.

Encoding, as the seed traces show it (seed 004): bit *i* stands for the master's *i*-th
column (1-based, in table order); bit 0 is unused. Bytes run little-endian: byte 0 holds
bits 0-7, byte 1 bits 8-15, and so on, and the vector has as many bytes as the highest
column needs (``ncols // 8 + 1``).

- an insert is ``FE`` followed by ``FF`` bytes (every column "changed");
- a delete is all ``00``;
- the insert half of a key update (logged as delete + insert) is all ``FF``;
- an update sets the bits of the columns whose value changed: updating the 2nd column of a
  table is ``04``; the 11th and 17th columns give bytes ``00 08 02``.

>>> update_vector([2], 2).hex().upper()
'04'
>>> update_vector([11, 17], 17).hex().upper()
'000802'
>>> insert_vector(9).hex().upper()
'FEFF'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from dbt.adapters.fastrefresh.sqltext import sign_key


def vector_length(ncols: int) -> int:
    """Bytes needed for bits 0..ncols."""
    return ncols // 8 + 1


def insert_vector(ncols: int) -> bytes:
    return b"\xfe" + b"\xff" * (vector_length(ncols) - 1)


def delete_vector(ncols: int) -> bytes:
    return b"\x00" * vector_length(ncols)


def key_update_vector(ncols: int) -> bytes:
    return b"\xff" * vector_length(ncols)


def update_vector(changed: Iterable[int], ncols: int) -> bytes:
    """The vector of an update that changed the given 1-based column positions."""
    out = bytearray(vector_length(ncols))
    for position in changed:
        if not 1 <= position <= ncols:
            raise ValueError(f"column position {position} outside 1..{ncols}")
        out[position // 8] |= 1 << (position % 8)
    return bytes(out)


def changed_columns(vector: bytes) -> list[int]:
    """The 1-based column positions whose bits are set (bit 0 ignored)."""
    return [
        index * 8 + bit
        for index, byte in enumerate(vector)
        for bit in range(8)
        if byte >> bit & 1 and index * 8 + bit > 0
    ]


def mask(positions: Iterable[int], ncols: int) -> bytes:
    """A vector with the bits of ``positions`` set, to test an update against."""
    return update_vector(positions, ncols)


def sql_update_vector(
    old: Sequence[str], new: Sequence[str], signed: Mapping[int, str] | None = None
) -> str:
    """SQL for the vector of an update: compare ``old[i]`` with ``new[i]`` per column.

    ``old`` and ``new`` are SQL expressions for all master columns in table order
    (position = index + 1); ``signed``: the type of each column (by index) whose -0.0
    and 0.0 differ here (``sqltext.sign_key``).
    """
    signed = signed or {}
    ncols = len(old)
    byte_sql = []
    for byte in range(vector_length(ncols)):
        terms = []
        for bit in range(8):
            position = byte * 8 + bit
            if position == 0 or position > ncols:
                continue
            before, after = old[position - 1], new[position - 1]
            same = f"{before} <=> {after}"
            kind = signed.get(position - 1)
            if kind is not None:
                same += f" AND {sign_key(before, kind)} <=> {sign_key(after, kind)}"
            terms.append(f"IF({same}, 0, {1 << bit})")
        value = " + ".join(terms) if terms else "0"
        byte_sql.append(f"lpad(hex({value}), 2, '0')")
    return f"unhex(concat({', '.join(byte_sql)}))"


def sql_bytes(vector: bytes) -> str:
    """A binary literal: ``X'FE'``."""
    return f"X'{vector.hex().upper()}'"


def sql_touches(vector_sql: str, positions: Iterable[int], ncols: int) -> str:
    """SQL that is true when the vector has any bit of ``positions`` set."""
    wanted = update_vector(positions, ncols)
    tests = []
    for index, byte in enumerate(wanted):
        if byte:
            value = f"conv(hex(substring({vector_sql}, {index + 1}, 1)), 16, 10)"
            tests.append(f"(cast({value} AS INT) & {byte}) <> 0")
    return "(" + " OR ".join(tests) + ")" if tests else "FALSE"
