"""File redirections of a command line: which read (`< file`), what a redirection gives a
command as its standard input, and what an output one writes."""

from __future__ import annotations

from agentledger.shell.knowledge import DESTRUCTIVE, MUTATING, UNKNOWN
from agentledger.shell.words import node_word

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

    from agentledger.shell.knowledge import Knowledge

__all__ = ["is_empty_input", "is_input", "redirect_parts"]


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


def redirect_parts(
    node: Node, knowledge: Knowledge
) -> tuple[list[tuple[str, str, str]], str | None]:
    """What the file redirection `node` does: its parts (text, class, why) and the file it
    writes, if any (an input redirection has none)."""
    operator, target = "", None
    for index, child in enumerate(node.children):
        field = node.field_name_for_child(index)
        if field == "destination":
            if target is None:
                target = child
        elif field != "descriptor" and not child.is_named:
            operator = child.type
    if target is None or (operator.startswith("<") and operator != "<>"):
        return [], None
    destination = node_word(target)
    shown = f"{operator} {destination.raw}"
    if operator in (">&", "<&") and (target.type == "number" or destination.value == "-"):
        # Duplicating (2>&1) or closing (>&-) writes no file; >&3 writes where 3 leads.
        if operator == ">&" and destination.value not in ("1", "2", "-"):
            return [(shown, UNKNOWN, f"output to descriptor {destination.raw}: anywhere")], None
        return [], None
    if destination.value is None:
        return [(shown, MUTATING, f"output goes to {destination.raw}, named at run time")], None
    from agentledger.shell.paths import write_target

    path = destination.value
    destructive = knowledge.redirects.get("destructive", ())
    kind, what = write_target(path, destructive=destructive)
    if kind is None:
        return [], None
    if kind == DESTRUCTIVE:
        found = [(shown, DESTRUCTIVE, f"output redirected onto {what}")]
    else:
        found = [(shown, MUTATING, f"output redirected to {path} writes {what}")]
    return found, destination.raw.strip("'\"")
