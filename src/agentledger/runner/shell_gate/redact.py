"""Redaction: secrets are replaced in what the gate logs by ``[REDACTED:KIND:HASH]``.

The kind says what was found (``github-token``, ``url-password``, ``private-key``); the hash
is six hex digits of a keyed sha256 of the secret, so two events can be seen to share one
without the log holding it (the key, private to the user, lives beside the validated-file
cache: a short hash of a weak password cannot be tried against a dictionary without it).

The detectors are of two kinds:

- the key shapes that detect-secrets' plugins know (AWS, GitHub, GitLab, Slack, Stripe,
  SendGrid, PyPI, npm, JWTs, Azure storage keys, Twilio, ...), taken from the installed
  library;
- the ops contexts it does not cover, in `redact_rules.OPS_RULES`: passwords in URLs and
  connection strings, ``curl -u user:pass``, authorization and API-key headers, cookies,
  secret-looking flags and the short password flags of the tools that have them
  (``mysql -pX``, ``sshpass -p``, ``docker login -p``, ``redis-cli -a``,
  ``-passout pass:X``), environment assignments and config lines, docker's ``auth``, private
  key blocks of every kind, and key shapes the library lacks (Hugging Face, DigitalOcean,
  Vault, Anthropic, Stripe webhook secrets, Azure client secrets, age, ...).

A policy adds its own regular expressions (`redact:`): the group named ``secret``, else the
first group, else the whole match is replaced (kind ``policy``).

Importing detect-secrets costs more than the rest of a gated command, so the rule table (its
patterns and each one's required words) is built once and read back from the cache after:
a pattern is compiled only when one of its words is in the text.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Sequence
    from typing import Any

__all__ = [
    "MARK",
    "SECRET_NAME",
    "SHORTEST_TOKEN",
    "TOKEN_CHARACTERS",
    "TOKEN_CLASS",
    "TOOL_NAMES",
    "Redactor",
    "argv_might_hold",
    "check_pattern",
    "fingerprint",
    "may_hold_encoded",
    "rule_table",
]

MARK = "[REDACTED"
"""How every redaction marker starts: ``[REDACTED:KIND:HASH]``."""

# detect-secrets plugins left out: public IP addresses are not secrets, and the private key
# plugin finds a block's header only, where the rules above replace the whole block.
_SKIPPED_PLUGINS = frozenset(("IPPublicDetector", "PrivateKeyDetector"))
_TABLE_FORMAT = 7
_KEYWORD_REGEXES: tuple[str, ...] = ()
"""detect-secrets' keyword plugin (`password: X`, `db_pass = X`) is not a regex plugin, but
its patterns are: any of them named here joins the table. None is: on the corpora of
tests/test_gate_secrets.py and tests/data they found nothing the rules above miss, and they
tripled the cost of redacting ops output (their `\\w*` affixes match anywhere)."""
_MULTILINE = 8
"""re.MULTILINE's value."""

_Rule = tuple[str, str, int, "tuple[str, ...] | None", bool, int, "list[list[Any]]", int]
"""(kind, pattern, re flags, words of which one must be in the lowered text or None,
whether the group to replace is found by the library's convention, the length of its
shortest match, [word, count] pairs: how often each word is in every match, such as the
four colons of a pgpass line, and the run of token characters every match holds; see
`redact_needs`)."""

TOKEN_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"  # noqa: S105
"""What an encoded token (base64, base64url, hex) is made of, as `redact_decode` reads it."""
TOKEN_CLASS = "A-Za-z0-9+/=_-"  # noqa: S105
"""TOKEN_CHARACTERS as the inside of a regular expression's character class."""
SHORTEST_TOKEN = 20
"""The shortest token `redact_decode` decodes."""
_AS_RUNS = str.maketrans(TOKEN_CHARACTERS, "a" * len(TOKEN_CHARACTERS))


