"""Secrets in code, SQL, request bodies and here-documents on a command line, whatever
the tool (the general layer's reading of payloads, `redact_argv_general`): string literals
bound to a secret-named key in any language's syntax (`password='x'`, `"apiKey": "x"`,
`password: "x"`, `my $pass = "x"`, `.db.password = "x"`, a default after `||`), `key=value`
pairs of form bodies, connection strings and option lists (`passwd=x&`, `http.password=x,`),
SQL (`PASSWORD 'x'`, `IDENTIFIED BY 'x'` or Oracle's unquoted word, `SET PASSWORD FOR u =
'x'`), and calls that take a password by place: first (`crypt('x')`, `bcrypt.hashpw(b"x")`,
`password_hash("x")`, `setPassword("x")`, `ConvertTo-SecureString 'x'`), second of a
two-argument login (`ftp.login('u', 'x')`) or third of a connect (`connect(dsn, user, 'x')`,
`new mysqli(h, u, 'x')`, `new PDO(dsn, u, 'x')`).
"""

from __future__ import annotations

from agentledger.runner.shell_gate.redact_argv_general import (
    candidate,
    name_says_secret,
    payload_words,
    placeholder,
    words_of,
)
from agentledger.runner.shell_gate.redact_argv_options import Arg, Found, add_found

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

__all__ = ["heredoc_found", "payload_found", "payload_secrets"]

_compiled: list[re.Pattern[str]] = []


def _patterns() -> list[re.Pattern[str]]:
    if not _compiled:
        import re

        quoted = r"(?:b?'(?P<sq>(?:[^'\\\n]|\\.){1,256})'|b?\"(?P<dq>(?:[^\"\\\n]|\\.){1,256})\")"
        _compiled.extend(
            re.compile(pattern, flags)
            for pattern, flags in (
                # a key bound to a string literal: password='x', "token": "x", $pass = "x"
                (
                    r"(?P<key>[$@:.]?[A-Za-z_][\w.:-]{0,63}|\"[^\"\n]{1,64}\"|'[^'\n]{1,64}')"
                    r"\s*\]?\s*(?:=>|:=|\+?=(?!=)|:(?![:=]))\s*"
                    r"(?:[\w.$]+(?:\[[^\]\n]*\])?\s*(?:\|\||\?\?|\bor\b)\s*)?" + quoted,
                    0,
                ),
                # key=value in a form body, a connection string, an option list
                (
                    r"(?:^|(?<=[\s,&;?(|]))(?P<key>[A-Za-z_][\w.:-]{0,63})="
                    r"(?P<val>[^\s,&;'\"()|]+)",
                    0,
                ),
                # SQL: PASSWORD 'x', PASSWORD = 'x', IDENTIFIED BY 'x', SET PASSWORD FOR u = 'x'
                (
                    r"\b(?:password|identified\s+(?:with\s+\w+\s+)?by)\s*"
                    r"(?:for\s+(?:'[^']*'|\"[^\"]*\"|[\w.]+)(?:@(?:'[^']*'|\"[^\"]*\"|[\w.%-]+))?"
                    r"\s*)?(?:=\s*)?\(?\s*[EN]?" + quoted,
                    re.IGNORECASE,
                ),
                (r"ConvertTo-SecureString\s+(?:-String\s+)?" + quoted, re.IGNORECASE),
                # Oracle's unquoted IDENTIFIED BY word (not BY VALUES 'hash')
                (
                    r"\bidentified\s+by\s+(?!values\b|password\b|random\b)(?P<dq>[A-Za-z0-9_#$!@%^*+-]+)",
                    re.IGNORECASE,
                ),
                # a call: crypt('x'), setPassword("x"), connect(dsn, user, 'x')
                (r"(?P<callee>[A-Za-z_][\w]*(?:(?:\.|::|->)[A-Za-z_]\w*)*)\s*\(", 0),
            )
        )
    return _compiled


def payload_secrets(text: str) -> list[str]:
    """The secrets in code, SQL, a request body or a here-document: see the module's text."""
    return [secret for secret, _ in _payload(text)]


def payload_found(found: Found, arg: Arg, text: str) -> None:
    """The secrets of `text` (the word `arg`, or what it is as typed), attributed to `arg`."""
    for secret, kind in _payload(text):
        add_found(found, arg, secret, kind)


