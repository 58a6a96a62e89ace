"""Classify a shell command line as read-only, mutating, destructive or unknown.

The line is parsed with tree-sitter-bash; every simple command in it counts: the parts of
pipelines, `&&`/`||`/`;` lists, subshells, `$(...)` and `<(...)` substitutions, loops and
function bodies. Wrappers (`sudo`, `env`, `timeout`, `xargs`, `ssh host CMD`, `sh -c '...'`,
`kubectl exec ... --`) are looked through, output redirections to files count as writes, and
SQL given to psql or mysql is analysed. The class of the line is that of its most severe part.

What each command means is data (`commands.yaml`, see `knowledge`); this module only reads
the shell. A line made of plain words only (`iptables -L -n`) is split without the parser,
which gives the same words and costs nothing to load.
"""

from __future__ import annotations

import os
from _thread import allocate_lock

from agentledger.shell.evaluate import evaluate
from agentledger.shell.knowledge import (
    DESTRUCTIVE,
    MUTATING,
    UNKNOWN,
    Knowledge,
    glob_match,
    load_knowledge,
    most_severe,
)
from agentledger.shell.words import Word, node_text, node_word, simple_words

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from tree_sitter import Node, Parser

__all__ = [
    "MAX_DEPTH",
    "Classification",
    "CommandVisitor",
    "Part",
    "classify",
    "default_knowledge",
    "walk",
]

MAX_DEPTH = 12
"""How deep wrappers and `sh -c` strings may nest before the command counts as unknown."""

_SUBSTITUTIONS = ("command_substitution", "process_substitution")
_parser: Parser | None = None
_parser_lock = allocate_lock()
_knowledge: Knowledge | None = None


class Part:
    """One simple command (or redirection) inside a command line, with its class and why."""

    __slots__ = ("command", "kind", "reason", "via")

    def __init__(self, command: str, kind: str, reason: str, via: tuple[str, ...] = ()) -> None:
        self.command = command
        self.kind = kind
        self.reason = reason
        self.via = via

    def as_dict(self) -> dict[str, Any]:
        """The part as logged in a ShellEvent's `parts`."""
        out: dict[str, Any] = {
            "command": self.command,
            "classification": self.kind,
            "reason": self.reason,
        }
        if self.via:
            out["via"] = list(self.via)
        return out

    def __repr__(self) -> str:
        return f"Part({self.command!r}, {self.kind!r}, {self.reason!r})"


class Classification:
    """The class of a whole command line (its most severe part) and its parts."""

    __slots__ = ("command", "kind", "parts")

    def __init__(self, command: str, parts: list[Part]) -> None:
        self.command = command
        self.parts = parts
        self.kind = most_severe(part.kind for part in parts)

    def as_dict(self) -> dict[str, Any]:
        """The classification as printed by `agentledger exec --batch`."""
        return {
            "command": self.command,
            "classification": self.kind,
            "parts": [part.as_dict() for part in self.parts],
        }

    def __repr__(self) -> str:
        return f"Classification({self.command!r}, {self.kind!r}, {self.parts!r})"


def default_knowledge() -> Knowledge:
    """The packaged command knowledge, loaded once."""
    global _knowledge
    if _knowledge is None:
        _knowledge = load_knowledge()
    return _knowledge


class CommandVisitor:
    """What a walk of a command line tells a caller besides the parts: each simple command it
    meets and each file an output redirection writes. Subclass and override what you need;
    the base ignores everything.

    The rules judge needs the commands themselves (their words, the wrappers they run under),
    not only the class of the line; a visitor gets them from the very walk that classifies, so
    both always read the line the same way.
    """

    def command(
        self,
        words: Sequence[Word],
        via: tuple[str, ...],
        text: str,
        kind: str | None,
        reason: str | None,
    ) -> None:
        """A simple command, outermost first: its words, the wrappers it runs under (`via`),
        its text, and its own class and why (None for a wrapper that only runs another)."""

    def writes(self, target: str, via: tuple[str, ...]) -> None:
        """An output redirection of the last command under `via` writes the file `target`."""


def classify(
    command: str, knowledge: Knowledge | None = None, *, parser_only: bool = False
) -> Classification:
    """Classify the shell command line `command`.

    `parser_only` skips the plain-words shortcut, so that tests can check both give the same.
    """
    return walk(command, CommandVisitor(), knowledge, parser_only=parser_only)


def walk(
    command: str,
    visitor: CommandVisitor,
    knowledge: Knowledge | None = None,
    *,
    parser_only: bool = False,
) -> Classification:
    """Classify `command` as `classify` does, telling `visitor` what the walk meets."""
    walker = _Walker(knowledge or default_knowledge(), parser_only, visitor)
    walker.line(command, None, (), 0)
    return Classification(command, walker.parts)