_SEPARATORS = str.maketrans({c: " " for c in "|&;()<>`'\"$/=\n\t\\{}"})
TOOL_NAMES = frozenset((
    "aws", "buildah", "bw", "chgpasswd", "chpasswd", "clickhouse-client", "cryptsetup", "curl",
    "docker", "expect", "ftp", "gh", "helm", "htpasswd", "ipmitool", "kubectl", "ldapadd",
    "ldapdelete", "ldapmodify", "ldapmodrdn", "ldappasswd", "ldapsearch", "ldapwhoami", "lftp",
    "mariadb", "mariadb-dump", "mc", "mongo", "mongosh", "mosquitto_pub", "mosquitto_sub", "mysql",
    "mysqladmin", "mysqlcheck", "mysqldump", "mysqlimport", "nerdctl", "nmcli", "oc", "openssl",
    "oras", "passwd", "podman", "psql", "rabbitmqctl", "rclone", "rdesktop", "redis-cli",
    "rpcclient", "sftp", "skopeo", "smbclient", "smbpasswd", "snmpbulkwalk", "snmpget",
    "snmpgetnext", "snmpset", "snmptable", "snmptrap", "snmpwalk", "sqlcmd", "sqlplus",
    "ssh-keygen", "sshpass", "sudo", "useradd", "usermod", "valkey-cli", "vault", "wget",
    "wlfreerdp", "wpa_passphrase", "xfreerdp", "xfreerdp3", "mosquitto_passwd", "mkpasswd",
    "slappasswd", "doveadm", "unrar", "rar", "net", "ykman", "pkcs11-tool", "az", "etcdctl",
    "rabbitmqadmin", "kinit", "vncpasswd", "gpg", "gpg2", "openconnect", "cqlsh", "isql", "bcp",
    "sqsh", "twine", "cargo", "poetry", "doctl", "kadmin", "kadmin.local", "plink", "pscp", "psftp",
    "racadm", "wpa_cli", "grafana-cli", "ccrypt", "mcrypt", "winexe", "tsql", "freebcp", "nodetool",
    "npm", "yarn", "pnpm", "iwconfig", "expdp", "impdp", "exp", "imp", "rman", "sqlldr", "dgmgrl",
    "ab", "security", "oathtool", "gcloud", "vncviewer", "xtightvncviewer", "base64", "nc", "ncat",
    "netcat", "telnet", "socat", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum",
    "sha512sum", "b2sum",
))  # fmt: skip
"""The tools of `redact_argv_rules` (TOOLS, STDIN): a line naming none is not parsed."""
SECRET_NAME = (
    "password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "api-key",
    "credential", "sshpass", "pgpass", "mysql_pwd", "_pwd", "_pass", "private_key", "auth_key",
    "access_key", "_psk", "requirepass", "masterauth",
)  # fmt: skip
"""Parts of a variable, option or key name that say its value is a secret (lowered)."""


_GENERAL_WORDS = (
    "pass", "pw", "secret", "token", "key", "auth", "cred", "cookie", "-session", "session=",
    "session:", "session'", 'session"', "sessionid", "signature", "community", "identified",
    "crypt", "connect(", "mysqli", "pdo", "login(", "psk", "http-basic",
)  # fmt: skip


def argv_might_hold(line: str) -> bool:
    """False when no rule of `redact_argv` can find anything in `line`: no tool of the rules,
    no `_GENERAL_WORDS` (that may say secret), no `user:password` (most lines: not parsed)."""
    if not TOOL_NAMES.isdisjoint(line.translate(_SEPARATORS).split()):
        return True
    lowered = line.lower()
    if any(p in lowered for p in _GENERAL_WORDS) or (":" in line and ("@" in line or "-u" in line)):
        return True  # a name that may say secret (redact_argv_general), user:password(@host)
    if "-p" not in line and "-P" not in line:
        return False
    import re  # -u USER -p PASS of any tool

    return bool(re.search(r"(?<!\S)-[pP]", line) and re.search(r"(?<!\S)(?:-[ulU]|--user)", line))


