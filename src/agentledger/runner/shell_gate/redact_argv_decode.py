"""Secrets a command line holds in a form the detectors of text do not read as typed (issue
33, cause 10), made as safe on the command line as `redact_decode` makes them in output.

The line is read as bash reads it, and what its words become is searched by the redactor:

- words split over quotes (`"ghp_"'abc...'`, `$'sk_'"live..."`) are joined, a word split
  over a line continuation (`eyJ...\\<newline>...`) is joined to its other half, and a value
  split over variables the line assigns (`A=half; B=half; ... "$A$B"`) is put together;
- runs of escaped bytes (`\\x67`, `\\u0067`, `\\147`, `%67`) in any word are decoded;
- what `echo` and `printf` print (escapes decoded, printf's format filled in; pieces printed
  by several of them joined), here-strings and here-documents: a credential-file line
  (`.pgpass`, `.netrc`, `.my.cnf`, `.pypirc`, `.npmrc`, `credentials`) or an encoded secret
  in them is found as it would be in the command's output; what a decoder of the line
  (`base64 -d`, `xxd -r`, `base32 -d`, `openssl base64 -d`, then `gunzip`) or `rev`, `tr -d`,
  `paste -s` would make of it, too;
- key material without its header: base64 whose bytes are a private key (PKCS#1, PKCS#8,
  SEC1 DER, OpenSSH's format), or a raw 32- or 64-byte key (WireGuard's) given where a key
  goes (`wg ... private-key <(echo KEY)`, `PrivateKey = KEY`, `echo KEY > private.key`,
  `wg pubkey <<< KEY`);
- on a line that runs an SQL client, SQL that sets a password (`PASSWORD '...'`,
  `IDENTIFIED BY ...`, `SET PASSWORD FOR u = '...'`, sqlplus's `CONNECT u/pw`, redis's
  `AUTH` and `CONFIG SET requirepass`).

`hidden_secrets` answers the texts of the line to replace: the secret as typed when the line
holds it so, else the whole word or here-document that makes it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from tree_sitter import Node

__all__ = ["hidden_secrets", "may_hide"]

_SQL_CLIENTS = frozenset((
    "psql", "mysql", "mariadb", "sqlplus", "sqlcmd", "clickhouse-client", "clickhouse",
    "cockroach", "sqlite3", "isql", "tsql", "mysqlsh", "vsql", "usql", "pgcli", "mycli",
    "duckdb", "snowsql", "db2", "bsql", "sqsh", "redis-cli", "valkey-cli", "keydb-cli",
))  # fmt: skip
_SQL_ROLE_DDL = (
    r"(?i)\b(?:(?:set\s+)?password\s+for\s+\S+?\s*=\s*(?:password\s*\(\s*)?|password\s*\(\s*"
    r"|password\s*(?:=\s*)?(?=E?')|identified\s+(?:with\s+\w+\s+)?by\s+(?:password\s+)?"
    r"|^\s*conn(?:ect)?\s+[\w$#]+/(?=[^@\s;]+)|^\s*auth\s+(?:[^\s'\"]+\s+)?(?=\S+\s*$)"
    r"|config\s+set\s+(?:requirepass|masterauth)\s+)"
    r"(?:E?'(?P<quoted>(?:[^'\n]|'')+)'|\"(?P<double>[^\"\n]+)\"|(?P<bare>[^\s;'\"()@]+))"
)
"""SQL that sets a password (`PASSWORD '..'`, `IDENTIFIED BY ..`, `SET PASSWORD FOR u = ..`),
sqlplus's `CONNECT user/password@db`, and redis's `AUTH [user] password` and `CONFIG SET
requirepass ..` (given to a client on its standard input)."""
_JOINERS = r"\|\s*(?:tr\s+-d|paste\s+-s|xargs\b)"
_NOT_SECRETS = frozenset(("null", "values", "default", "random", "password"))
_KEY_CONTEXT = (
    r"(?i)private[-_ ]?key\s*[=:]?\s*(?:<\(\s*(?:echo|printf\s+\S+)\s+)?['\"]?"
    r"([A-Za-z0-9+/]{43}=)"
)
_KEY_STARTS = ("MI", "MC", "MH", "b3BlbnNzaC1rZXkt")
"""How the base64 of a DER private key (a SEQUENCE) or of OpenSSH's format starts."""
_ESCAPE = r"\\x[0-9a-fA-F]{2}|\\u00[0-9a-fA-F]{2}|\\0?[0-3][0-7]{2}|%[0-9A-Fa-f]{2}"
"""An escaped byte: a run of 8 or more (`\\x67`, `\\u0067`, `\\147`, `%67`), with the token
characters between them, is decoded in any word (printf, echo -e, `$'..'`, a script's
string, a URL)."""
_BASE64_RUN = r"[A-Za-z0-9+/]{16,}={0,2}"
_SEPARATORS = str.maketrans({c: " " for c in "|&;()<>`'\"$\n\t\\{}"})


