"""Hand parsing of argv for the commands that must start fast (`exec`, `guard`): no click.

Imports nothing beyond the standard library's builtins, so that a command run before every
tool call pays only for what it uses.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["UsageError", "option_value"]


class UsageError(Exception):
    """A command line the command cannot take (exit 2, with the usage)."""


def option_value(word: str, argv: Sequence[str], index: int) -> tuple[str, str, int]:
    """An option that takes a value, as `--name=value` or `--name value` (at argv[index]).

    Returns the option's name, its value, and the index of the next word.
    """
    name, equals, value = word.partition("=")
    if not equals:
        if index >= len(argv):
            raise UsageError(f"Option '{name}' requires an argument.")
        value = argv[index]
        index += 1
    return name, value, index