def may_hold_encoded(text: str) -> bool:
    """False when `redact_decode` can find nothing in `text`: a single line without a run of
    SHORTEST_TOKEN token characters (a dump, a run of lines or a Secret's data needs two
    lines). The command words, paths and reasons of most events are such lines, and then
    neither that module nor `re` is loaded."""
    if len(text) < SHORTEST_TOKEN:
        return False
    return "\n" in text or "a" * SHORTEST_TOKEN in text.translate(_AS_RUNS)


_SHORTEST_KNOWN = 8
"""The shortest secret of a command that is replaced in its output too."""
_DOTALL = 16
"""re.DOTALL's value (kept here so that `re` is imported only to compile)."""
_BLOCK_SCALAR = 1 << 20
"""Not a flag of `re`: the rule matches only where a line ends in a YAML block scalar's
indicator (`key: |`, `key: >-`), so text without one is not searched (letter `y`)."""
_CSV_FIELD = 1 << 21
"""Not a flag of `re`: the rule matches only where one of its words ends a CSV field
(`db_password,`), so text without one is not searched (letter `c`)."""
_OWN_FLAGS = _BLOCK_SCALAR | _CSV_FIELD
_WINDOWED = 4096
"""Text longer than this is searched only around the words a rule requires..."""
_DENSE = 400
"""...unless they occur more than once in this many characters."""

_compiled: dict[tuple[str, int], re.Pattern[str]] = {}
_decode: list[Any] = []
"""The module `redact_argv_decode`, once imported."""
_last_hidden: dict[tuple[str, tuple[str, ...]], list[tuple[str, str]]] = {}
_table: list[_Rule] | None = None


def check_pattern(pattern: str) -> str | None:
    """Why `pattern` is not a usable regular expression, or None when it is."""
    import re

    try:
        re.compile(pattern)
    except re.error as exc:
        return f"not a regular expression: {exc}"
    return None


def fingerprint(secret: str) -> str:
    """Six hex digits of the keyed sha256 of `secret`: the same secret, the same digits."""
    from agentledger.runner.shell_gate.redact_key import redaction_key
    from agentledger.shell.validated_cache import sha256_hex

    return sha256_hex(redaction_key() + secret.encode("utf-8", "surrogatepass"))[:6]


