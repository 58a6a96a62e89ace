"""agentledger.extensions names every extension point: each one exists, and every entry-point
group the library reads is named there."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from agentledger.extensions import ENTRY_POINT_GROUPS, REGISTRIES, ExtensionPoint
from agentledger.lazy import load

SRC = Path(__file__).resolve().parents[1] / "src" / "agentledger"


@pytest.mark.parametrize("point", ENTRY_POINT_GROUPS, ids=lambda p: p.name)
def test_each_entry_point_group_is_the_one_its_module_reads(point: ExtensionPoint) -> None:
    assert load(point.target) == point.name


@pytest.mark.parametrize("point", REGISTRIES, ids=lambda p: p.name)
def test_each_registry_exists(point: ExtensionPoint) -> None:
    registry = load(point.target)
    if isinstance(registry, Mapping | tuple):
        assert registry, f"{point.target} is empty: the built-in entries are missing"
    else:
        assert callable(registry), point.target


def test_every_entry_point_group_read_is_named() -> None:
    """A group read anywhere in the library (``entry_points(group=...)`` with a constant) is
    one of ENTRY_POINT_GROUPS."""
    named = {point.name for point in ENTRY_POINT_GROUPS}
    found = set()
    for path in SRC.rglob("*.py"):
        found.update(re.findall(r"""["'](agentledger\.[a-z_]+)["']""", path.read_text()))
        # plugin_search.py only stands in for importlib.metadata while pydantic looks for
        # its own plugins (no group of ours is read there).
        readers = {"backends.py", "custom.py", "plugin_search.py"}
        assert "entry_points(" not in path.read_text() or path.name in readers
    groups = {name for name in found if name.endswith(("_backends", "scorers"))}
    assert groups == named


def test_a_registered_index_backend_is_used_by_its_scheme(tmp_path: Path) -> None:
    """The registry the file names is the one ledgers are opened through."""
    from agentledger.store import backends
    from agentledger.store.index.sqlite import SQLiteIndex

    opened: list[str] = []

    def factory(root: Path, rest: str) -> SQLiteIndex:
        opened.append(rest)
        return SQLiteIndex(root / "other.sqlite")

    backends.register_index("mine", factory)
    try:
        backends.make_index("mine://here", tmp_path).close()
    finally:
        backends._index.pop("mine")
    assert opened == ["here"] and (tmp_path / "other.sqlite").is_file()
