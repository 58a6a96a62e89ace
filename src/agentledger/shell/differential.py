"""Where bash and tree-sitter-bash may read a line differently: such a line is refused.

The classifier sees the commands of a line through tree-sitter-bash; bash runs what its own
parser reads. Where the two can disagree, the commands bash runs may be ones the classifier
never saw (issue 33: `cat <<E"O"F` ends at a line `EOF` in bash, not in the grammar, and the
lines after it ran unseen). So each of these shapes makes the line unknown, with the reason:

- characters bash reads as part of a word and a parser may read otherwise: control characters
  other than tab and newline (a carriage return), and Unicode spaces, joiners and direction
  marks (`ls\\u3000-la`, `\\u200b`);
- a line continuation (backslash-newline) inside a word: bash joins the two lines first;
- a here-document whose delimiter is partly quoted or escaped (bash removes the quotes), holds
  anything but letters, digits and `_.-`, or whose body holds a line bash would end it at;
- a name bash evaluates as an array subscript (`test -v 'b[x]'` evaluates x, and x may hold
  `a[$(cmd)]`), and `wait -p`, which assigns such a name;
- shell options that change how later words are read: `set -k` (every `NAME=value` word is
  an assignment), `shopt -s extglob` or `expand_aliases`;
- a backquote the grammar gives as text where bash runs it: inside a `${...}` expansion
  (`"${x:-`cmd`}"`), in the body of a here-document with an unquoted delimiter, and an
  escaped backquote inside a backquoted substitution (a nested one, `` `echo \\`cmd\\`` ``).

Words bash makes that the text does not show are read as bash makes them, not refused:
brace expansion (`braces`), word splitting of unquoted expansions (`words.Word.split`: such a
word may be several words, any an option), `~+`/`~-` (run-time words), and a word the parser
splits in two (`'-'\\delete`: the classifier joins the nodes, as bash reads one word).

The differential test (tests/test_shell_differential.py) runs generated lines through real
bash in a jail, tracing what it executes, and fails when bash runs a command of a line the
classifier let through without seeing it, or gives a command words (options) that, read as
they are, are not read-only.
"""

from __future__ import annotations

from agentledger.shell.words import node_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from tree_sitter import Node

    from agentledger.shell.words import Word

__all__ = ["node_problem", "option_problem", "text_problem"]

# C0 controls but tab and newline, DEL, C1 controls; Unicode spaces other than the plain
# space, zero-width and joiner characters, direction marks and overrides, the BOM.
_ODD = (
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00a0\u1680\u180e\u2000-\u200f\u2028-\u202f"
    "\u205f-\u206f\u3000\ufeff\ufff9-\ufffb]"
)
_CONTINUATION = r"(?<![\\])((?:\\\\)*)\\\n"
_DELIMITER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_PARSER_OPTIONS = frozenset(["extglob", "expand_aliases", "extquote", "posix"])


def text_problem(text: str) -> str | None:
    """Why bash and the parser may split `text` differently, or None."""
    # Plain ASCII with no control character but tab and newline needs no regular expression
    # (most lines; `re` is not imported for them).
    plain = text.isascii() and (
        text.isprintable() or text.replace("\t", " ").replace("\n", " ").isprintable()
    )
    if not plain:
        import re

        odd = re.search(_ODD, text)
        if odd is not None:
            return (
                f"the character U+{ord(odd.group()):04X} may be read differently by bash and "
                "the gate's parser"
            )
    if "\\\n" in text:
        import re

        for match in re.finditer(_CONTINUATION, text):
            start = match.start() + len(match.group(1))
            before = text[start - 1] if start > 0 else "\n"
            if before not in " \t":
                return (
                    "a line continuation inside a word: bash joins the lines before it reads them"
                )
    return None


def node_problem(node: Node) -> str | None:
    """Why bash may read `node` (a heredoc_redirect, an expansion or a command substitution)
    otherwise than the parser does, or None."""
    if node.type == "heredoc_redirect":
        return _heredoc_problem(node)
    return _backquote_problem(node)


def _heredoc_problem(node: Node) -> str | None:
    """Why bash may end the here-document `node` (a heredoc_redirect) elsewhere than the
    parser does, or expands a backquote in it the parser did not read, or None."""
    operator, start, body, end = "<<", None, None, None
    for child in node.children:
        if child.type in ("<<", "<<-"):
            operator = child.type
        elif child.type == "heredoc_start":
            start = child
        elif child.type == "heredoc_body":
            body = child
        elif child.type == "heredoc_end":
            end = child
    if start is None:
        return "a here-document without a delimiter"
    written = node_text(start)
    delimiter = _bash_delimiter(written)
    if delimiter is None:
        return (
            f"the here-document delimiter {written!r} is partly quoted or holds characters "
            "bash may read differently (bash removes quotes from it)"
        )
    strip = operator == "<<-"
    if end is not None and node_text(end) != delimiter:
        return f"bash ends the here-document at a line {delimiter!r}, the parser elsewhere"
    if body is not None:
        for line in node_text(body).split("\n"):
            if (line.lstrip("\t") if strip else line) == delimiter:
                return f"bash ends the here-document at its line {delimiter!r}, the parser later"
        if written == delimiter and _unparsed_backquote(body):
            return (
                "a backquote in a here-document bash expands (unquoted delimiter) that the "
                "gate's parser did not read as a command"
            )
    return None


