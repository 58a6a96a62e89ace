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

from _thread import allocate_lock

from agentledger.shell.bash_grammar import bash_parser
from agentledger.shell.classification import Classification, CommandVisitor, Part
from agentledger.shell.differential import node_problem, option_problem, text_problem
from agentledger.shell.evaluate import assignment, evaluate
from agentledger.shell.expansions import (
    FOREVER,
    Scope,
    arithmetic_names,
    expansion_parts,
    is_integer,
)
from agentledger.shell.knowledge import (
    DESTRUCTIVE,
    MUTATING,
    UNKNOWN,
    Knowledge,
    default_knowledge,
)
from agentledger.shell.redirects import is_empty_input, is_input
from agentledger.shell.words import Word, node_text, node_word, plain_words

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = [
    "MAX_DEPTH",
    "Classification",
    "CommandVisitor",
    "Part",
    "classify",
    "default_knowledge",
    "walk",
]

MAX_DEPTH = 12  # how deep wrappers and `sh -c` strings nest before a command is unknown

_SUBSTITUTIONS = ("command_substitution", "process_substitution")
_DECLARATIONS = ("declaration_command", "unset_command")
_ARITHMETIC_TESTS = frozenset(["-eq", "-ne", "-lt", "-le", "-gt", "-ge"])
_NAME_TESTS = frozenset(["-v", "-R"])
_OPTION_CHECKS = frozenset(["test", "[", "wait", "set", "shopt", "curl", "wget"])
_URL_READERS = ("curl", "wget")  # checked here over ssh; here, netreaders checks them
"""Builtins whose words bash may evaluate or read later text by (`differential`)."""
_parser_lock = allocate_lock()  # a tree-sitter parser parses one text at a time


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


