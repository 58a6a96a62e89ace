"""pydantic's plugin search, answered cheaply when no pydantic plugin is installed.

The first validator pydantic builds in a process looks for plugins: it reads the entry points
of every installed distribution through importlib.metadata (in an environment of a few hundred
packages, about a bare interpreter's start-up). A command run again and again (`agentledger
label`) pays that every time, to find none. `skip_empty_plugin_search` looks for the group the
cheap way, reading each distribution's entry_points.txt as bytes; when no distribution names
pydantic there, it gives pydantic the answer its own search would give (no plugins, cached in
`pydantic.plugin._loader._plugins`). When one does, or the search cannot be sure (a zip on
sys.path, a distribution finder of another kind, PYDANTIC_DISABLE_PLUGINS set, a pydantic
whose loader keeps its cache elsewhere), it leaves everything to pydantic: a user's real
plugin is loaded and used as always. Unlike setting PYDANTIC_DISABLE_PLUGINS, this changes
nothing a child process inherits.

pydantic's plugin loader imports importlib.metadata when it is imported (about a third of a
bare interpreter's start-up, for its email and zip parsers), though it only uses it to search.
`skip_empty_plugin_search` imports the loader with importlib.metadata deferred
(`_import_plugin_loader`): the loader's `entry_points` is a stand-in that imports the real one
when first called, and calls it, so a search that does happen is pydantic's own.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["pydantic_plugins_installed", "skip_empty_plugin_search"]


def pydantic_plugins_installed() -> bool | None:
    """Whether an installed distribution may declare a pydantic plugin (a ``[pydantic]``
    section in its entry_points.txt); None when this cannot tell (importlib.metadata could see
    distributions that this does not)."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if finder is not PathFinder and hasattr(finder, "find_distributions"):
            return None
    for entry in sys.path:
        try:
            listing = os.scandir(entry or ".")
        except NotADirectoryError:  # a zip or an egg file: its distributions are not read here
            return None
        except OSError:
            continue
        with listing:
            for item in listing:
                if not item.name.lower().endswith((".dist-info", ".egg-info")):
                    continue
                try:
                    with open(os.path.join(item.path, "entry_points.txt"), "rb") as file:
                        if _names_the_group(file.read()):
                            return True
                except OSError:  # none (or a one-file egg-info): no entry points
                    continue
    return False


def _names_the_group(text: bytes) -> bool:
    """Whether entry_points.txt `text` has a ``[pydantic]`` section (in any case or spacing:
    more than importlib.metadata reads as the group, never less)."""
    if b"pydantic" not in text.lower():
        return False
    lines = (line.strip() for line in text.splitlines())
    headers = (line for line in lines if line.startswith(b"[") and line.endswith(b"]"))
    return any(header.strip(b"[] \t").lower() == b"pydantic" for header in headers)


def skip_empty_plugin_search() -> bool:
    """Tell pydantic it has no plugins, when none is installed and it has not searched yet;
    whether it did. Call before the process builds its first validator."""
    if "PYDANTIC_DISABLE_PLUGINS" in os.environ or pydantic_plugins_installed() is not False:
        return False
    _loader = _import_plugin_loader()
    if getattr(_loader, "_plugins", ()) is not None:  # searched already, or another pydantic
        return False
    _loader._plugins = {}
    return True


def _import_plugin_loader() -> Any:
    """pydantic.plugin._loader, imported without importing importlib.metadata when neither is
    imported yet: its `entry_points` then imports the real one when it is first called."""
    if "pydantic.plugin._loader" in sys.modules or "importlib.metadata" in sys.modules:
        from pydantic.plugin import _loader

        return _loader
    from importlib import import_module
    from types import ModuleType

    import_module("pydantic.plugin")  # the package (and pydantic) first: only the loader is
    # imported while the stand-in is there

    def entry_points(**params: Any) -> Any:
        from importlib.metadata import entry_points as search

        return search(**params)

    stand_in = ModuleType("importlib.metadata")
    stand_in.entry_points = entry_points  # type: ignore[attr-defined]
    sys.modules["importlib.metadata"] = stand_in
    try:
        from pydantic.plugin import _loader
    finally:
        if sys.modules.get("importlib.metadata") is stand_in:
            del sys.modules["importlib.metadata"]
    return _loader
