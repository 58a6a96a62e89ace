"""What a redirection gives a command as its standard input."""

from __future__ import annotations

from agentledger.shell.words import node_word

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node


def is_input(redirect: Node) -> bool:
    """True for `< file` (and `<&`): the command's stdin is a file the gate cannot see."""
    for child in redirect.children:
        if not child.is_named and child.type.startswith("<") and child.type != "<>":
            return True
    return False


def is_empty_input(redirect: Node) -> bool:
    """True for `< /dev/null` exactly: the command reads nothing."""
    destination = redirect.child_by_field_name("destination")
    return (
        is_input(redirect)
        and destination is not None
        and node_word(destination).value == "/dev/null"
    )
