"""The C scan of `_strict_scan.c` (built by the Makefile; absent without a C compiler)."""

from typing_extensions import Buffer

def certain(raw: Buffer, max_depth: int, /) -> bool:
    """True when `raw` (JSON that orjson accepted) has certainly no duplicate key, no integer
    of 19 digits or more and no container deeper than `max_depth`; False when unsure."""