class _Walker:
    """Walks a parsed command line and collects its parts."""

    def __init__(self, knowledge: Knowledge, parser_only: bool, visitor: CommandVisitor) -> None:
        self.knowledge = knowledge
        self.parser_only = parser_only
        self.visitor = visitor
        self.parts: list[Part] = []
        self.parse_errors = 0
        # One per line being read; made when the line first assigns or uses arithmetic.
        self.scopes: list[Scope | None] = []
        self.position = 0
        self.aliases: set[str] = set()
        self.alias_unknown = False
        self.empty_input = self.redirected_empty = False  # `< /dev/null`, for `stdin: sent`

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
        self.scopes.append(None)
        try:
            self.statements(text, stdin, via, depth)
        finally:
            scope = self.scopes.pop()
            if scope is not None:
                self.resolve(scope)
                if self.scopes and scope.unsafe:
                    # eval and `sh -c` lines may run in this very shell: what they assign
                    # anything counts for the line around them too.
                    self.scope().unsafe |= scope.unsafe

    def statements(self, text: str, stdin: str | None, via: tuple[str, ...], depth: int) -> None:
        if not self.parser_only:
            plain = plain_words(text)
            if plain is not None:
                assigned, words = plain
                self.position = len(text)
                for item in assigned:
                    name, _, value = item.partition("=")
                    self.environment(name, value, via, depth, item)
                    if not words:
                        self.assigned(name, value, 0, FOREVER)
                if words:
                    self.empty_input = False
                    self.argv([Word(word, word) for word in words], stdin, via, depth,
                              " ".join(words))  # fmt: skip
                return
        try:
            source = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            source = text.encode("utf-8", "replace")
        with _parser_lock:
            root = bash_parser().parse(source).root_node
        errors = self.parse_errors
        problem = None if text.isascii() and text.isprintable() else text_problem(text)
        if problem is not None:
            self.add(text.strip()[:80], UNKNOWN, problem, via)
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
        elif kind == "variable_assignment":
            self.assignment_node(node, via, depth)
        elif kind in _DECLARATIONS:
            self.declaration(node, stdin, via, depth)
        elif kind in ("expansion", "arithmetic_expansion", "simple_expansion"):
            self.substitutions(node, via, depth)
        elif kind == "test_command":
            self.test(node, via, depth)
        elif kind == "c_style_for_statement":
            self.c_style_for(node, stdin, via, depth)
        elif kind == "for_statement":
            self.for_loop(node, stdin, via, depth)
        elif kind == "compound_statement" and node.child_count and node.children[0].type == "((":
            self.arithmetic(node_text(node)[2:-2], node.start_byte, via)
            self.substitutions(node, via, depth)
        elif kind == "function_definition":
            self.function(node, stdin, via, depth)
        else:
            for child in node.named_children:
                self.node(child, None if kind in _SUBSTITUTIONS else stdin, via, depth)

    def substitutions(self, node: Node, via: tuple[str, ...], depth: int) -> None:
        """Classify a word's `$(...)`, `<(...)` and expansions that evaluate text (`${x@P}`)."""
        kind = node.type
        if kind in ("expansion", "command_substitution") and (problem := node_problem(node)):
            self.add(node_text(node), UNKNOWN, problem, via)
        if kind in _SUBSTITUTIONS:
            self.node(node, None, via, depth)
            return
        if kind == "arithmetic_expansion":
            text = node_text(node)
            body = text[3:-2] if text.startswith("$((") else text[2:-1]
            self.arithmetic(body, node.start_byte, via)
        elif kind == "expansion":
            self.expansion(node, via)
        for child in node.named_children:
            self.substitutions(child, via, depth)

    def scope(self) -> Scope:
        """The assignments and arithmetic of the line being read."""
        found = self.scopes[-1]
        if found is None:
            found = self.scopes[-1] = Scope()
        return found

    def environment(
        self, name: str, value: str | None, via: tuple[str, ...], depth: int, shown: str
    ) -> None:
        """An assignment of an environment variable that makes tools run a program."""
        self.visitor.assigns(name, via)
        matches, jobs = assignment(self.knowledge, name, value)
        for kind, reason in matches:
            self.add(shown, kind, reason, via)
        for payload, _ in jobs:
            if isinstance(payload, str):
                self.line(payload, None, (*via, name), depth + 1)

    def assigned(self, name: str, value: str | None, start: int, end: int) -> None:
        """`name` holds `value`: a number is safe in arithmetic from `start` to `end`."""
        self.scope().assigned(name, value, start, end)

    def assignment_node(self, node: Node, via: tuple[str, ...], depth: int) -> None:
        """A statement `NAME=value` (or `a[i]=value`, `NAME+=value`)."""
        target = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        self.substitutions(node, via, depth)
        self.array_keys(value_node, via)
        if target is None:
            return
        if target.type == "subscript":
            index = target.child_by_field_name("index")
            if index is not None:
                self.arithmetic(node_text(index), node.start_byte, via)
            base = target.child_by_field_name("name")
            if base is not None:
                self.scope().unsafe.add(node_text(base))
            return
        name = node_text(target)
        value = node_word(value_node).value if value_node is not None else ""
        self.environment(name, value, via, depth, node_text(node))
        appended = any(child.type == "+=" for child in node.children)
        parent = node.parent
        top = parent is not None and parent.type == "program"
        if top and not appended:
            self.assigned(name, value, node.end_byte, FOREVER)
        else:
            self.scope().unsafe.add(name)

    def declaration(self, node: Node, stdin: str | None, via: tuple[str, ...], depth: int) -> None:
        """`export`, `declare`, `local`, `readonly`, `typeset`, `unset`: their words are names
        or assignments, which the knowledge entry and the arithmetic checks read."""
        words: list[Word] = []
        top = node.parent is not None and node.parent.type == "program"
        for child in node.children:
            if not child.is_named:
                if not words:
                    words.append(Word(child.type, child.type))
                continue
            self.substitutions(child, via, depth)
            if child.type == "variable_assignment":
                target = child.child_by_field_name("name")
                value_node = child.child_by_field_name("value")
                self.array_keys(value_node, via)
                name = node_text(target) if target is not None else ""
                value = node_word(value_node).value if value_node is not None else ""
                if target is not None and target.type == "subscript":
                    index = target.child_by_field_name("index")
                    if index is not None:
                        self.arithmetic(node_text(index), child.start_byte, via)
                    words.append(Word(node_text(child), None))
                    continue
                if top and words[0].value in ("export", "readonly"):
                    self.assigned(name, value, child.end_byte, FOREVER)
                else:
                    self.scope().unsafe.add(name)
                full = None if value is None else f"{name}={value}"
                words.append(Word(node_text(child), full))
            elif child.type == "variable_name":
                self.scope().unsafe.add(node_text(child))
                words.append(Word(node_text(child), node_text(child)))
            else:
                word = node_word(child)
                if word.value is not None and "[" in word.value:
                    self.arithmetic(word.value.partition("[")[2].rstrip("]"), child.start_byte,
                                    via)  # fmt: skip
                words.append(word)
        if words:
            self.position = node.start_byte
            self.argv(words, stdin, via, depth, node_text(node))

    def array_keys(self, value: Node | None, via: tuple[str, ...]) -> None:
        """`a=([KEY]=v ...)`: bash evaluates each KEY as arithmetic (an indexed array)."""
        if value is None or value.type != "array":
            return
        for child in value.named_children:
            text = node_text(child)
            if text.startswith("[") and "]" in text:
                self.arithmetic(text[1 : text.index("]")], child.start_byte, via)

    def arithmetic(self, text: str, position: int, via: tuple[str, ...]) -> None:
        """Bash evaluates the values of the variables an arithmetic expression names as
        arithmetic again, subscripts and `$(...)` included: `x='a[$(rm F)]'; echo $((x))`
        runs rm. So every variable must be a number this line assigned, and no command's
        output may be evaluated."""
        shown = text.strip()
        scope = self.scope()
        for kind, name in arithmetic_names(text):
            if kind == "output":
                self.add(shown, UNKNOWN, "arithmetic evaluates the output of a command", via)
            elif kind == "unsafe":
                self.add(shown, UNKNOWN, f"arithmetic evaluates {name}, only known at run time",
                         via)  # fmt: skip
            elif name not in self.knowledge.shell.get("integers", ()):
                scope.refs.append((name, position, shown, via))

    def resolve(self, scope: Scope) -> None:
        """The arithmetic uses of variables, now that the whole line's assignments are known."""
        for name, shown, via in scope.unsafe_uses():
            self.add(shown, UNKNOWN, f"arithmetic evaluates the value of {name}, which is "
                     "not a number this line sets", via)  # fmt: skip

    def expansion(self, node: Node, via: tuple[str, ...]) -> None:
        """`${...}` forms that evaluate text: subscripts and substring offsets (arithmetic),
        `${!x}` (the value of x names another variable, subscript included), `${x@P}`."""
        texts, problem = expansion_parts(node_text(node)[2:-1])
        for text in texts:
            self.arithmetic(text, node.start_byte, via)
        if problem is not None:
            self.add(node_text(node), UNKNOWN, problem, via)

    def test(self, node: Node, via: tuple[str, ...], depth: int) -> None:
        """`[[ ... ]]`: `-eq` and the other numeric tests evaluate both sides as arithmetic,
        `-v` evaluates a subscript."""
        self.substitutions(node, via, depth)
        stack = list(node.named_children)
        while stack:
            child = stack.pop()
            operator = child.child_by_field_name("operator")
            if operator is not None:
                symbol = node_text(operator)
                if child.type == "binary_expression" and symbol in _ARITHMETIC_TESTS:
                    for side in ("left", "right"):
                        operand = child.child_by_field_name(side)
                        if operand is not None:
                            self.arithmetic(node_text(operand), operand.start_byte, via)
                elif child.type == "unary_expression" and symbol in _NAME_TESTS:
                    named = node_text(child)[len(symbol) :].strip()
                    if "[" in named or "$" in named or "`" in named:
                        self.add(node_text(child), UNKNOWN, f"[[ {symbol} ]] evaluates the "
                                 "subscript or name it is given", via)  # fmt: skip
            stack.extend(child.named_children)

    def c_style_for(self, node: Node, stdin: str | None, via: tuple[str, ...], depth: int) -> None:
        body = node.child_by_field_name("body")
        for index, child in enumerate(node.children):
            field = node.field_name_for_child(index)
            if field == "initializer" and child.type == "variable_assignment":
                target = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                if target is not None and value is not None and target.type == "variable_name":
                    text = node_text(value)
                    if is_integer(text):
                        self.assigned(node_text(target), text, node.start_byte, node.end_byte)
                    else:
                        self.arithmetic(text, child.start_byte, via)
            elif field in ("initializer", "condition", "update"):
                self.arithmetic(node_text(child), child.start_byte, via)
                self.substitutions(child, via, depth)
        if body is not None:
            self.node(body, stdin, via, depth)

    def for_loop(self, node: Node, stdin: str | None, via: tuple[str, ...], depth: int) -> None:
        variable = node.child_by_field_name("variable")
        values = [child for index, child in enumerate(node.children)
                  if node.field_name_for_child(index) == "value"]  # fmt: skip
        for value in values:
            self.substitutions(value, via, depth)
        if variable is not None:
            name = node_text(variable)
            self.visitor.assigns(name, via)
            numbers = [node_word(value).value for value in values]
            if numbers and all(v is not None and is_integer(v) for v in numbers):
                self.assigned(name, numbers[0], node.start_byte, node.end_byte)
            else:
                self.scope().unsafe.add(name)
        for child in node.named_children:
            if child.type in ("do_group", "compound_statement"):
                self.node(child, stdin, via, depth)

    def function(self, node: Node, stdin: str | None, via: tuple[str, ...], depth: int) -> None:
        name = node.child_by_field_name("name")
        if name is not None and node_text(name) in self.knowledge.shell.get("hooks", ()):
            self.add(node_text(name), UNKNOWN, f"defining {node_text(name)} makes the shell run "
                     "it for other commands", via)  # fmt: skip
        for child in node.named_children:
            if child is not name:
                self.node(child, stdin, via, depth)

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
        if any(is_input(redirect) for redirect in outputs):
            stdin = None
        empty = stdin is None and any(is_empty_input(redirect) for redirect in outputs)
        if body is not None:
            outer, self.redirected_empty = self.redirected_empty, empty
            self.node(body, stdin, via, depth)
            self.redirected_empty = outer
        for redirect in outputs:
            self.redirect(redirect, via)

    def heredoc(self, node: Node, via: tuple[str, ...], depth: int) -> str | None:
        """The text a here-document feeds; commands piped after it are classified too."""
        problem = node_problem(node)
        if problem is not None:
            self.add(node_text(node).split("\n", 1)[0], UNKNOWN, problem, via)
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
            # Duplicating (2>&1) or closing (>&-) writes no file; >&3 writes where 3 leads.
            if operator == ">&" and destination.value not in ("1", "2", "-"):
                self.add(shown, UNKNOWN, f"output to descriptor {destination.raw}: anywhere", via)
            return False
        if destination.value is None:
            self.add(shown, MUTATING, f"output goes to {destination.raw}, named at run time", via)
            return False
        from agentledger.shell.paths import write_target

        path = destination.value
        destructive = self.knowledge.redirects.get("destructive", ())
        kind, what = write_target(path, destructive=destructive)
        if kind is None:
            return False
        if kind == DESTRUCTIVE:
            self.add(shown, DESTRUCTIVE, f"output redirected onto {what}", via)
        else:
            self.add(shown, MUTATING, f"output redirected to {path} writes {what}", via)
        self.visitor.writes(destination.raw.strip("'\""), via)
        return False

    def command(self, node: Node, stdin: str | None, via: tuple[str, ...], depth: int) -> None:
        words: list[Word] = []
        outputs: list[Node] = []
        empty = self.redirected_empty
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
                if is_input(child):
                    stdin = None
                    empty = is_empty_input(child)
            elif kind == "herestring_redirect":
                stdin, empty = self.herestring(child, via, depth), False
            elif kind == "heredoc_redirect":
                stdin, empty = self.heredoc(child, via, depth), False
            elif kind == "variable_assignment":
                self.substitutions(child, via, depth)
                target = child.child_by_field_name("name")
                value_node = child.child_by_field_name("value")
                if target is not None and target.type == "variable_name":
                    value = node_word(value_node).value if value_node is not None else ""
                    self.environment(node_text(target), value, via, depth, node_text(child))
            elif child.is_named and kind != "comment":
                self.substitutions(child, via, depth)
        if words:
            self.position = node.start_byte
            self.empty_input = empty
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
        if self.alias_unknown or name in self.aliases:
            why = "an alias defined earlier in the line" if name in self.aliases else "aliases"
            self.own(words, via, text, UNKNOWN, f"{name} may mean anything: {why} changed it")
            return
        if base in _OPTION_CHECKS and ("ssh" in via or base not in _URL_READERS):
            problem = option_problem(base, words[1:])
            if problem is not None:
                self.add(text, UNKNOWN, problem, via)
        entry = self.knowledge.entry(base)
        if entry is None:
            self.own(words, via, text, UNKNOWN, f"{base}: not in the command knowledge")
            return
        spec = self.knowledge.spec(entry)
        if spec.aliases:
            self.define_aliases(words[1:])
        if spec.names:
            # `read n`, `getopts ab n`, `export n`: n may hold anything from now on.
            for word in words[1:]:
                value = word.value
                if value is not None and not value.startswith("-") and "=" not in value:
                    self.scope().unsafe.add(value)
        if spec.arithmetic:
            for word in words[1:]:
                if word.value is None:
                    self.add(text, UNKNOWN, f"{base} evaluates {word.raw}, only known at run "
                             "time", via)  # fmt: skip
                else:
                    self.arithmetic(word.value, self.position, via)
        own, jobs = evaluate(self.knowledge, spec, words[1:], base, stdin, self.empty_input)
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

    def define_aliases(self, words: list[Word]) -> None:
        """`alias NAME=VALUE`: from here on NAME may mean anything."""
        for word in words:
            if word.value is None:
                self.alias_unknown = True
            elif "=" in word.value:
                self.aliases.add(word.value.partition("=")[0])
