"""How the words of a command are read for `redact_argv_rules`: options (combined, attached,
after `=` or as the next word), the shapes a secret takes in an option's value (`user:pass`,
`user%pass`, openssl's `pass:X`, sqlplus' `user/pass@db`), `KEY=VALUE` pairs and names that
say secret."""

from __future__ import annotations

from agentledger.runner.shell_gate.redact import SECRET_NAME

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "Arg",
    "Found",
    "add_found",
    "after_word",
    "pairs",
    "positional",
    "read_options",
    "secret_name",
    "simple_rule",
    "sql_secrets",
]

_NOT_SECRET_NAME = ("_file", "_path", "_dir", "-file", "-path", "_id", "-id", "_url", "_type")
"""...unless the name ends with one of these: the value names where the secret is."""


class Arg:
    """A word of a command: its value once the shell removed quotes (None when only known
    at run time) and where it is in the line (byte offsets)."""

    __slots__ = ("end", "start", "value")

    def __init__(self, value: str | None, start: int, end: int) -> None:
        self.value = value
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"Arg({self.value!r})"


Found = list[tuple[Arg, str, str]]
"""(the word, the secret it holds, the kind)."""


def secret_name(name: str) -> bool:
    """True when a variable, option or key called `name` holds a secret by its name."""
    lowered = name.lower().lstrip("-")
    if lowered.endswith(_NOT_SECRET_NAME) or lowered.endswith("stdin"):
        return False
    if lowered.endswith(("bypass", "compass", "askpass")):
        return False
    from agentledger.runner.shell_gate.redact_argv_general import qualified

    if qualified(name):  # `TOKEN_URL`, `secret_id_ttl`, `password_expired`
        return False
    return any(part in lowered for part in SECRET_NAME) or lowered.endswith(("pass", "pw"))


def usable(value: str | None) -> bool:
    """A value worth redacting: known, not empty, not a variable, a path or a prompt (`-`)."""
    if not value or value in ("-", "''", '""'):
        return False
    return value[0] not in "$/~<" and not value.startswith(("./", "../", "{{", "file:", "env:"))


class Options:
    """A tool's arguments read by its options: the secret-valued ones found, the flags seen,
    the positionals left."""

    __slots__ = ("flags", "found", "positionals", "values")

    def __init__(self) -> None:
        self.found: Found = []
        self.flags: set[str] = set()
        self.positionals: list[Arg] = []
        self.values: dict[str, Arg] = {}


def read_options(
    args: Sequence[Arg],
    secret: dict[str, str],
    valued: str | frozenset[str] = frozenset(),
    kind: str = "password-flag",
    *,
    stop: bool = False,
    single_dash: bool = False,
) -> Options:
    """Reads `args` by the tool's options: `secret` maps an option to the shape of its value
    (see `shaped`); `valued` lists the other options that take a value (so that it is not
    counted as a positional). Short options combine (`-bc`) and take values attached
    (`-pX`); long ones take them after `=` or as the next word. An option shaped ``attached``
    holds a secret only when attached (mysql's `-p` alone prompts). With `stop`, options end
    at the first positional (a wrapper's: the rest is the command it runs); with
    `single_dash`, `-word` is one option (openssl's `-pbkdf2`), never combined letters."""
    valued_set = frozenset(valued.split()) if isinstance(valued, str) else valued
    out = Options()
    index = 0
    while index < len(args):
        arg = args[index]
        word = arg.value
        index += 1
        if word is None or word == "--":
            if word == "--" or stop:
                out.positionals.extend(args[index - (word is None) :])
                break
            out.positionals.append(arg)
            continue
        if not word.startswith("-") or word == "-":
            out.positionals.append(arg)
            if stop:
                out.positionals.extend(args[index:])
                break
            continue
        name, has_value, value = word.partition("=")
        if (
            single_dash
            or word.startswith("--")
            or name in secret
            or name in valued_set
            or has_value
        ):
            shape = secret.get(name)
            if has_value or (shape == "attached"):
                if shape is not None:
                    add_found(out.found, arg, shaped(shape, value), kind)
                out.flags.add(name)
                continue
            out.flags.add(name)
            if (shape is not None or name in valued_set) and index < len(args):
                taken = args[index]
                index += 1
                out.values[name] = taken
                if shape is not None:
                    add_found(out.found, taken, shaped(shape, taken.value), kind)
            continue
        # combined short options: -bc, -pSECRET, -C12
        for offset in range(1, len(word)):
            letter = "-" + word[offset]
            rest = word[offset + 1 :]
            if letter in secret or letter in valued_set:
                out.flags.add(letter)
                if rest:
                    shape = secret.get(letter)
                    if shape is not None:
                        add_found(out.found, arg, shaped(shape, rest), kind)
                elif secret.get(letter) != "attached" and index < len(args):
                    taken = args[index]
                    index += 1
                    out.values[letter] = taken
                    if letter in secret:
                        add_found(out.found, taken, shaped(secret[letter], taken.value), kind)
                break
            out.flags.add(letter)
    return out


def shaped(shape: str, value: str | None) -> str | None:
    """The secret in an option's `value` by its shape: ``value`` or ``attached`` (all of it),
    ``user:pass``, ``user%pass``, ``user,pass`` (after the separator; nothing when absent),
    ``pass:`` (openssl's `pass:X`; `env:`, `file:`, `fd:` and `stdin` name no secret),
    ``user/pass`` (sqlplus' `user/pass@db`)."""
    if value is None:
        return None
    if shape in ("value", "attached"):
        return value
    if shape == "pass:":
        return value[5:] if value.startswith("pass:") else None
    if shape == "user/pass":
        user, slash, rest = value.partition("/")
        return rest.split("@", 1)[0] if slash and user and "@" not in user else None
    separator = shape[4]
    return value.partition(separator)[2] or None


def add_found(found: Found, arg: Arg, secret: str | None, kind: str) -> None:
    if usable(secret) and secret is not None:
        found.append((arg, secret, kind))


def positional(found: Found, args: Sequence[Arg], index: int, kind: str = "password-arg") -> None:
    if -len(args) <= index < len(args):
        add_found(found, args[index], args[index].value, kind)


def pairs(found: Found, args: Sequence[Arg], separator: str = "=") -> None:
    """`KEY=VALUE` words whose key names a secret (vault kv put, rclone config)."""
    for arg in args:
        key, has, value = (arg.value or "").partition(separator)
        if has and secret_name(key):
            add_found(found, arg, value, "secret-pair")


def after_word(found: Found, args: Sequence[Arg], words: tuple[str, ...]) -> None:
    """The word after any of `words` (`nmcli ... password X`, `mysqladmin password X`)."""
    for index, arg in enumerate(args[:-1]):
        if (arg.value or "").lower() in words:
            add_found(found, args[index + 1], args[index + 1].value, "password-arg")


_SQL_WORDS = ("password", "identified", "requirepass")


def sql_secrets(text: str) -> list[str]:
    """Passwords in SQL text: `PASSWORD 'x'`, `IDENTIFIED BY 'x'`, `PASSWORD = 'x'`."""
    lowered = text.lower()
    if not any(word in lowered for word in _SQL_WORDS):
        return []
    import re

    pattern = r"(?i)\b(?:password|identified\s+(?:with\s+\w+\s+)?by)\s*(?:=\s*)?E?'((?:[^']|'')+)'"
    return [match.group(1) for match in re.finditer(pattern, text)]


def simple_rule(secret: dict[str, str], valued: str = "") -> Callable[..., Found]:
    def rule(args: Sequence[Arg]) -> Found:
        return read_options(args, secret, valued).found

    return rule