def _is_input(redirect: Node) -> bool:
    """True for `< file` (and `<&`): the command's stdin is a file the gate cannot see."""
    for child in redirect.children:
        if not child.is_named and child.type.startswith("<") and child.type != "<>":
            return True
    return False


def _get_parser() -> Parser:
    global _parser
    if _parser is None:
        from tree_sitter import Language, Parser

        _parser = Parser(Language(_bash_language()))
    return _parser


def _bash_language() -> object:
    """The tree-sitter-bash grammar, loaded from its extension module directly.

    `import tree_sitter_bash` also imports importlib.resources (for its highlight queries),
    which costs more than everything else a gated command loads; the grammar does not need it.
    """
    import importlib.machinery
    import importlib.util

    try:
        spec = importlib.util.find_spec("tree_sitter_bash")
        folders = list(spec.submodule_search_locations or ()) if spec else []
        for folder in folders:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "_binding" + suffix)
                if os.path.isfile(path):
                    name = "tree_sitter_bash._binding"
                    loader = importlib.machinery.ExtensionFileLoader(name, path)
                    binding = importlib.util.spec_from_file_location(name, path, loader=loader)
                    if binding is not None:
                        module = importlib.util.module_from_spec(binding)
                        loader.exec_module(module)
                        return module.language()
    except (ImportError, OSError, AttributeError):
        pass
    import tree_sitter_bash

    return tree_sitter_bash.language()


