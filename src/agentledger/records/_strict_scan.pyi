"""The C scan of `_strict_scan.c` (built by the Makefile; absent without a C compiler)."""

from typing_extensions import Buffer

def certain(raw: Buffer, max_depth: int, /) -> bool:
    """True when `raw` (JSON that orjson accepted) has certainly no duplicate key, no integer
    of 19 digits or more and no container deeper than `max_depth`; False when unsure."""

def items(raw: Buffer, max_depth: int, wanted: int, /) -> bytes | None:
    """`certain`'s answer, and when it is True where the items of the top-level list (`wanted`
    1) or of the top-level object's ``history`` list (2) lie: the positions of its brackets
    and of the commas between its items, as 64-bit integers of the machine's byte order;
    None when unsure or when there is no such list."""