class Redactor:
    """Replaces secrets in text by ``[REDACTED:KIND:HASH]``: the built-in detectors (the
    library's and the ops contexts) plus `extra` patterns from a policy."""

    __slots__ = ("extra", "known")

    def __init__(self, extra: Sequence[str] = (), known: Sequence[tuple[str, str]] = ()) -> None:
        self.extra = tuple(extra)
        self.known = tuple(sorted(known, key=lambda item: -len(item[0])))

    def redact_command(self, command: str) -> str:
        """The command line `command` as logged: the secrets its tools take as arguments or
        on their input (`redact_argv`: `htpasswd -b F U PASS`, `echo PW | sudo -S ...`)
        replaced, then what the detectors recognise."""
        hidden = self._hidden(command)
        if argv_might_hold(command):
            from agentledger.runner.shell_gate.redact_argv import redact_line

            command = redact_line(command, _marker)[0]
        for typed, mark in hidden:
            command = command.replace(typed, mark)
        return self.redact(command)

    def _hidden(self, command: str) -> list[tuple[str, str]]:
        """The texts of `command` that hide a secret (`redact_argv_decode`), with markers."""
        if not _decode:
            from agentledger.runner.shell_gate import redact_argv_decode

            _decode.append(redact_argv_decode)
        if not _decode[0].may_hide(command):
            return []
        key = (command, self.extra)  # the gate asks for the command and for its parts
        found = _last_hidden.get(key)
        if found is None:
            found = _decode[0].hidden_secrets(command, Redactor(self.extra).redact, _marker)
            _last_hidden.clear()
            _last_hidden[key] = found
        return list(found)

    def knowing(self, command: str) -> Redactor:
        """This redactor, also replacing wherever they appear the secrets the command line
        `command` holds by their place in it (the event's parts and reason quote it)."""
        known = self._hidden(command)
        if argv_might_hold(command):
            from agentledger.runner.shell_gate.redact_argv import redact_line

            known += redact_line(command, _marker)[1]
        return Redactor(self.extra, (*self.known, *known)) if known else self

    def redact_quoting(self, text: str) -> str:
        """`redact` for a text that quotes the command (a part of it, a reason): every
        secret `knowing` found in the command goes, however short."""
        for secret, mark in self.known:
            if secret in text:
                text = text.replace(secret, mark)
        return self.redact(text)

    def redact(self, text: str) -> str:
        """`text` with every secret the detectors recognise replaced by its marker, and the
        secrets `knowing` found in the command wherever they are, when long enough not to be
        a common word of output as well (`mysql -proot`: `root` stays in a user list)."""
        if not text:
            return text
        from agentledger.runner.shell_gate.redact_key import strip_key

        text = strip_key(text)
        for secret, mark in self.known:
            if len(secret) >= _SHORTEST_KNOWN and secret in text:
                text = text.replace(secret, mark)
        decode = may_hold_encoded(text)
        if decode:
            from agentledger.runner.shell_gate.redact_decode import rescan_lines

            text = rescan_lines(text, self._rules_only, _marker)
        lowered = text.lower()
        runs: str | None = None
        for kind, pattern, flags, words, library, shortest, needs, run in rule_table():
            if len(text) < shortest:
                continue
            if words is not None and not any(word in lowered for word in words):
                continue
            if needs and not _has_counts(lowered, needs):
                continue
            if kind == "pgpass" and not _unblank_line(text, ":", 4):
                continue
            if flags & _OWN_FLAGS and not _has_shape(text, lowered, flags, words):
                continue
            if run:
                runs = text.translate(_AS_RUNS) if runs is None else runs
                if "a" * run not in runs:
                    continue
            replace = _library_replacer(kind) if library else _replacer(kind)
            regex = _compile(pattern, flags)
            if words is None or flags & (_DOTALL | _MULTILINE) or len(text) < _WINDOWED:
                redacted = regex.sub(replace, text)
            else:
                redacted = _sub_in_windows(regex, replace, text, lowered, words)
            if redacted != text:
                text, lowered, runs = redacted, redacted.lower(), None
        for pattern in self.extra:
            text = _compile(pattern, 0).sub(_replacer("policy"), text)
        if not decode:
            return text
        from agentledger.runner.shell_gate.redact_decode import rescan

        return rescan(text, self._rules_only, _marker)

    def _rules_only(self, text: str) -> str:
        """`redact` without looking into encoded text (what `rescan` runs on decoded text)."""
        lowered = text.lower()
        for kind, pattern, flags, words, library, shortest, needs, run in rule_table():
            if len(text) < shortest or (words is not None and not any(w in lowered for w in words)):
                continue
            if needs and not _has_counts(lowered, needs):
                continue
            if kind == "pgpass" and not _unblank_line(text, ":", 4):
                continue
            if flags & _OWN_FLAGS and not _has_shape(text, lowered, flags, words):
                continue
            if run and "a" * run not in text.translate(_AS_RUNS):
                continue
            replace = _library_replacer(kind) if library else _replacer(kind)
            redacted = _compile(pattern, flags).sub(replace, text)
            if redacted != text:
                text, lowered = redacted, redacted.lower()
        return text


def _unblank_line(text: str, char: str, count: int) -> bool:
    """True when a line of `text` holds `count` of `char` and no blank: a pgpass line
    (host:port:db:user:password), not `ip a`'s IPv6 addresses among spaces."""
    lines = text.splitlines()
    return any(line.count(char) >= count and len(line.split()) == 1 for line in lines)