def _payload(text: str) -> list[tuple[str, str]]:
    if not payload_words().search(text.lower()):
        return []
    binding, pair, sql, secure, oracle, call = _patterns()
    found: list[str] = []
    sql_found: list[str] = []
    for match in binding.finditer(text):
        key = match.group("key").strip("'\"")
        strength = name_says_secret(key)
        value = match.group("sq") if match.group("sq") is not None else match.group("dq")
        header = key.lower() in ("authorization", "proxy-authorization")
        if (header and value) or (strength is not None and candidate(value, strength)):
            found.append(value)
    for match in pair.finditer(text):
        value = match.group("val")
        if text[match.end() : match.end() + 1] == "(":
            continue  # `auth=HTTPBasicAuth(...)`: a call, read below
        strength = name_says_secret(match.group("key"))
        if strength is not None and candidate(value, strength):
            found.append(value)
    for pattern in (sql, secure, oracle):
        for match in pattern.finditer(text):
            value = match.group("dq") if pattern is oracle else match.group("sq")
            value = match.group("dq") if value is None else value
            if value and not placeholder(value):
                (found if pattern is secure else sql_found).append(value)
    for count, match in enumerate(call.finditer(text)):
        if count >= _CALLS:
            break
        found.extend(_call_secrets(match.group("callee"), text, match.end()))
    return [(secret, "sql-password") for secret in sql_found] + [
        (secret, "secret-in-code") for secret in found
    ]


_CALLS = 256
"""The calls of one text read for a password by place (a text of thousands is read in
bounded time; the key-bound and SQL forms are read whole)."""
_CALL_SPAN = 512
_CONNECT = frozenset((
    "connect", "mysqli", "pdo", "mysql_connect", "mysqli_connect", "real_connect",
    "mysql_real_connect", "pg_connect", "oci_connect", "sqlsrv_connect", "create_engine",
))  # fmt: skip
_HASHERS = frozenset(("crypt", "hashpw", "checkpw", "hash", "hashsync", "encrypt", "mkpasswd"))
_GETTERS = ("get", "read", "load", "fetch", "find", "lookup", "has", "is", "print", "show", "list")


def _call_secrets(callee: str, text: str, start: int) -> list[str]:
    """The password a call is given by its place: the first argument of a hasher or setter
    (`crypt('x')`, `setPassword("x")`), the third of a connect (`connect(dsn, u, 'x')`),
    the second of a two-argument login or credential (`ftp.login('u', 'x')`,
    `HTTPBasicAuth('u', 'x')`)."""
    import re

    last = re.split(r"\.|::|->", callee)[-1]
    words = words_of(last)
    lowered = last.lower()
    if not words or words[0] in _GETTERS:
        return []
    if lowered in _CONNECT:
        wanted, place = 3, 2
    elif lowered.endswith(("login", "auth", "credential")):  # HTTPBasicAuth('u', 'x')
        wanted, place = 3, 1
    elif _takes_password_first(callee, last, words):
        wanted, place = 1, 0
    else:
        return []
    arguments = _arguments(text, start, wanted)
    if len(arguments) <= place or (place == 1 and len(arguments) != 2):
        return []
    chosen = arguments[place]
    literal = re.fullmatch(r"\s*b?(?:'([^'\n]+)'|\"([^\"\n]+)\")\s*", chosen)
    if literal is None:
        return []
    value = literal.group(1) or literal.group(2)
    return [value] if candidate(value) else []


def _takes_password_first(callee: str, last: str, words: list[str]) -> bool:
    """A hasher (`crypt.crypt`, `bcrypt.hashpw`) or a setter (`setPassword`, `password_hash`)."""
    lowered = last.lower()
    if lowered in ("crypt", "hashpw") or (lowered in _HASHERS and callee != last):
        return True
    return name_says_secret(last) == "strong" or any(w in ("password", "passwd") for w in words)


def _arguments(text: str, start: int, most: int) -> list[str]:
    """The top-level arguments of the call whose `(` ends before `start`: up to `most`, read
    from at most `_CALL_SPAN` characters."""
    arguments: list[str] = []
    depth = 0
    quote = ""
    current = start
    for position in range(start, min(len(text), start + _CALL_SPAN)):
        char = text[position]
        if quote:
            if char == quote and text[position - 1] != "\\":
                quote = ""
            continue
        if char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                arguments.append(text[current:position])
                return arguments if arguments != [""] else []
            depth -= 1
        elif char == "," and depth == 0:
            arguments.append(text[current:position])
            current = position + 1
            if len(arguments) >= most:
                return arguments
    return arguments


def heredoc_found(found: Found, arg: Arg) -> None:
    """The secrets of a here-document or here-string `arg`, attributed to it."""
    payload_found(found, arg, arg.value or "")
