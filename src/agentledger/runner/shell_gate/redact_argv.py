"""Secrets typed on a command line, found by what each word means to its tool.

The detectors of `redact` read text: a secret of no known shape in a word that is a
password only by its position (`htpasswd -b FILE USER PASS`, `rabbitmqctl add_user U P`,
`echo PW | sudo -S ...`) passes them. Here the line is read as bash reads it
(tree-sitter-bash, the classifier's parser; a plain line is split on blanks, as bash does),
each simple command's wrappers are looked through (`sudo`, `env`, `timeout`, `ssh HOST CMD`,
`bash -c CMD`, `docker exec C CMD`), and the tool's rule in `redact_argv_rules` names the
words that hold a secret; a tool that reads one from its standard input is given what the
line feeds it (`echo`/`printf` before it in a pipeline, a here-string, a here-document).
Assignments (`X=v cmd`, `export X=v`, `env X=v`) whose name says secret count too.

`find_secrets` answers the spans of the line to replace and the secrets themselves, so
that the other fields of an event that hold part of the command (its parts, its reason)
lose the same secrets.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from tree_sitter import Node

    from agentledger.runner.shell_gate.redact_argv_options import Arg, Found

__all__ = ["find_secrets", "redact_line"]

_DEPTH = 6
"""How deep `bash -c '...'`, `ssh host '...'` are read into; deeper, a line that names a
tool of the rules is replaced whole."""
_SKIP = {
    # wrappers that run their arguments: the options that take a value
    "nohup": "", "time": "-f -o", "command": "", "exec": "-a", "setsid": "", "unbuffer": "",
    "builtin": "", "nice": "-n", "ionice": "-c -n -p", "stdbuf": "-i -o -e",
    "xargs": "-I -n -P -d -a -E -L -s",
    "chrt": "", "taskset": "", "flock": "-w -E", "watch": "-n -d", "doas": "-u -C",
    "sudo": "-u -g -h -p -C -D -r -t -U -T --user --group --host --prompt --chdir",
    "runuser": "-u -g -G", "torsocks": "", "proxychains": "-f", "proxychains4": "-f",
}  # fmt: skip
_POSITIONAL_FIRST = {"timeout": "-s -k --signal --kill-after", "chroot": "--userspec --groups"}
"""Wrappers whose first positional is theirs (a duration, a directory), not the command's."""
_SHELLS = frozenset(("bash", "sh", "dash", "zsh", "ksh", "ash", "busybox", "su"))
_REMOTE = {"ssh": "-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w -B"}
_CONTAINERS = {"docker", "podman", "nerdctl", "kubectl", "oc", "crictl", "lxc", "incus"}
_WRAPPERS = frozenset((
    *_SKIP, *_POSITIONAL_FIRST, *_SHELLS, *_REMOTE,
    "env", "export", "declare", "typeset", "local", "readonly",
))  # fmt: skip
"""Commands whose words are another command's (read when that one is), or assignments."""


def find_secrets(line: str) -> list[tuple[int, int, str, str]]:
    """The secrets of the command line `line`: (start, end, secret, kind) where start and
    end are the offsets, in `line` encoded as UTF-8, of the word that holds the secret."""
    source = line.encode("utf-8", "surrogateescape")
    found: Found = []
    _Reader(found).line(source, 0)
    return [(arg.start, arg.end, secret, kind) for arg, secret, kind in found]