def _has_shape(text: str, lowered: str, flags: int, words: Sequence[str] | None) -> bool:
    """False when `text` lacks the shape a rule flagged `_BLOCK_SCALAR` or `_CSV_FIELD` needs
    (found by str methods: these rules' words are common in ops output, and searching the
    lines around each for the pattern cost a tenth of all redaction)."""
    if flags & _BLOCK_SCALAR:
        for indicator in "|>":
            found = text.find(indicator)
            while found >= 0:
                end = text.find("\n", found)
                if end < 0:
                    break
                if (
                    not text[found + 1 : end].strip("-+0123456789 \t")
                    and ":" in text[text.rfind("\n", 0, found) + 1 : found]
                ):
                    return True
                found = text.find(indicator, found + 1)
        return False
    for word in words or ():
        found = lowered.find(word)
        while found >= 0:
            after = found + len(word)
            while after < len(lowered) and (lowered[after].isalnum() or lowered[after] in "_."):
                after += 1
            if lowered.startswith(",", after):
                return True
            found = lowered.find(word, found + 1)
    return False


def rule_table() -> list[_Rule]:
    """The detectors in the order they apply: the ops contexts, then detect-secrets'."""
    global _table
    if _table is None:
        from agentledger.shell.validated_cache import load_cached, sha256_hex

        library = _library_dir()
        # The key covers this file, the ops rules, the rules of redact_decode, how
        # redact_needs reads them and the installed library's version.
        here = os.path.dirname(__file__)
        rules = "-".join(
            _stamp_file(os.path.join(here, name))
            for name in ("redact_rules.py", "redact_decode.py", "redact_needs.py")
        )
        stamp = sha256_hex(f"{_TABLE_FORMAT}\0{library}\0{_stamp(library)}\0{rules}".encode())
        kind = f"secrets-{stamp[:16]}"
        _table = [tuple(rule) for rule in load_cached(__file__, kind, _build_table)]
    return _table


def _build_table(raw: bytes, source: str) -> list[list[Any]]:
    import re

    from agentledger.runner.shell_gate.redact_decode import CONTEXT_RULES, TOKEN_RULES
    from agentledger.runner.shell_gate.redact_needs import requirements
    from agentledger.runner.shell_gate.redact_rules import OPS_RULES

    rules: list[list[Any]] = []
    for kind, pattern, letters in (*OPS_RULES, *CONTEXT_RULES, *TOKEN_RULES):
        flags = int(
            (re.IGNORECASE if "i" in letters else 0)
            | (re.DOTALL if "s" in letters else 0)
            | (re.MULTILINE if "m" in letters else 0)
            | (_BLOCK_SCALAR if "y" in letters else 0)
            | (_CSV_FIELD if "c" in letters else 0)
        )
        words, shortest, needs, run = requirements(pattern, flags & ~_OWN_FLAGS)
        rules.append([kind, pattern, flags, words, False, shortest, needs, run])
    for kind, pattern, flags in _library_patterns():
        words, shortest, needs, run = requirements(pattern, flags)
        rules.append([kind, pattern, flags, words, True, shortest, needs, run])
    return rules


def _library_patterns() -> list[tuple[str, str, int]]:
    """Every regular expression of detect-secrets' regex plugins, with the plugin's kind."""
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.plugins.base import RegexBasedDetector
    except ImportError as exc:
        from agentledger.errors import InputError

        raise InputError(
            f"secret detection needs the package detect-secrets ({exc}); "
            "reinstall agentledger with its dependencies"
        ) from None
    found = []
    mapping: dict[str, Any] = get_mapping_from_secret_type_to_class()
    for secret_type, plugin in sorted(mapping.items()):
        if not issubclass(plugin, RegexBasedDetector) or plugin.__name__ in _SKIPPED_PLUGINS:
            continue
        kind = "-".join("".join(c if c.isalnum() else " " for c in secret_type).lower().split())
        for regex in plugin().denylist:
            found.append((kind, regex.pattern, int(regex.flags)))
    from detect_secrets.plugins import keyword

    for name in _KEYWORD_REGEXES:
        regex = getattr(keyword, name, None)
        if regex is not None:
            found.append(("keyword", regex.pattern, int(regex.flags)))
    return found


def _library_dir() -> str:
    import sys

    for folder in sys.path:
        candidate = os.path.join(folder or ".", "detect_secrets")
        if os.path.isdir(candidate):
            return os.path.abspath(candidate)
    return ""


