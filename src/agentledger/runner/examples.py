"""The bundled examples: an offline scripted agent and its scenarios (see examples/ in the repo)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["examples_dir"]


def examples_dir() -> Path:
    """The directory of the packaged examples (`netops/agent`, `netops/suite`)."""
    return Path(__file__).resolve().parent.parent / "data" / "examples"