class _Reader:
    __slots__ = ("found", "source")

    def __init__(self, found: Found) -> None:
        self.found = found
        self.source = b""

    def line(self, source: bytes, depth: int) -> None:
        from agentledger.runner.shell_gate.redact_argv_options import Arg

        self.source = source
        text = source.decode("utf-8", "surrogateescape")
        from agentledger.shell.words import plain_words

        if plain_words(text) is not None:
            import re

            args = [
                Arg(match.group().decode("utf-8", "surrogateescape"), match.start(), match.end())
                for match in re.finditer(rb"\S+", source)
            ]
            start = 0
            while start < len(args) and _assignment(args[start]):
                start += 1
            self.assignments(args[:start])
            self.command(args[start:], None, depth)
            return
        from agentledger.shell.bash_grammar import bash_parser

        root = bash_parser().parse(source).root_node
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "command":
                self.command_node(node, depth)
            elif node.type == "variable_assignment":
                self.assignment_node(node)
            elif node.type in ("heredoc_body", "herestring_redirect"):
                self.fed(node)
            stack.extend(reversed(node.children))

    def raw(self, arg: Arg) -> str:
        """The word `arg` as typed (for one whose value is only known at run time)."""
        return self.source[arg.start : arg.end].decode("utf-8", "surrogateescape")

    def fed(self, node: Node) -> None:
        """A here-document or here-string: its code, SQL or body read for secrets."""
        from agentledger.runner.shell_gate.redact_argv_code import heredoc_found
        from agentledger.runner.shell_gate.redact_argv_options import Arg

        if node.type == "heredoc_body":
            heredoc_found(self.found, Arg(_text(node), node.start_byte, node.end_byte))
        for child in node.named_children if node.type == "herestring_redirect" else ():
            heredoc_found(self.found, _arg(child))

    def assignments(self, args: Sequence[Arg]) -> None:
        from agentledger.runner.shell_gate.redact_argv_options import secret_name

        for arg in args:
            name, _, value = (arg.value or "").partition("=")
            if secret_name(name) or _key_assignment(name, value):
                self.add(arg, value, "secret-assignment")

    def assignment_node(self, node: Node) -> None:
        from agentledger.runner.shell_gate.redact_argv_options import secret_name

        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or value is None:
            return
        if not secret_name(_text(name)) and not _key_assignment(_text(name), _arg(value).value):
            return
        self.add(_arg(value), _arg(value).value, "secret-assignment")

    def add(self, arg: Arg, secret: str | None, kind: str) -> None:
        from agentledger.runner.shell_gate.redact_argv_options import add_found

        add_found(self.found, arg, secret, kind)

    def command_node(self, node: Node, depth: int) -> None:
        name = node.child_by_field_name("name")
        if name is None:
            return
        args = [_arg(name), *(_arg(child) for child in node.children_by_field_name("argument"))]
        self.command(args, lambda: _stdin_of(node), depth)

    def command(
        self, args: Sequence[Arg], stdin: Callable[[], list[Arg]] | None, depth: int
    ) -> None:
        """One simple command: its wrappers looked through, then its tool's rules."""
        from agentledger.runner.shell_gate.redact_argv_options import read_options
        from agentledger.runner.shell_gate.redact_argv_rules import STDIN, TOOLS

        while args:
            name = (args[0].value or "").rsplit("/", 1)[-1]
            rest = args[1:]
            reads = STDIN.get(name)
            shape = reads(rest) if reads is not None else None
            if shape is None and name not in _WRAPPERS:
                from agentledger.runner.shell_gate.redact_argv_general import reads_secret_input

                shape = reads_secret_input(rest)
            if shape is not None and stdin is not None:
                self.stdin(stdin(), shape)
                stdin = None
            rule = TOOLS.get(name)
            if rule is not None:
                for arg, secret, kind in rule(rest):
                    self.add(arg, secret, kind)
            if name not in _WRAPPERS and not (name in _CONTAINERS and _first(rest) == "exec"):
                from agentledger.runner.shell_gate.redact_argv_general import general_secrets

                for arg, secret, kind in general_secrets(args[0].value, rest, self.raw):
                    self.add(arg, secret, kind)
                if name == "printf":  # printf 'DB_PASSWORD=%s\n' PW: the line it prints
                    from agentledger.runner.shell_gate.redact_argv_code import heredoc_found

                    for printed in _printf(rest)[:1]:
                        heredoc_found(self.found, printed)
            if name in ("export", "declare", "typeset", "local", "readonly"):
                self.assignments([arg for arg in rest if _assignment(arg)])
                return
            if name == "env":
                read = read_options(rest, {}, "-u -C -S --unset --chdir", stop=True)
                start = 0
                while start < len(read.positionals) and _assignment(read.positionals[start]):
                    start += 1
                self.assignments(read.positionals[:start])
                args = read.positionals[start:]
            elif name in _SKIP:
                args = read_options(rest, {}, _SKIP[name], stop=True).positionals
            elif name in _POSITIONAL_FIRST:
                args = read_options(rest, {}, _POSITIONAL_FIRST[name], stop=True).positionals[1:]
            elif name in _SHELLS:
                self.shell(rest, depth)
                return
            elif name in _REMOTE:
                positionals = read_options(rest, {}, _REMOTE[name], stop=True).positionals[1:]
                self.inner(positionals, depth)
                return
            elif name in _CONTAINERS and _first(rest) == "exec":
                args = _exec_command(rest[1:])
            else:
                return

    def shell(self, args: Sequence[Arg], depth: int) -> None:
        """`bash -c CMD`, `su -c CMD`, `su user -c CMD`: CMD read as a line of its own."""
        for index, arg in enumerate(args):
            value = arg.value or ""
            if value == "-c" or (value[:1] == "-" and value[1:2] != "-" and value.endswith("c")):
                self.inner(args[index + 1 : index + 2], depth)
                return
            if value.startswith("--command="):
                self.inner([arg], depth, len("--command="))
                return

    def inner(self, args: Sequence[Arg], depth: int, skip: int = 0) -> None:
        """The words `args` run as a command line elsewhere (a shell, another host): its
        secrets, attributed to the words that hold them."""
        from agentledger.runner.shell_gate.redact_argv_options import Arg

        if not args or any(arg.value is None for arg in args):
            return
        text = " ".join(arg.value or "" for arg in args)[skip:]
        if depth >= _DEPTH:
            from agentledger.runner.shell_gate.redact import argv_might_hold

            if argv_might_hold(text):  # too deep to read: all of it, to be safe
                self.add(Arg(None, args[0].start, args[-1].end), text, "nested-command")
            return
        found: Found = []
        _Reader(found).line(text.encode("utf-8", "surrogateescape"), depth + 1)
        whole = Arg(None, args[0].start, args[-1].end)
        for _, secret, kind in found:
            self.add(whole, secret, kind)

    def stdin(self, sources: list[Arg], shape: str) -> None:
        for source in sources:
            for line in (source.value or "").splitlines():
                secret = _line_secret(line.strip(), shape)
                self.add(source, secret, "stdin-password")