def _stamp_file(path: str) -> str:
    try:
        info = os.stat(path)
    except OSError:
        return "none"
    return f"{info.st_mtime_ns}-{info.st_size}"


def _stamp(folder: str) -> str:
    try:
        info = os.stat(os.path.join(folder, "__version__.py"))
    except OSError:
        return "none"
    return f"{info.st_mtime_ns}-{info.st_size}"


def _has_counts(lowered: str, needs: list[list[Any]]) -> bool:
    """True when `lowered` holds each word of `needs` at least its count of times."""
    return all(lowered.count(word) >= count for word, count in needs)


def _sub_in_windows(
    regex: re.Pattern[str], replace: Any, text: str, lowered: str, words: Sequence[str]
) -> str:
    """`regex.sub` applied only to the lines holding one of `words` (and the line after,
    where a value may follow its name): the same result as on the whole text for patterns
    that do not span lines, without trying the pattern at every character of it."""
    if sum(lowered.count(word) for word in words) * _DENSE > len(text):
        # Words on most lines (`:`, `.`): the windows would be the whole text, piecemeal.
        return regex.sub(replace, text)
    spans: list[tuple[int, int]] = []
    for word in words:
        found = lowered.find(word)
        while found >= 0:
            start = lowered.rfind("\n", 0, found) + 1
            end = lowered.find("\n", found + len(word))
            end = len(text) if end < 0 else lowered.find("\n", end + 1)
            spans.append((start, len(text) if end < 0 else end))
            found = lowered.find(word, found + len(word))
    if not spans:
        return text
    spans.sort()
    merged = [spans[0]]
    for start, end in spans[1:]:
        if start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    pieces = []
    position = 0
    for start, end in merged:
        pieces.append(text[position:start])
        pieces.append(regex.sub(replace, text[start:end]))
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def _compile(pattern: str, flags: int) -> re.Pattern[str]:
    found = _compiled.get((pattern, flags))
    if found is None:
        import re

        found = _compiled[(pattern, flags)] = re.compile(pattern, flags & ~_OWN_FLAGS)
    return found


def _marker(kind: str, secret: str) -> str:
    if "'" in secret or '"' in secret:
        # The value the shell would see: `'a b'`, "a b" and a\ b are one secret.
        secret = "".join(
            piece[1:-1] if piece[:1] in "'\"" and len(piece) > 1 else piece
            for piece in _compile(r"'[^'\n]*'|\"[^\"\n]*\"|[^'\"]+|['\"]", 0).findall(secret)
        )
    return f"{MARK}:{kind}:{fingerprint(secret)}]"


def _replacer(kind: str) -> Any:
    def replace(match: re.Match[str]) -> str:
        group: int | str = 0
        if "secret" in match.re.groupindex:
            group = "secret"
        elif match.re.groups:
            group = 1
        return _replace_span(match, group, kind)

    return replace


def _library_replacer(kind: str) -> Any:
    # detect-secrets reports a group when a pattern has one; a group that short is a prefix
    # (`(ghp|gho)_...`), and then the whole match is the secret.
    def replace(match: re.Match[str]) -> str:
        group = 0
        for index in range(match.re.groups, 0, -1):
            value = match.group(index)
            if value:
                if len(value) >= 8:
                    group = index
                break
        return _replace_span(match, group, kind)

    return replace


def _replace_span(match: re.Match[str], group: int | str, kind: str) -> str:
    whole = match.group(0)
    start, end = match.span(group)
    secret = match.group(group)
    if start < 0 or start == end or not secret or _inside_marker(match.string, start):
        return whole
    if MARK in secret:
        return whole  # `--password='[REDACTED:...]'`: replaced by its place already
    offset = match.start()
    return whole[: start - offset] + _marker(kind, secret) + whole[end - offset :]


def _inside_marker(text: str, position: int) -> bool:
    """True when `position` of `text` falls in a marker an earlier rule wrote."""
    opened = text.rfind(MARK, 0, position + len(MARK))
    return opened >= 0 and text.find("]", opened) >= position
