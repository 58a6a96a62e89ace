"""Loading on first use, made once here: a ``"module:attr"`` target (`load`), and the names
of a package (`lazy_exports`: its `__getattr__` and `__dir__`).

Light entry points (the gated shell, which every agent command pays for; import workers,
which start before the library is loaded; `agentledger --help`) import a package without
importing everything it exports, and registries (providers, importers, commands) name what
they hold as targets, imported when chosen. This module imports nothing but importlib.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["lazy_exports", "load"]


def load(target: str) -> Any:
    """The object a ``"module:attr"`` target names (``"module:a.b"``: an attribute of one),
    importing its module; ImportError or AttributeError when it is not there."""
    module, _, attr = target.partition(":")
    value = importlib.import_module(module)
    for name in attr.split(".") if attr else ():
        value = getattr(value, name)
    return value


def lazy_exports(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose names live in the modules of `homes`
    (name -> module; a name found under another name there is written ``module:attr``)."""

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = load(home if ":" in home else f"{home}:{name}")
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return getattr_, dir_
