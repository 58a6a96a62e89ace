"""The command-line interface: thin click commands over the library, one module per group.

`app` is the click application; commands are imported only when they are run (or listed with
their help), so a command pays only for the parts of the library it uses. `exec_fast` and
`guard_fast` parse `agentledger exec` and `agentledger guard` by hand (with `fastargs`), without
click, because agents pay their start-up on every command. This module imports nothing, so
those fast paths stay fast.
"""

from __future__ import annotations

from agentledger.lazy import lazy_exports

__all__ = ["COMMANDS", "main"]

__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(__all__, "agentledger.cli.app"))