def may_hide(line: str) -> bool:
    """False when `hidden_secrets` can find nothing in `line` (most lines: then it is not
    parsed): no quotes side by side, no line continuation, no escape, no here-document or
    here-string, no `echo`/`printf` whose output goes anywhere, no private key."""
    return "\\\n" in line or _may_parse(line)


def _may_parse(line: str) -> bool:
    """`may_hide` but for line continuations (joined without parsing the line)."""
    if "<<" in line or "\"'" in line or "'\"" in line or "$'" in line or "\\x" in line:
        return True
    if ("echo" in line or "printf" in line) and ("|" in line or ">" in line):
        return True
    if "=" in line and "$" in line and (";" in line or "&&" in line or "\n" in line):
        return True  # `A=half; B=half; use "$A$B"`
    if "M" in line and ("MI" in line or "MC" in line or "MH" in line):
        return True  # base64 of a DER key
    if "\\u" in line or "b3BlbnNzaC1rZXkt" in line or line.count("%") >= 8:
        return True
    return ("rivate" in line or "RIVATE" in line) and "key" in line.lower().replace("_", "-")


def hidden_secrets(
    line: str, redact: Callable[[str], str], marker: Callable[[str, str], str]
) -> list[tuple[str, str]]:
    """The texts of `line` that hide a secret, each with its marker, longest first."""
    found: dict[str, str] = {}
    for typed, kind in (*_continued(line, redact), *_escaped(line, redact)):
        found.setdefault(typed, kind)
    try:
        for typed, kind in _Finder(line, redact).find() if _may_parse(line) else ():
            found.setdefault(typed.strip("\n"), kind)  # a here-document keeps its last newline
    except RecursionError:  # nested past Python's stack: nothing more is read
        pass
    pairs = [(typed, marker(kind, typed)) for typed, kind in found.items() if typed.strip()]
    return sorted(pairs, key=lambda pair: -len(pair[0]))


def _continued(line: str, redact: Callable[[str], str]) -> list[tuple[str, str]]:
    """Both halves of a word split by a backslash-newline that, joined, hold a secret."""
    import re

    found: list[tuple[str, str]] = []
    for match in re.finditer(r"([^\s\\=]*)\\\n([^\s\\]*)", line):
        left, right = match.group(1), match.group(2)
        joined = (left + right).replace("'", "").replace('"', "")
        if not left or not right or len(joined) < 16:
            continue
        if redact(joined) != joined:
            found += [(left.strip("'\""), "split-secret"), (right.strip("'\""), "split-secret")]
    return found


def _escaped(line: str, redact: Callable[[str], str]) -> list[tuple[str, str]]:
    """Runs of escaped bytes that, decoded, hold a secret."""
    if line.count("\\") < 8 and line.count("%") < 8:
        return []
    import re
    from urllib.parse import unquote

    runs: list[list[int]] = []  # [start, end, escapes] of runs joined by token characters
    for match in re.finditer(_ESCAPE, line):
        start, end = match.span()
        if runs and (runs[-1][1] == start or _token_chars(line[runs[-1][1] : start])):
            runs[-1][1:] = [end, runs[-1][2] + 1]
        else:
            runs.append([start, end, 1])
    found: list[tuple[str, str]] = []
    for start, end, count in runs:
        if count < 8:
            continue
        while start > 0 and _token_chars(line[start - 1]):
            start -= 1
        while end < len(line) and _token_chars(line[end]):
            end += 1
        run = line[start:end]
        decoded = _escapes(unquote(run) if "%" in run else run)
        if decoded != run and redact(decoded) != decoded:
            found.append((run, "encoded-secret"))
    return found


def _anchored(text: str) -> bool:
    """True when a rule that matches only a whole line (a pgpass line, `requirepass X`,
    `rocommunity X`) may find `text` alone where it does not find it inside the line."""
    lowered = text.lower()
    return (
        "\n" in text
        or text.count(":") >= 4
        or any(word in lowered for word in ("requirepass", "masterauth", "community"))
    )


def _token_chars(text: str) -> bool:
    return all(char.isalnum() or char in "_-" for char in text)