def _backquote_problem(node: Node) -> str | None:
    """Why bash may run a backquoted command in `node` (an `expansion` or a
    `command_substitution`) that the parser gives as text, or None."""
    if node.type == "expansion" and _unparsed_backquote(node):
        return (
            "a backquote inside a ${...} expansion: bash runs it, the gate's parser reads it "
            "as text"
        )
    text = node.text or b""
    if node.type == "command_substitution" and text.startswith(b"`") and b"\\`" in text:
        return (
            "an escaped backquote inside a backquoted command: bash runs it as a nested "
            "command, the gate's parser reads it as text"
        )
    return None


def _unparsed_backquote(node: Node) -> bool:
    """True when `node`'s text holds a backquote outside every command substitution the
    parser found in it (those are classified as commands)."""
    text = node.text or b""
    if b"`" not in text:
        return False
    kept = bytearray(text)
    pending = list(node.named_children)
    while pending:
        child = pending.pop()
        if child.type == "command_substitution":
            start, end = child.start_byte - node.start_byte, child.end_byte - node.start_byte
            kept[start:end] = bytes(end - start)
        else:
            pending.extend(child.named_children)
    return b"`" in kept


def option_problem(name: str, words: Sequence[Word]) -> str | None:
    """Why running builtin `name` with `words` makes bash evaluate or read later text in a way
    the gate does not follow, or why the URL reader `name` (curl, wget) may not read with
    `words` (`fetch_words`, the check the gate's network readers get, applied by the
    classifier to a remote command over ssh, which no sandbox holds), or None."""
    if name in ("test", "["):
        return _test_names(words)
    if name == "wait":
        for word in words:
            value = word.value
            if value is None or (value[:1] == "-" and value[1:2] != "-" and "p" in value):
                return f"wait {word.raw}: -p assigns a variable name, which may hold a subscript"
        return None
    if name == "set":
        return _set_options(words)
    if name == "shopt":
        return _shopt_options(words)
    if name in ("curl", "wget"):
        from agentledger.shell.fetch_words import check_fetch

        values = [word.value for word in words]
        if None in values:
            return f"{name}: its words are only known at run time, so not checked as a reader's"
        problem = check_fetch(name, [value for value in values if value is not None])
        return (
            f"{name} reads only with the words a network reader may use: {problem}"
            if problem
            else None
        )
    return None


def _test_names(words: Sequence[Word]) -> str | None:
    for index, word in enumerate(words[:-1]):
        if word.value in ("-v", "-R"):
            named = words[index + 1]
            if named.value is None or "[" in named.value:
                return (
                    f"test {word.value} {named.raw}: bash evaluates the subscript of the name it "
                    "is given (and the values it names, commands included)"
                )
    return None


def _set_options(words: Sequence[Word]) -> str | None:
    for index, word in enumerate(words):
        value = word.value
        if value is None:
            return f"set {word.raw}: an option only known at run time"
        if value in ("-o", "+o") and index + 1 < len(words):
            option = words[index + 1].value
            if option is None or option in ("keyword", "allexport", "posix"):
                return f"set {value} {words[index + 1].raw} changes how bash reads later words"
        elif (
            value[:1] in "-+"
            and value not in ("-o", "+o", "--", "-")
            and ("k" in value or "a" in value)
        ):
            return f"set {value}: makes NAME=value words or later assignments reach commands"
        elif value == "--":
            return None
    return None


def _shopt_options(words: Sequence[Word]) -> str | None:
    setting = False
    for word in words:
        value = word.value
        if value is None:
            return f"shopt {word.raw}: an option only known at run time"
        if value.startswith("-"):
            setting = setting or "s" in value or "u" in value
        elif setting and value in _PARSER_OPTIONS:
            return f"shopt {value} changes how bash reads later lines"
    return None


def _bash_delimiter(written: str) -> str | None:
    """The delimiter bash ends a here-document at, when it is plain: `EOF`, `'EOF'`, `"EOF"`
    or `\\EOF` (quoted as a whole); None for anything else."""
    if written and _DELIMITER.issuperset(written):
        return written
    quoted = len(written) > 2 and written[0] in "'\"" and written[-1] == written[0]
    if quoted and _DELIMITER.issuperset(written[1:-1]):
        return written[1:-1]
    if len(written) > 1 and written[0] == "\\" and _DELIMITER.issuperset(written[1:]):
        return written[1:]
    return None
