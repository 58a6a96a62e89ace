"""The command-line interface: thin click commands over the library, one module per group.

`app` is the click application; commands are imported only when they are run (or listed with
their help), so a command pays only for the parts of the library it uses. `exec_fast` and
`guard_fast` parse `agentledger exec` and `agentledger guard` by hand (with `fastargs`), without
click, because agents pay their start-up on every command. This module imports nothing, so
those fast paths stay fast.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["COMMANDS", "main"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("agentledger.cli.app"), name)
    globals()[name] = value
    return value
