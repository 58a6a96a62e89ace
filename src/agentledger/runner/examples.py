"""The bundled examples: an offline scripted agent and its scenarios (see examples/ in the repo)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["examples_dir", "gates_dir", "suites_dir"]


def examples_dir() -> Path:
    """The directory of the packaged examples (`netops/agent`, `netops/suite`)."""
    return Path(__file__).resolve().parent.parent / "data" / "examples"


def suites_dir() -> Path:
    """The directory of the packaged scenario suites (`netops`: the sample runs' scenarios)."""
    return Path(__file__).resolve().parent.parent / "data" / "suites"


def gates_dir() -> Path:
    """The packaged gate specs (`netops/variant-a.yaml`, `netops/sentinel.yaml`)."""
    return Path(__file__).resolve().parent.parent / "data" / "gates"