def _line_secret(line: str, shape: str) -> str | None:
    if shape == "line":
        return line
    if shape == "user:pass":
        return line.partition(":")[2]
    words = line.split()
    if words[:1] == ["user"] and len(words) == 3:
        return words[2]
    if words[:1] == ["pass"] and len(words) == 2:
        return words[1]
    return None


def _exec_command(args: Sequence[Arg]) -> list[Arg]:
    """The command of `docker exec [OPTIONS] CONTAINER CMD...` or `kubectl exec POD -- CMD`."""
    values = [arg.value for arg in args]
    if "--" in values:
        return list(args[values.index("--") + 1 :])
    from agentledger.runner.shell_gate.redact_argv_options import read_options

    valued = "-u -e -w --user --env --workdir --env-file -n --namespace -c --container"
    return read_options(args, {}, valued, stop=True).positionals[1:]


def _first(args: Sequence[Arg]) -> str | None:
    return args[0].value if args else None


def _key_assignment(name: str, value: str | None) -> bool:
    """`STRIPE_KEY=sk_live_...`, `SUPABASE_KEY=...`: a `*_KEY` variable holding what looks
    like a key (`LOG_KEY=request_id` does not)."""
    from agentledger.runner.shell_gate.redact_argv_general import candidate, name_says_secret

    return name_says_secret(name) == "key" and candidate(value, "key")


def _assignment(arg: Arg) -> bool:
    name, has, _ = (arg.value or "").partition("=")
    return bool(has) and name.isidentifier()


def _text(node: Node) -> str:
    from agentledger.shell.words import node_text

    return node_text(node)


