"""Read the small programs ops commands take as arguments: sed scripts, awk programs and the
JavaScript given to `mongosh --eval`.

Each reader answers one question: can this program run a command, write a file, or change
data? It returns findings, never a verdict on the whole command:

- ("unknown", why): the program runs something the gate cannot see, or does not parse;
- ("writes", file): it writes `file` (None when the name is only known at run time);
- ("runs", line): it runs the shell command line `line` (sed's `e command`);
- ("mutating", why): it changes data (a MongoDB `$out` or `$merge` stage).

The readers fail closed: what they do not recognise is "unknown", never harmless. Which
command's argument is which language is data (`script:` in commands.yaml).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection

__all__ = ["Finding", "read_awk", "read_mongo", "read_sed", "reader"]

Finding = tuple[str, "str | None"]

_SED_SIMPLE = frozenset("dDgGhHlLnNpPqQxz=F")


def reader(language: str) -> Callable[[str, Collection[str]], list[Finding]]:
    """The reader of `language` (sed, awk, mongo)."""
    return {"sed": read_sed, "awk": read_awk, "mongo": read_mongo}[language]


# --- sed ----------------------------------------------------------------------------------------


def read_sed(script: str, allowed: Collection[str] = ()) -> list[Finding]:
    """What a (GNU) sed script does besides editing the text it reads: `e` runs commands,
    `w`/`W` and the `w` flag of `s` write files, `s///e` runs the pattern space."""
    findings: list[Finding] = []
    index, end = 0, len(script)
    try:
        while index < end:
            char = script[index]
            if char in " \t\n;{}!":
                index += 1
                continue
            if char == "#":
                index = _line_end(script, index)
                continue
            index = _sed_address(script, index)
            if index >= end:
                break
            command = script[index]
            index += 1
            if command in " \t!{}":
                continue
            if command in _SED_SIMPLE:
                while index < end and script[index] in " \t0123456789":
                    index += 1
            elif command in ":btTv":
                index = _until(script, index, ";\n")
            elif command in "aic":
                index = _sed_text(script, index)
            elif command in "rR":
                index = _line_end(script, index)
            elif command in "wW":
                stop = _line_end(script, index)
                findings.append(("writes", script[index:stop].strip()))
                index = stop
            elif command == "e":
                stop = _line_end(script, index)
                line = script[index:stop].strip()
                if line:
                    findings.append(("runs", line))
                else:
                    findings.append(("unknown", "sed e runs the pattern space as a command"))
                index = stop
            elif command in "sy":
                index = _sed_substitute(script, index, command, findings)
            else:
                findings.append(("unknown", f"sed command {command!r} is not one the gate knows"))
                return findings
    except _Unparsable as exc:
        findings.append(("unknown", f"sed script does not parse: {exc}"))
    return findings


class _Unparsable(Exception):
    pass


def _line_end(text: str, index: int) -> int:
    found = text.find("\n", index)
    return len(text) if found < 0 else found


def _until(text: str, index: int, stops: str) -> int:
    while index < len(text) and text[index] not in stops:
        index += 1
    return index


def _sed_address(script: str, index: int) -> int:
    """Skip an address or a range (`3`, `$`, `/re/`, `\\%re%`, `1~2`, `addr,+3`) and `!`."""
    for part in range(2):
        index = _skip_blanks(script, index)
        if index >= len(script):
            return index
        char = script[index]
        if char.isdigit():
            while index < len(script) and (script[index].isdigit() or script[index] == "~"):
                index += 1
        elif char == "$":
            index += 1
        elif char in "/\\":
            if char == "\\":
                index += 1
                if index >= len(script):
                    raise _Unparsable("an address ends after a backslash")
            index = _delimited(script, index + 1, script[index]) + 1
            while index < len(script) and script[index] in "IM":
                index += 1
        elif char in "+~" and part > 0:
            index += 1
            while index < len(script) and script[index].isdigit():
                index += 1
        else:
            return index
        index = _skip_blanks(script, index)
        if index < len(script) and script[index] == "," and part == 0:
            index += 1
            continue
        break
    index = _skip_blanks(script, index)
    while index < len(script) and script[index] in "! \t":
        index += 1
    return index


def _skip_blanks(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t":
        index += 1
    return index


def _delimited(text: str, index: int, delimiter: str) -> int:
    """The index of the delimiter that closes a part begun at `index` (backslash escapes it)."""
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == delimiter:
            return index
        if char == "\n" and delimiter != "\n":
            raise _Unparsable("a newline inside a regular expression or replacement")
        index += 1
    raise _Unparsable(f"{delimiter!r} is not closed")


def _sed_text(script: str, index: int) -> int:
    """Skip the text of `a`, `i`, `c` (one line, or lines joined by a trailing backslash)."""
    while index < len(script):
        stop = _line_end(script, index)
        if stop > index and script[stop - 1] == "\\" and stop < len(script):
            index = stop + 1
            continue
        return stop
    return index


def _sed_substitute(script: str, index: int, command: str, findings: list[Finding]) -> int:
    if index >= len(script) or script[index] in "\n\\":
        raise _Unparsable(f"{command} has no delimiter")
    delimiter = script[index]
    middle = _delimited(script, index + 1, delimiter)
    close = _delimited(script, middle + 1, delimiter)
    index = close + 1
    if command == "y":
        return index
    while index < len(script):
        flag = script[index]
        if flag in "gpiImM0123456789":
            index += 1
        elif flag == "e":
            findings.append(("unknown", "sed s///e runs the result as a command"))
            index += 1
        elif flag in "wW":
            stop = _line_end(script, index + 1)
            findings.append(("writes", script[index + 1 : stop].strip()))
            return stop
        elif flag in " \t\n;}#":
            break
        else:  # GNU sed: "unknown option to `s'"; read on, it would pass for other commands
            raise _Unparsable(f"{flag!r} is not a flag of {command}")
    return index


# --- awk ----------------------------------------------------------------------------------------

_AWK_KEYWORDS = frozenset(
    [
        "BEGIN",
        "END",
        "BEGINFILE",
        "ENDFILE",
        "if",
        "else",
        "while",
        "for",
        "do",
        "break",
        "continue",
        "next",
        "nextfile",
        "exit",
        "return",
        "delete",
        "in",
        "getline",
        "function",
        "func",
        "print",
        "printf",
    ]
)


def read_awk(program: str, allowed: Collection[str] = ()) -> list[Finding]:
    """What an awk program does besides printing: `system()`, pipes to or from commands
    (`print | "cmd"`, `"cmd" | getline`, `|&`), output redirections inside `print` and
    `printf` (`> file`, `>> file`), and gawk's `@` directives and indirect calls."""
    findings: list[Finding] = []
    index, end = 0, len(program)
    operand = False  # the last token ends an expression: a `/` after it divides
    printing: int | None = None  # the paren depth at which a print statement began
    depth = 0
    while index < end:
        char = program[index]
        if char in " \t":
            index += 1
        elif char == "\\" and index + 1 < end and program[index + 1] == "\n":
            index += 2
        elif char in "\n;{}":
            printing, operand = None, False
            index += 1
        elif char == "#":
            index = _line_end(program, index)
        elif char == '"':
            stop = _string_end(program, index)
            if stop < 0:
                return [
                    *findings,
                    ("unknown", "awk program does not parse: a string is not closed"),
                ]
            index, operand = stop, True
        elif char == "/" and not operand:
            stop = _awk_regex(program, index)
            if stop < 0:
                return [*findings, ("unknown", "awk program does not parse: a regex is not closed")]
            index, operand = stop, True
        elif char.isalpha() or char == "_":
            stop = index
            while stop < end and (program[stop].isalnum() or program[stop] == "_"):
                stop += 1
            word = program[index:stop]
            if word == "system":
                findings.append(("unknown", "awk system() runs a command"))
            elif word in ("print", "printf"):
                printing = depth
            operand = word not in _AWK_KEYWORDS
            index = stop
        elif char.isdigit() or char == ".":
            while index < end and (program[index].isalnum() or program[index] == "."):
                index += 1
            operand = True
        elif char == "@":
            findings.append(("unknown", "awk @ directive or indirect call"))
            index += 1
        elif char == "|":
            if program.startswith("||", index):
                index, operand = index + 2, False
                continue
            findings.append(("unknown", "awk pipes to or from a command"))
            index, operand = index + 1, False
        elif char == ">":
            append = program.startswith(">>", index)
            if program.startswith(">=", index):
                index, operand = index + 2, False
            elif printing is not None and depth == printing:
                index = _skip_blanks(program, index + (2 if append else 1))
                findings.append(("writes", _awk_target(program, index)))
                operand = False
            else:
                index, operand = index + 1, False
        elif char in "([":
            depth += 1
            index, operand = index + 1, False
        elif char in ")]":
            depth -= 1
            index, operand = index + 1, True
        elif char == "$":
            index, operand = index + 1, False
        else:
            operand = char in "'"
            index += 1
    return findings