class _Walker:
    """Walks a parsed command line and collects its parts."""

    def __init__(self, knowledge: Knowledge, parser_only: bool, visitor: CommandVisitor) -> None:
        self.knowledge = knowledge
        self.parser_only = parser_only
        self.visitor = visitor
        self.parts: list[Part] = []
        self.parse_errors = 0

    def add(self, command: str, kind: str, reason: str, via: tuple[str, ...]) -> None:
        self.parts.append(Part(command, kind, reason, via))

    def own(self, words: list[Word], via: tuple[str, ...], text: str, kind: str, why: str) -> None:
        """A simple command's own class: a part, and news for the visitor."""
        self.visitor.command(words, via, text, kind, why)
        self.add(text, kind, why, via)

    def line(self, text: str, stdin: str | None, via: tuple[str, ...], depth: int) -> None:
        """Classify a whole command line (the top one, or one found inside another)."""
        if depth > MAX_DEPTH:
            self.add(text.strip(), UNKNOWN, "commands nested too deeply to follow", via)
            return
        if not self.parser_only:
            plain = simple_words(text)
            if plain is not None:
                if plain:
                    words = [Word(word, word) for word in plain]
                    self.argv(words, stdin, via, depth, " ".join(plain))
                return
        try:
            source = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            source = text.encode("utf-8", "replace")
        with _parser_lock:
            root = _get_parser().parse(source).root_node
        errors = self.parse_errors
        self.node(root, stdin, via, depth)
        if root.has_error and self.parse_errors == errors:
            # tree-sitter recovered without an ERROR node (a missing token): still unparsable.
            self.add(text.strip(), UNKNOWN, "does not parse as a shell command line", via)

    def node(self, node: Node, stdin: str | None, via: tuple[str, ...], depth: int) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, stdin, via, depth)
        elif kind == "redirected_statement":
            self.redirected(node, stdin, via, depth)
        elif kind == "pipeline":
            first = True
            for child in node.named_children:
                self.node(child, stdin if first else None, via, depth)
                first = False
        elif kind == "file_redirect":
            self.redirect(node, via)
        elif kind == "ERROR":
            self.parse_errors += 1
            near = node_text(node).strip()[:40]
            self.add(near, UNKNOWN, f"does not parse as shell near {near!r}", via)
            for child in node.named_children:
                self.node(child, None, via, depth)
        elif kind in ("comment", "heredoc_body", "heredoc_start", "heredoc_end"):
            return
        else:
            for child in node.named_children:
                self.node(child, None if kind in _SUBSTITUTIONS else stdin, via, depth)

    def substitutions(self, node: Node, via: tuple[str, ...], depth: int) -> None:
        """Classify the `$(...)` and `<(...)` inside a word: they run before the command."""
        if node.type in _SUBSTITUTIONS:
            self.node(node, None, via, depth)
            return
        for child in node.named_children:
            self.substitutions(child, via, depth)

    def redirected(self, node: Node, stdin: str | None, via: tuple[str, ...], depth: int) -> None:
        body = None
        outputs: list[Node] = []
        for index, child in enumerate(node.children):
            field = node.field_name_for_child(index)
            if field == "body":
                body = child
            elif child.type == "heredoc_redirect":
                stdin = self.heredoc(child, via, depth)
            elif child.type == "herestring_redirect":
                stdin = self.herestring(child, via, depth)
            elif child.type == "file_redirect":
                outputs.append(child)
            elif child.is_named:
                self.node(child, None, via, depth)
        if any(_is_input(redirect) for redirect in outputs):
            stdin = None
        if body is not None:
            self.node(body, stdin, via, depth)
        for redirect in outputs:
            self.redirect(redirect, via)

    def heredoc(self, node: Node, via: tuple[str, ...], depth: int) -> str | None:
        """The text a here-document feeds; commands piped after it are classified too."""
        text = None
        for child in node.named_children:
            if child.type == "heredoc_body":
                text = node_text(child)
                self.substitutions(child, via, depth)
            elif child.type not in ("heredoc_start", "heredoc_end"):
                self.node(child, None, via, depth)
        return text

    def herestring(self, node: Node, via: tuple[str, ...], depth: int) -> str | None:
        for child in node.named_children:
            self.substitutions(child, via, depth)
            return node_word(child).value
        return None

    def redirect(self, node: Node, via: tuple[str, ...]) -> bool:
        """Classify a file redirection; True when it is an input redirection."""
        operator, target = "", None
        for index, child in enumerate(node.children):
            field = node.field_name_for_child(index)
            if field == "destination":
                if target is None:
                    target = child
            elif field != "descriptor" and not child.is_named:
                operator = child.type
        if target is None:
            return False
        if operator.startswith("<") and operator != "<>":
            return True
        destination = node_word(target)
        shown = f"{operator} {destination.raw}"
        if operator in (">&", "<&") and (target.type == "number" or destination.value == "-"):
            # Duplicating (2>&1) or closing (>&-) a file descriptor writes no file.
            return False
        if destination.value is None:
            self.add(shown, MUTATING, f"output goes to {destination.raw}, a file named at run "
                     "time", via)  # fmt: skip
            return False
        rules = self.knowledge.redirects
        path = destination.value
        if any(glob_match(pattern, path) for pattern in rules.get("harmless", ())):
            return False
        if any(glob_match(pattern, path) for pattern in rules.get("destructive", ())):
            self.add(shown, DESTRUCTIVE, f"output redirected onto the device {path}", via)
        else:
            self.add(shown, MUTATING, f"output redirected to {path} writes a file", via)
        self.visitor.writes(destination.raw.strip("'\""), via)
        return False

    def command(self, node: Node, stdin: str | None, via: tuple[str, ...], depth: int) -> None:
        words: list[Word] = []
        outputs: list[Node] = []
        for index, child in enumerate(node.children):
            kind = child.type
            if kind == "command_name":
                for name in child.named_children:
                    words.append(node_word(name))
                    self.substitutions(name, via, depth)
            elif node.field_name_for_child(index) == "argument":
                words.append(node_word(child))
                self.substitutions(child, via, depth)
            elif kind == "file_redirect":
                outputs.append(child)
                if _is_input(child):
                    stdin = None
            elif kind == "herestring_redirect":
                stdin = self.herestring(child, via, depth)
            elif kind == "heredoc_redirect":
                stdin = self.heredoc(child, via, depth)
            elif child.is_named and kind != "comment":
                self.substitutions(child, via, depth)
        if words:
            self.argv(words, stdin, via, depth, node_text(node))
        for redirect in outputs:
            self.redirect(redirect, via)

    def argv(
        self, words: list[Word], stdin: str | None, via: tuple[str, ...], depth: int, text: str
    ) -> None:
        """Classify one simple command given as words, then the commands it runs."""
        if depth > MAX_DEPTH:
            self.own(words, via, text, UNKNOWN, "commands nested too deeply to follow")
            return
        name = words[0].value
        if name is None:
            reason = f"the command {words[0].raw} is only known at run time"
            self.own(words, via, text, UNKNOWN, reason)
            return
        base = name.rsplit("/", 1)[-1] if "/" in name else name
        entry = self.knowledge.entry(base)
        if entry is None:
            self.own(words, via, text, UNKNOWN, f"{base}: not in the command knowledge")
            return
        spec = self.knowledge.spec(entry)
        own, jobs = evaluate(self.knowledge, spec, words[1:], base, stdin)
        if own is not None:
            self.own(words, via, text, own[0], own[1])
        else:
            self.visitor.command(words, via, text, None, None)
        inner_via = (*via, base)
        for payload, job_stdin in jobs:
            if isinstance(payload, str):
                self.line(payload, job_stdin, inner_via, depth + 1)
            else:
                inner = " ".join(word.raw for word in payload)
                self.argv(payload, job_stdin, inner_via, depth + 1, inner)