def _arg(node: Node) -> Arg:
    from agentledger.runner.shell_gate.redact_argv_options import Arg
    from agentledger.shell.words import node_word

    if node.type == "command_name" and node.named_children:
        node = node.named_children[0]
    return Arg(node_word(node).value, node.start_byte, node.end_byte)


def _stdin_of(node: Node) -> list[Arg]:
    """What the line feeds the command `node` on its standard input: a here-string, a
    here-document, or the words `echo`/`printf` print before it in a pipeline."""
    from agentledger.runner.shell_gate.redact_argv_options import Arg

    fed = _redirected_input(node)
    element = node
    if node.parent is not None and node.parent.type == "redirected_statement":
        element = node.parent
    parent = element.parent
    if parent is not None and parent.type == "pipeline":
        # what feeds it is the element before it, and what feeds that one when it passes its
        # input on (`echo u:p | cat | chpasswd`); a few only, so a pipeline of thousands of
        # commands is read in linear time
        before = element.prev_named_sibling
        reached_start = False
        for _ in range(_PASSED_ON):
            while before is not None and before.type == "comment":
                before = before.prev_named_sibling
            if before is None:
                reached_start = True
                break
            fed.extend(_printed(before))
            if not _passes_input_on(before):
                break
            before = before.prev_named_sibling
        holder = parent.parent
        while holder is not None and holder.type == "pipeline":
            holder = holder.parent  # `cat <<EOF | sort | chpasswd` nests them
        if reached_start and holder is not None and holder.type == "heredoc_redirect":
            # `cat <<EOF | chpasswd`: the pipeline sits in the here-document's redirect
            body = holder.parent.child_by_field_name("body") if holder.parent else None
            if body is not None and _passes_input_on(body):
                fed.extend(
                    Arg(_text(child), child.start_byte, child.end_byte)
                    for child in holder.named_children
                    if child.type == "heredoc_body"
                )
    return fed


def _redirected_input(node: Node) -> list[Arg]:
    """The here-strings and here-documents given to the command `node`."""
    from agentledger.runner.shell_gate.redact_argv_options import Arg

    fed: list[Arg] = []
    redirects = list(node.children_by_field_name("redirect"))
    if node.parent is not None and node.parent.type == "redirected_statement":
        redirects += node.parent.children_by_field_name("redirect")
    for redirect in redirects:
        if redirect.type == "herestring_redirect":
            fed.extend(_arg(child) for child in redirect.named_children)
        elif redirect.type == "heredoc_redirect":
            for child in redirect.named_children:
                if child.type == "heredoc_body":
                    fed.append(Arg(_text(child), child.start_byte, child.end_byte))
    return fed


_PASSED_ON = 16
_PASS_THROUGH = frozenset(("cat", "tee", "head", "tail", "sort", "uniq", "tr", "sed", "grep"))
"""Filters that pass (some of) their input on to the next command."""


def _passes_input_on(node: Node) -> bool:
    if node.type == "redirected_statement":
        node = node.child_by_field_name("body") or node
    if node.type != "command":
        return False
    name = node.child_by_field_name("name")
    return name is not None and _text(name).rsplit("/", 1)[-1] in _PASS_THROUGH


def _printed(node: Node) -> list[Arg]:
    """The words the `echo` and `printf` commands within `node` print, as lines."""
    printed: list[Arg] = []
    stack = [node]
    while stack:
        current = stack.pop()
        stack.extend(current.named_children)
        if current.type != "command":
            continue
        name = current.child_by_field_name("name")
        if name is None:
            continue
        tool = _text(name).rsplit("/", 1)[-1]
        args = [_arg(child) for child in current.children_by_field_name("argument")]
        printed.extend(_PRINTERS.get(tool, _nothing)(args))
        if tool == "cat":  # `cat <<EOF | chpasswd`
            printed.extend(_redirected_input(current))
    return printed


def _nothing(args: Sequence[Arg]) -> list[Arg]:
    return []


def _echo(args: Sequence[Arg]) -> list[Arg]:
    start = 0
    while start < len(args) and (args[start].value or "x").strip("-neE") == "":
        start += 1
    return [_escaped(arg) for arg in args[start:]]