def _awk_regex(program: str, index: int) -> int:
    index += 1
    bracket = False
    while index < len(program):
        char = program[index]
        if char == "\\":
            index += 2
            continue
        if char == "\n":
            return -1
        if bracket:
            bracket = char != "]"
        elif char == "[":
            bracket = True
            if program.startswith("]", index + 1) or program.startswith("^]", index + 1):
                index += 2 if program[index + 1] == "]" else 3
                continue
        elif char == "/":
            return index + 1
        index += 1
    return -1


def _awk_target(program: str, index: int) -> str | None:
    """The file a redirection names, when it is a string literal; None otherwise."""
    if index < len(program) and program[index] == '"':
        stop = _string_end(program, index)
        if stop > 0 and "\\" not in program[index:stop]:
            return program[index + 1 : stop - 1]
    return None


# --- mongosh ------------------------------------------------------------------------------------

_JS_DENIED = frozenset(["$out", "$merge", "__proto__", "constructor", "prototype"])


def read_mongo(script: str, allowed: Collection[str] = ()) -> list[Finding]:
    """What JavaScript given to mongosh does: every function or method it calls must be one
    of `allowed` (reads: find, countDocuments, serverStatus, ...); anything else, a call of
    a computed value or a template string is unknown, and an `$out`/`$merge` stage writes."""
    findings: list[Finding] = []
    index, end = 0, len(script)
    previous = ""  # the last significant character
    while index < end:
        char = script[index]
        if char in " \t\r\n":
            index += 1
            continue
        if script.startswith("//", index):
            index = _line_end(script, index)
            continue
        if script.startswith("/*", index):
            stop = script.find("*/", index + 2)
            if stop < 0:
                return [("unknown", "mongosh script does not parse: a comment is not closed")]
            index = stop + 2
            continue
        if char in "'\"":
            stop = _string_end(script, index)
            if stop < 0:
                return [("unknown", "mongosh script does not parse: a string is not closed")]
            if script[index + 1 : stop - 1] in _JS_DENIED:
                findings.append(("mutating", f"mongosh {script[index + 1 : stop - 1]} writes"))
            index, previous = stop, "a"
            continue
        if char == "`":
            return [("unknown", "mongosh template strings can run code")]
        if char.isalpha() or char in "_$":
            stop = index
            while stop < end and (script[stop].isalnum() or script[stop] in "_$"):
                stop += 1
            word = script[index:stop]
            index, previous = stop, "a"
            if word in _JS_DENIED:
                findings.append(("mutating", f"mongosh {word} writes or reaches code"))
                continue
            after = _skip_space(script, index)
            called = after < end and script[after] == "(" and word not in _JS_SYNTAX
            if called and word not in allowed:
                findings.append(("unknown", f"mongosh {word}() is not known to only read"))
            continue
        if char == "(" and previous in ")]":
            findings.append(("unknown", "mongosh calls a computed value"))
        previous = char
        index += 1
    return findings


_JS_SYNTAX = frozenset(["if", "for", "while", "switch", "catch", "return", "typeof", "function"])


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _string_end(script: str, index: int) -> int:
    """Where the string literal opened by the quote at `index` ends (after its closing
    quote, backslash escapes skipped), in an awk program or a script; -1 when a line or the
    text ends first."""
    quote = script[index]
    index += 1
    while index < len(script):
        char = script[index]
        if char == "\\":
            index += 2
        elif char == quote:
            return index + 1
        elif char == "\n":
            return -1
        else:
            index += 1
    return -1
