"""Sizes as people write them (``100MB``) and read them (``100 MB``), for the artifact limit."""

from __future__ import annotations

import re

__all__ = ["format_size", "parse_size"]

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b|bytes)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes in a size such as ``100MB``, ``1.5GB``, ``512 KiB`` or ``1048576`` (units of 1024)."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size (examples: 100MB, 1.5GB, 52428800)")
    unit = (match.group(2) or "").lower()
    unit = unit if unit in ("b", "bytes") else unit[:1]
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise ValueError(f"{text!r}: a size limit must be more than 0 bytes")
    return size


def format_size(size: int) -> str:
    """A human size: ``100 MB``, ``1.5 KB``."""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return (
                f"{value:.0f} {unit}"
                if unit == "bytes" or value == int(value)
                else (f"{value:.1f} {unit}")
            )
        value /= 1024
    raise AssertionError("unreachable")