class _Finder:
    """Reads the line's syntax tree for the texts its words become."""

    __slots__ = (
        "decoder", "found", "key_context", "line", "printed", "redact", "reshaped", "source", "sql",
    )  # fmt: skip

    def __init__(self, line: str, redact: Callable[[str], str]) -> None:
        import re

        self.line = line
        self.redact = redact
        self.source = line.encode("utf-8", "surrogateescape")
        words = set(line.translate(_SEPARATORS).split())
        self.sql = any(word.rsplit("/", 1)[-1] in _SQL_CLIENTS for word in words)
        key = "key" in line.lower() or "id_" in line
        self.key_context = (key and any(_key_file(word) for word in words)) or (
            "wg" in words and ("pubkey" in words or "private-key" in words)
        )
        self.decoder = _decoder(line)
        self.reshaped = ("rev" in words, "|" in line and re.search(_JOINERS, line) is not None)
        self.found: list[tuple[str, str]] = []
        self.printed: list[tuple[str, str]] = []

    def find(self) -> list[tuple[str, str]]:
        import re

        from agentledger.shell.bash_grammar import bash_parser

        for match in re.finditer(_KEY_CONTEXT, self.line):
            if _private_key(match.group(1), True):
                self.found.append((match.group(1), "private-key"))
        if any(start in self.line for start in _KEY_STARTS):
            for match in re.finditer(r"[A-Za-z0-9+/]{40,}={0,2}", self.line):
                if _private_key(match.group(), False):
                    self.found.append((match.group(), "private-key"))
        root = bash_parser().parse(self.source).root_node
        stack = [root]
        assigned: dict[str, Node] = {}
        uses: list[Node] = []
        while stack:
            node = stack.pop()
            stack.extend(reversed(node.named_children))
            if node.type == "variable_assignment":
                name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
                if name is not None and value is not None and _word(value):
                    assigned[self.typed(name)] = value
            elif node.type in ("string", "concatenation", "word") and (
                b"$" in self.source[node.start_byte : node.end_byte] and "=" in self.line
            ):
                uses.append(node)
            if node.type in ("concatenation", "ansi_c_string"):
                self.text(node, _word(node), "split-secret")
            elif node.type == "command":
                self.command(node)
            elif node.type == "herestring_redirect":
                for child in node.named_children:
                    self.text(child, _word(child), "encoded-secret")
            elif node.type == "heredoc_body":
                # its lines are the line's own, searched as output is: SQL and keys only
                self.sql_and_keys(self.typed(node), self.typed(node))
        if assigned:
            for node in uses:
                self.expanded(node, assigned)
        self.pieces()
        return self.found

    def pieces(self) -> None:
        """A secret printed in pieces by several echo/printf (`echo -n half > f; echo half
        >> f`) takes every piece; the rest of a private key whose start was found, too."""
        import re

        tokens = [(printed.strip(), typed) for printed, typed in self.printed]
        tokens = [
            (text, typed) for text, typed in tokens if len(text) >= 8 and len(text.split()) == 1
        ]
        if len(tokens) > 1:
            joined = "".join(text for text, _ in tokens)
            if self.redact(joined) != joined or self.keys_in(joined):
                for text, typed in tokens:
                    if self.redact(text) == text:
                        self.found.append((typed, "split-secret"))
        if any(kind == "private-key" for _, kind in self.found):
            for match in re.finditer(r"[A-Za-z0-9+/]{40,}={0,2}", self.line):
                self.found.append((match.group(), "private-key"))

    def keys_in(self, text: str) -> bool:
        found = len(self.found)
        self.keys(text, text)
        added = len(self.found) > found
        del self.found[found:]
        return added

    def expanded(self, node: Node, assigned: dict[str, Node]) -> None:
        """`node` with the variables the line assigns literally put in: a secret split
        over them (`A=ghp_x; B=y; curl -H "token $A$B"`) takes every value it is made of."""
        import re

        used: list[Node] = []

        def value(match: re.Match[str]) -> str:
            found = assigned.get(match.group(1) or match.group(2))
            if found is None:
                return match.group()
            used.append(found)
            return _word(found) or ""

        text = re.sub(r"\$\{(\w+)\}|\$(\w+)", value, self.typed(node))
        text = text.replace('"', "").replace("'", "")
        if len(used) < 2 or self.redact(text) == text:
            return
        if any(self.redact(_word(part) or "") != _word(part) for part in used):
            return  # a value that is a secret alone is found where it is typed
        for part in used:
            self.found.append((self.typed(part), "split-secret"))

    def typed(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")

    def command(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        if name is None:
            return
        tool = self.typed(name).rsplit("/", 1)[-1]
        args = list(node.children_by_field_name("argument"))
        if tool not in ("echo", "printf") or not args:
            return
        values = [_word(arg) or self.typed(arg) for arg in args]
        if tool == "echo":
            while len(values) > 1 and values[0][:1] == "-" and not values[0].strip("-neE"):
                values, args = values[1:], args[1:]
            printed = " ".join(_escapes(value) for value in values)
        else:
            printed = _printf(values)
        start, end = args[0].start_byte, args[-1].end_byte
        typed = self.source[start:end].decode("utf-8", "surrogateescape")
        if printed in self.line and not _anchored(printed):
            self.sql_and_keys(printed, typed)  # the detectors read it where it is typed
        else:
            self.search(printed, typed, "encoded-secret")
        self.printed.append((printed, typed))
        parent = node.parent
        if parent is not None and parent.type == "process_substitution":
            before = parent.prev_named_sibling
            if before is not None and self.typed(before).lower() in ("private-key", "privatekey"):
                for word in printed.split():
                    if _private_key(word, True):
                        self.found.append((word, "private-key"))

    def text(self, node: Node, value: str | None, kind: str) -> None:
        if value:
            self.search(value, self.typed(node), kind)

    def search(self, value: str, typed: str, kind: str) -> None:
        """Finds the secrets of `value`, the text the words `typed` of the line become."""
        redacted = self.redact(value)
        if redacted != value:
            for secret, found_kind in _replaced(value, redacted) or [(value, kind)]:
                self.add(secret, typed, found_kind)
        self.sql_and_keys(value, typed)

    def sql_and_keys(self, value: str, typed: str) -> None:
        """SQL that sets a password, key material, and what a decoder of the line makes of
        `value` as a whole (hex or base64 over several words or lines), and `value` turned
        back by `rev` or joined by `tr -d`, `paste -s` or `xargs` of the line."""
        reverse, join = self.reshaped
        for variant in (value[::-1] if reverse else "", "".join(value.split()) if join else ""):
            if variant and variant != value and self.redact(variant) != variant:
                self.found.append((typed, "encoded-secret"))
        if self.decoder:
            raw = _gunzip(_decode("".join(value.split()), self.decoder))
            if raw is not None and len(raw) >= 16:
                text = raw.decode("utf-8", "replace")
                if _der_private_key(raw) or (_is_text(raw) and self.redact(text) != text):
                    self.found.append((typed, "encoded-secret"))
        if self.sql:
            import re

            for match in re.finditer(_SQL_ROLE_DDL, value, re.MULTILINE):
                secret = match.group("quoted") or match.group("double") or match.group("bare")
                if secret and secret.lower() not in _NOT_SECRETS:
                    redis = match.group(0).lstrip().lower().startswith(("auth", "config"))
                    self.add(secret, typed, "redis-password" if redis else "sql-password")
        self.keys(value, typed)

    def keys(self, value: str, typed: str) -> None:
        """Runs of base64 words of `value` whose first is the start of a private key."""
        import re

        words = value.split()
        index = 0
        while index < len(words):
            if not re.fullmatch(_BASE64_RUN, words[index]) or not _private_key(
                words[index], self.key_context
            ):
                index += 1
                continue
            end = index + 1
            while end < len(words) and re.fullmatch(_BASE64_RUN, words[end]):
                end += 1
            for word in words[index:end]:
                self.add(word, typed, "private-key")
            index = end

    def add(self, secret: str, typed: str, kind: str) -> None:
        if "[REDACTED" in secret:
            return
        self.found.append((secret if secret in typed else typed, kind))


def _word(node: Node) -> str | None:
    from agentledger.shell.words import node_word

    return node_word(node).value


def _escapes(text: str) -> str:
    """`text` with the escapes of `echo -e` and printf's format decoded."""
    if "\\" not in text:
        return text
    if "\\0" in text:  # echo -e's octal `\0NNN`
        import re

        text = re.sub(r"\\0([0-7]{1,3})", lambda m: f"\\{int(m.group(1), 8):03o}", text)
    try:
        return text.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return text


def _printf(values: list[str]) -> str:
    """What `printf FORMAT ARG...` prints (%s, %b, %d and the like filled in, in turn)."""
    import re

    if values[:1] == ["-v"]:
        values = values[2:]
    if not values:
        return ""
    form, data = _escapes(values[0]), values[1:]
    slots = re.findall(r"%[-+ #0-9.]*[sbdqiuxXc]", form)
    if not slots:
        return form
    pieces = re.split(r"%[-+ #0-9.]*[sbdqiuxXc]", form)
    printed = ""
    for start in range(0, max(len(data), 1), len(slots)):
        chunk = [_escapes(value) for value in data[start : start + len(slots)]]
        chunk += [""] * (len(pieces) - len(chunk))
        printed += "".join(piece + chunk[index] for index, piece in enumerate(pieces[:-1]))
        printed += pieces[-1]
    return printed.replace("%%", "%")


def _replaced(original: str, redacted: str) -> list[tuple[str, str]] | None:
    """The texts of `original` that `redacted` replaced by markers, with their kinds; None
    when the two cannot be told apart (markers side by side)."""
    import re

    parts = re.split(r"\[REDACTED:([\w.-]+):[0-9a-f]{6}\]", redacted)
    if not original.startswith(parts[0]):
        return None
    position = len(parts[0])
    found: list[tuple[str, str]] = []
    for index in range(1, len(parts), 2):
        kind, after = parts[index], parts[index + 1]
        if index + 2 >= len(parts):
            end = len(original) - len(after)
            if not original.endswith(after) or end < position:
                return None
        else:
            end = original.find(after, position) if after else -1
            if end < 0:
                return None
        found.append((original[position:end], kind))
        position = end + len(after)
    return found


def _key_file(word: str) -> bool:
    """True for a path that names a private key's file (`private.key`, `~/.ssh/id_ed25519`)."""
    name = word.rsplit("/", 1)[-1].lower()
    if "pub" in name or not name:
        return False
    return "key" in name or name.startswith(("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"))


def _private_key(token: str, raw_allowed: bool) -> bool:
    """True when base64 `token` starts a private key: DER whose first element is a small
    version number (PKCS#1, PKCS#8, SEC1; a certificate or a public key starts with a
    SEQUENCE or a long INTEGER), OpenSSH's format, or, where a key is expected, 32 or 64 bytes
    that are not text (a raw key: WireGuard's, an Ed25519 seed)."""
    import binascii

    compact = token.rstrip("=")
    usable = compact[: len(compact) - len(compact) % 4]
    try:
        raw = binascii.a2b_base64(usable + "=" * (-len(usable) % 4))
    except (binascii.Error, ValueError):
        return False
    if _der_private_key(raw):
        return True
    if raw_allowed and len(token) in (44, 88) and token.endswith("="):
        full = binascii.a2b_base64(token)
        return len(full) in (32, 64) and not _is_text(full)
    return False


def _der_private_key(raw: bytes) -> bool:
    if raw.startswith(b"openssh-key-v1\x00"):
        return True
    if len(raw) < 8 or raw[0] != 0x30:
        return False
    header = 2 if raw[1] < 0x80 else 2 + (raw[1] & 0x7F)
    version = raw[header : header + 4]
    if version[:2] != b"\x02\x01" or version[2:3] not in (b"\x00", b"\x01", b"\x02"):
        return False
    return version[3:4] in (b"\x30", b"\x02", b"\x04")


def _decoder(line: str) -> str:
    """The decoder a line feeds (`hex`, `base64`, `base32`), or "" for none."""
    import re

    if re.search(r"\bxxd\b[^|;&]*\s-(?:r|[a-z]*r[a-z]*)\b|\bbasenc\b[^|;&]*--base16", line):
        return "hex"
    if re.search(r"\b(?:base32|basenc)\b[^|;&]*\s(?:-[a-zA-Z]*d[a-zA-Z]*|--decode)\b", line):
        return "base32" if "base32" in line else "base64"
    if re.search(
        r"\b(?:base64\b[^|;&]*\s(?:-[a-zA-Z]*[dD][a-zA-Z]*|--decode)\b"
        r"|openssl\s+(?:enc\s|base64\b)[^|;&]*\s-d\b)",
        line,
    ):
        return "base64"
    return ""


def _decode(compact: str, decoder: str) -> bytes | None:
    import binascii

    try:
        if decoder == "hex":
            return binascii.unhexlify(compact)
        if decoder == "base32":
            import base64

            return base64.b32decode(compact + "=" * (-len(compact) % 8))
        return binascii.a2b_base64(compact + "=" * (-len(compact) % 4))
    except (binascii.Error, ValueError):
        return None


def _gunzip(raw: bytes | None) -> bytes | None:
    """`raw` decompressed when it is gzip (`base64 -d | gunzip`), at most 1 MB of it."""
    if raw is None or not raw.startswith(b"\x1f\x8b"):
        return raw
    import zlib

    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, 1 << 20)
    except zlib.error:
        return raw


def _is_text(raw: bytes) -> bool:
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(char.isprintable() or char in "\n\r\t" for char in decoded)