def _printf(args: Sequence[Arg]) -> list[Arg]:
    if args[:1] and args[0].value == "-v":
        args = args[2:]
    if not args:
        return []
    form = args[0].value
    if form is None or "%" not in form or len(args) == 1:
        return [_escaped(arg) for arg in args[:1]]
    data = args[1:]
    if any(arg.value is None for arg in data):
        return [_escaped(arg) for arg in data]
    # `printf '%s:%s\n' u pw`: the lines as printf makes them, held by all its words
    import re

    from agentledger.runner.shell_gate.redact_argv_options import Arg

    values = [arg.value or "" for arg in data]
    slots = len(re.findall(r"%[-+ #0-9.]*[sbdqiuxX]", form)) or 1
    text = ""
    for start in range(0, len(values), slots):
        pieces = re.split(r"%[-+ #0-9.]*[sbdqiuxX]", form)
        chunk = [*values[start : start + slots], *[""] * len(pieces)]
        text += "".join(piece + chunk[index] for index, piece in enumerate(pieces[:-1]))
        text += pieces[-1]
    whole = Arg(text.replace("%%", "%"), data[0].start, data[-1].end)
    return [_escaped(whole), *(_escaped(arg) for arg in data)]


def _escaped(arg: Arg) -> Arg:
    """`arg` with `\\n` read as a new line (echo -e, printf): each line is one input."""
    from agentledger.runner.shell_gate.redact_argv_options import Arg

    value = arg.value
    if value is not None and "\\" in value:
        value = value.replace("\\n", "\n").replace("\\r", "")
    return Arg(value, arg.start, arg.end)


def _yes(args: Sequence[Arg]) -> list[Arg]:
    from agentledger.runner.shell_gate.redact_argv_options import Arg

    if not args or any(arg.value is None for arg in args):
        return []
    return [Arg(" ".join(arg.value or "" for arg in args), args[0].start, args[-1].end)]


_PRINTERS: dict[str, Callable[[Sequence[Arg]], list[Arg]]] = {
    "echo": _echo,
    "printf": _printf,
    "yes": _yes,
}


def redact_line(line: str, marker: Callable[[str, str], str]) -> tuple[str, list[tuple[str, str]]]:
    """`line` with each secret `find_secrets` finds replaced by `marker(kind, secret)`, and
    the texts replaced, each with its marker (the secret, or the whole word when its text
    does not hold the secret as typed: `$'p\\x41ss'`), for the fields that quote the line."""
    from agentledger.runner.shell_gate.redact import argv_might_hold

    if not argv_might_hold(line):
        return line, []
    try:
        spans = find_secrets(line)
    except RecursionError:  # a line nested past Python's stack: all of it, to be safe
        spans = [(0, len(line.encode("utf-8", "surrogateescape")), line, "nested-command")]
    if not spans:
        return line, []
    source = line.encode("utf-8", "surrogateescape")
    by_word: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for start, end, secret, kind in spans:
        by_word.setdefault((start, end), []).append((secret, kind))
    known: list[tuple[str, str]] = []
    pieces: list[bytes] = []
    position = 0
    for (start, end), secrets in sorted(by_word.items()):
        if start < position:
            continue  # inside a word already replaced (`ssh h 'sudo -S ..' <<< PW`)
        word = source[start:end]
        for secret, kind in sorted(dict(secrets).items(), key=lambda item: -len(item[0])):
            typed = secret.encode("utf-8", "surrogateescape")
            mark = marker(kind, secret)
            if typed and typed in word:
                word = word.replace(typed, mark.encode("utf-8", "surrogateescape"))
                known.append((secret, mark))
            elif b"[REDACTED" not in word:
                known.append((source[start:end].decode("utf-8", "surrogateescape"), mark))
                word = mark.encode("utf-8", "surrogateescape")
        pieces.append(source[position:start])
        pieces.append(word)
        position = end
    pieces.append(source[position:])
    return b"".join(pieces).decode("utf-8", "surrogateescape"), known
