"""More of what the redactor finds (issue 33): secrets in context, more token kinds, and
secrets that reach the output encoded, folded or split.

- `CONTEXT_RULES`: files and assignments that hold passwords whatever the variable's name
  (`DB_PASS=`, `*_PW=`, `.netrc`'s `password`, a pgpass line `host:port:db:user:pass`, XML
  `<password>` and `name="password" value=`, `requirepass`, `psk=`, SNMP communities, the
  base64 line `kubectl get secret` prints);
- `TOKEN_RULES`: key shapes neither detect-secrets nor the first rules know (Heroku, Square,
  Asana, Airtable, Alibaba, Bitbucket, Dropbox, Dynatrace, PlanetScale, Sendinblue, ...);
- `rescan`: runs of text that may hide a secret in another form are decoded and the
  redactor is run on what they decode to; when that finds a secret, the whole run is replaced.
  The forms: base64 (a token, or folded over lines as `fold` and `base64 -w76` print it), hex
  (a token, and `xxd` / `hexdump -C` dumps), a block of base64 lines (a PEM body without its
  header: a private key unless it decodes to a certificate or a public key), and a JWT split
  or folded over lines. Ordinary output comes through: a hash decodes to bytes that are not
  text, base64 of plain text holds no secret, a certificate is public.
"""

from __future__ import annotations

import binascii

from agentledger.runner.shell_gate.redact import SHORTEST_TOKEN, TOKEN_CHARACTERS, TOKEN_CLASS

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable

__all__ = ["CONTEXT_RULES", "TOKEN_RULES", "rescan", "rescan_lines"]

# A value that is not a template reference (`${X}`, `{{ x }}`, `$X`, `<x>`, `[value]`, printf's
# `%s`), a path or a YAML block scalar's indicator (`|`, `>-`: the value is on the next line).
_VALUE = (
    r"(?P<secret>(?!\$\{|\{\{|\$[A-Za-z_(]|\"\$[{A-Za-z_(]|\*{3,}(?![^\s,;'\"}&<])|"
    r"<[A-Za-z_%]|%\(|/|[|>][-+0-9]*[ \t]*(?:\n|\Z)|"
    r"\[[\w -]*\](?![^\s,;'\"}&<])|%[-+ #0-9.]*[sdqbiuxX](?:\\[nr])*(?![^\s,;'\"}&<]))"
    r"(?:'[^'\n]+'|\"[^\"\n]+\"|[^\s,;'\"}&<]+))"
)
# (kind, pattern, flags: i = ignore case, s = dot matches newline, m = multiline; y = only where
# a line ends in a YAML block indicator, c = only where a word of the pattern ends a CSV field)
CONTEXT_RULES: tuple[tuple[str, str, str], ...] = (
    # DB_PASS=, MYSQL_ROOT_PW=, pass:, psk=, adminPass: (a separator or a capital before
    # the word: `compass: north` and `bypass=1` are not passwords). One rule per word, so
    # that text without the word is not searched.
    *(
        (
            "password-assignment",
            r"(?:(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_.-])*(?i:" + word + r")|(?<![A-Za-z0-9])"
            r"[a-z][a-z0-9]*" + word.capitalize() + r")[\"']?\s*(?::=|=>|[:=])\s*" + _VALUE,
            "",
        )
        for word in ("pass(?:wd|word|phrase)?", "pwd", "pw", "psk", "pat")
    ),
    (
        "netrc-password",
        r"(?:\bmachine\s+\S+|\bdefault\b)(?:\s+(?:login|account|port|protocol)\s+\S+)*"
        r"\s+password\s+(?P<secret>(?!%[-0-9.]*[sbdq])\S+)",  # not printf's `%s`
        "m",
    ),
    (
        # five fields: a `:` in the password is escaped (`\:`), so a line of more fields
        # (`/etc/shadow`'s nine) is not one
        "pgpass",
        r"^(?:\[[0-9A-Fa-f:.]+\]|[^:\s#]+):(?:\d+|\*):[^:\s]+:[^:\s]+:"
        r"(?P<secret>(?:\\.|[^:\s\\])+)$",
        "m",
    ),
    # OpenVPN's inline credentials: the user's line, then the password's
    (
        "openvpn-password",
        r"<auth-user-pass>[ \t]*\r?\n[^\n]*\n[ \t]*(?P<secret>[^\s<][^\n]*?)[ \t]*\r?\n"
        r"[ \t]*</auth-user-pass>",
        "",
    ),
    # postfix's sasl_passwd: `[relay]:port user:password` (the line starts with `[`)
    (
        "sasl-password",
        r"\[(?<![^\n]\[)[\w.-]+\](?::\d+)?[ \t]+[^\s:]+:(?P<secret>[^\s:]+)[ \t]*$",
        "m",
    ),
    # Vault's key shares as `vault operator init` prints them
    (
        "vault-unseal-key",
        r"\b(?:unseal|recovery) key(?: \d+)?:[ \t]*(?P<secret>[A-Za-z0-9+/=_-]{16,})",
        "i",
    ),
    # password directives without `=` (OpenLDAP's `rootpw`, nslcd's `bindpw`, keepalived)
    ("password-directive", r"^[ \t]*(?:rootpw|bindpw|auth_pass)[ \t]+(?P<secret>\S+)", "im"),
    # a name and its value given apart: a container's env (`- name: DB_PASSWORD` then
    # `value: X`, or as JSON), `<add key="SmtpPassword" value="X"/>`
    (
        "password-assignment",
        r"\b(?:name|key)[\"']?\s*[:=]\s*[\"']?[\w.-]*"
        r"(?:pass|pwd|secret|token|credential|_key|session|auth)"
        r"[\w.-]*[\"']?[\s,]*[\"']?value[\"']?\s*[:=]\s*[\"']?"
        r"(?P<secret>(?!\$\{|\{\{)[^\s\"',}<]+)",
        "i",
    ),
    # a secret's name and value as two quoted arguments: define('DB_PASSWORD', 'X')
    (
        "password-assignment",
        r"[\"'][\w.-]*(?:pass|pwd|secret|token|key|salt)[\w.-]*[\"']\s*,\s*[\"']"
        r"(?P<secret>(?!\$\{|\{\{)[^\"'\n]{4,})[\"']",
        "i",
    ),
    # a variable named *_KEY holding a key-like value: SUPABASE_KEY=..., APP_KEY=base64:...
    (
        "secret-assignment",
        r"(?<![A-Za-z0-9])[A-Za-z0-9]+[_.-](?i:key)[\"']?\s*(?::=|=>|[:=])\s*[\"']?"
        r"(?P<secret>(?!/)(?=[^\s\"']*[0-9])(?=[^\s\"']*[A-Za-z])[A-Za-z0-9+/=:_.-]{16,})",
        "",
    ),
    # npm's `_auth=` and `_authToken=` (base64 of user:password, or a token)
    ("npm-auth", r"(?<![A-Za-z0-9])_auth(?:token)?\s*=\s*(?P<secret>\S+)", "i"),
    # password hashes: crypt(3) ($1$, $2b$, $5$, $6$, $y$) and LDAP's {SSHA}
    (
        "password-hash",
        r"(?P<secret>\$(?:1|2[abxy]|5|6|y|gy|7|apr1)\$[./A-Za-z0-9$,=]{20,})",
        "",
    ),
    # a secret's name, a blank, its value (`TWILIO_AUTH_TOKEN 4001...`), or URL-encoded
    (
        "secret-assignment",
        r"\b[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|_KEY)[ \t]+"
        r"(?P<secret>(?=[A-Za-z0-9+/=_-]*[0-9])[A-Za-z0-9+/=_-]{16,})",
        "",
    ),
    ("secret-assignment", r"(?:pass(?:word)?|pwd|secret|token)%3D(?P<secret>[^%&\s]+)", "i"),
    (
        "password-hash",
        r"\{(?:S?SHA(?:256|384|512)?|S?MD5|CRYPT|PBKDF2[\w-]*)\}(?P<secret>[A-Za-z0-9+/=$.]{16,})",
        "i",
    ),
    (
        "xml-password",
        r"<(?P<tag>[\w:.-]*(?:pass|pwd|secret|token|apikey|api_key|credential)[\w.-]*)(?:\s[^>]*)?>"
        r"\s*(?P<secret>(?![0-9]{1,6}\s*<)\S[^\n]*?)\s*</(?P=tag)>",
        "i",
    ),
    (
        # a YAML block scalar: `db_password: |` and the value on the next line
        "password-assignment",
        r"(?:pass|pwd|secret|token|api_?key)[\w.-]*[\"']?\s*:\s*[|>][-+0-9]*[ \t]*\n[ \t]+"
        r"(?P<secret>\S[^\n]*)",
        "iy",
    ),
    (
        # a CSV row: `db_password,VALUE,` (a value of letters and digits or signs: a count or
        # a word, `tokens_used,150000,`, is not one)
        "password-assignment",
        r"(?:pass|pwd|secret|token)[\w.]*,"
        r"(?P<secret>(?=[^\s,]*[A-Za-z])(?=[^\s,]*[0-9!@#$%^&*<>?;:=])[^\s,]{6,}),",
        "ic",
    ),
    (
        "xml-password",
        r"\bname\s*=\s*[\"'][^\"']*(?:pass|pwd|secret|token|credential)[^\"']*[\"']\s+"
        r"value\s*=\s*[\"'](?P<secret>[^\"']+)",
        "i",
    ),
    ("redis-password", r"^\s*(?:requirepass|masterauth)\s+(?P<secret>\S+)", "im"),
    ("snmp-community", r"^\s*(?:ro|rw)community6?\s+(?P<secret>\S+)", "im"),
    (
        "kubernetes-secret",
        r"\bget\s+secrets?\b[^\n]*\n\s*(?P<secret>[A-Za-z0-9+/]{8,}={0,2})\s*$",
        "m",
    ),
    ("okta-token", r"\bSSWS\s+(?P<secret>[A-Za-z0-9_-]{20,})", ""),
    (
        "sidekiq-secret",
        r"\bBUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM\s*=\s*[\"']?(?P<secret>[a-f0-9]{8}:"
        r"[a-f0-9]{8})",
        "i",
    ),
)
TOKEN_RULES: tuple[tuple[str, str, str], ...] = (
    ("heroku-key", r"\b(?P<secret>HRKU-[A-Za-z0-9_-]{30,})", ""),
    ("square-token", r"\b(?P<secret>(?:EAAA|sq0atp-)[A-Za-z0-9_-]{22,})", ""),
    ("square-secret", r"\b(?P<secret>sq0csp-[A-Za-z0-9_-]{40,})", ""),
    ("asana-token", r"/(?<=\b[0-9]/)(?P<secret>[0-9]{16}/[0-9]{16}:[a-f0-9]{32})\b", ""),
    ("airtable-token", r"\b(?P<secret>pat[A-Za-z0-9]{14}\.[a-f0-9]{64})\b", ""),
    ("alibaba-key", r"\b(?P<secret>LTAI[A-Za-z0-9]{20})\b", ""),
    ("bitbucket-token", r"\b(?P<secret>ATBB[A-Za-z0-9_=.-]{32,})", ""),
    ("clojars-token", r"\b(?P<secret>CLOJARS_[a-z0-9]{60})\b", "i"),
    ("contentful-token", r"\b(?P<secret>CFPAT-[A-Za-z0-9_-]{43})", ""),
    ("doppler-token", r"\b(?P<secret>dp\.pt\.[A-Za-z0-9]{40,})", ""),
    ("dropbox-token", r"\b(?P<secret>sl\.[A-Za-z0-9_-]{130,})", ""),
    ("duffel-token", r"\b(?P<secret>duffel_(?:test|live)_[A-Za-z0-9_=-]{43})", ""),
    ("dynatrace-token", r"\b(?P<secret>dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64})\b", ""),
    ("easypost-key", r"\b(?P<secret>EZ[AT]K[A-Za-z0-9]{54})\b", ""),
    ("flutterwave-key", r"\b(?P<secret>FLW(?:SEC|PUB)K_TEST-[a-h0-9]{32}-X)", "i"),
    ("frameio-token", r"\b(?P<secret>fio-u-[A-Za-z0-9_=-]{64})", ""),
    ("planetscale-token", r"\b(?P<secret>pscale_(?:pw|tkn|oauth)_[A-Za-z0-9_=.-]{32,64})", ""),
    ("prefect-key", r"\b(?P<secret>pnu_[A-Za-z0-9]{36})\b", ""),
    ("readme-key", r"\b(?P<secret>rdme_[a-z0-9]{70})\b", ""),
    ("rubygems-key", r"\b(?P<secret>rubygems_[a-f0-9]{48})\b", ""),
    ("scalingo-token", r"\b(?P<secret>tk-us-[A-Za-z0-9_-]{48})", ""),
    ("sendinblue-key", r"\b(?P<secret>xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16})", ""),
    ("shippo-token", r"\b(?P<secret>shippo_(?:live|test)_[a-f0-9]{40})\b", ""),
    ("typeform-token", r"\b(?P<secret>tfp_[A-Za-z0-9_.=-]{59,})", ""),
    ("yandex-key", r"\b(?P<secret>AQVN[A-Za-z0-9_-]{35,38})", ""),
    ("huggingface-token", r"\b(?P<secret>api_org_[A-Za-z0-9]{34})\b", ""),
    ("openai-key", r"\b(?P<secret>sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})\b", ""),
    ("gitlab-token", r"\b(?P<secret>glrt-[A-Za-z0-9_-]{20,})", ""),
    (
        "vault-token",
        r"\b(?P<secret>s\.(?=[A-Za-z0-9]{0,23}[A-Z])(?=[A-Za-z0-9]{0,23}[0-9])[A-Za-z0-9]{24})\b",
        "",
    ),
    # A token of a kind not named above: a short lower-case prefix (`ntn_`, `pplx-`, `r8_`,
    # `tskey-auth-`), then 30 or more characters mixing upper and lower case and digits, or
    # 32 or more hex digits after `_` (`sbp_`, `bkua_`). Hex after `-` is not one (systemd's
    # `docker-<id>.scope`), nor a run with no capital (a pod's name).
    (
        "prefixed-token",
        r"(?<![\w+/=.-])(?P<secret>[a-z][a-z0-9]{1,7}(?:[_-][a-z0-9]{2,6})?[_-]"
        r"(?=[A-Za-z0-9_-]{0,80}[A-Z])(?=[A-Za-z0-9_-]{0,80}[a-z])(?=[A-Za-z0-9_-]{0,80}[0-9])"
        r"[A-Za-z0-9][A-Za-z0-9_-]{29,})(?![\w+/=.-])",
        "",
    ),
    (
        "prefixed-token",
        r"(?<![\w+/=.-])(?P<secret>[a-z][a-z0-9]{1,7}(?:_[a-z0-9]{2,6})?_[a-f0-9]{32,}"
        r"(?:_[a-f0-9]{6,})?)(?![\w+/=.-])",
        "",
    ),
)


class _Lazy:
    """A regular expression compiled (and `re` imported) when first needed: most output
    holds nothing that needs one, and a gated command's start-up pays for each compiled."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        if self._compiled is None:
            import re

            self._compiled = re.compile(self.pattern)
        return self._compiled


_TOKEN = _Lazy(f"[{TOKEN_CLASS}]{{{SHORTEST_TOKEN},}}")
_BASE64 = _Lazy(r"[A-Za-z0-9+/]+={0,2}")
_HEX = _Lazy(r"(?:[0-9a-fA-F]{2}){20,}")
_LINE_RUN = _Lazy(
    r"(?m)(?:^[ \t]*[A-Za-z0-9+/=._-]{16,}[ \t]*\n){2,}^[ \t]*[A-Za-z0-9+/=._-]+[ \t]*$"
)
_DUMP_LINE = _Lazy(r"(?m)^[0-9a-fA-F]{7,8}:?\s+((?:[0-9a-fA-F]{2,4}\s){1,16})\s*(?:\|.*\||\S.*)?$")
_OD_LINE = _Lazy(r"[ \t]*(?:[0-7]{7}[ \t]+)?((?:[0-9a-fA-F]{2}[ \t]+){3,31}[0-9a-fA-F]{2})[ \t]*")
"""`od -An -tx1` and `od -tx1` lines: bytes as pairs of hex digits."""
_BASE32 = _Lazy(r"(?:[A-Z2-7]{8})+(?:[A-Z2-7]{2,7}=*)?")
_KEY_LINE = _Lazy(r"[A-Za-z0-9+/]{64}|[A-Za-z0-9+/]{76}")
_PUBLIC_DER = (b"\x30\x82", b"\x30\x81")
# Prefilters, without a regular expression: every match of _TOKEN is a run of SHORTEST_TOKEN
# token characters, the first line of a _LINE_RUN a run of 16 of them or dots, and a
# _DUMP_LINE starts a line with 7 hex digits. Each table turns those characters into "a".
_TOKEN_RUNS = str.maketrans(TOKEN_CHARACTERS, "a" * len(TOKEN_CHARACTERS))
_LINE_RUNS = str.maketrans(TOKEN_CHARACTERS + ".", "a" * (len(TOKEN_CHARACTERS) + 1))
_HEX_DIGITS = "0123456789abcdefABCDEF"
_HEX_RUNS = str.maketrans(_HEX_DIGITS, "a" * len(_HEX_DIGITS))


def _may_dump(text: str) -> bool:
    hexes = text.translate(_HEX_RUNS)
    return hexes.startswith("a" * 7) or "\n" + "a" * 7 in hexes or " aa aa aa aa" in hexes


def rescan_lines(text: str, redact: Callable[[str], str], marker: Callable[[str, str], str]) -> str:
    """`text` with every run of token lines that holds a secret once joined (a folded key,
    a split JWT, a PEM body) replaced by a marker. Before the other rules: one of them could
    take the first line alone and leave the rest."""
    if len(text) < 40 or "\n" not in text or "a" * 16 not in text.translate(_LINE_RUNS):
        return text
    return _runs_of_lines(text, redact, marker)


def rescan(text: str, redact: Callable[[str], str], marker: Callable[[str, str], str]) -> str:
    """`text` with every encoded token or dump that holds a secret replaced by a marker:
    `redact` finds secrets in what it decodes to, `marker(kind, run)` writes one."""
    if len(text) < SHORTEST_TOKEN:
        return text
    text = _kubernetes_secrets(text, marker)
    if "\n" in text and _may_dump(text):
        text = _dumps(text, redact, marker)
    if "a" * SHORTEST_TOKEN not in text.translate(_TOKEN_RUNS):
        return text
    return _tokens(text, redact, marker)


_SECRET_KIND = _Lazy(r"(?im)^\s*kind:[ \t]*[\"']?secret[\"']?[ \t]*$")
_DATA_KEY = _Lazy(r"^([ \t]*)(?:data|stringData):[ \t]*$")
_ENTRY = _Lazy(r"^([ \t]+)([\w.-]+):[ \t]*(.*?)[ \t]*$")


def _kubernetes_secrets(text: str, marker: Callable[[str, str], str]) -> str:
    """The values under `data:` and `stringData:` of a Kubernetes Secret (`kubectl get
    secret -o yaml`): every one is a secret, whatever its key is called."""
    if "ecret" not in text or _SECRET_KIND.get().search(text) is None:
        return text
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        block = _DATA_KEY.get().match(lines[index])
        index += 1
        if block is None:
            continue
        depth = len(block.group(1).expandtabs())
        while index < len(lines):
            if not lines[index].strip() or lines[index].lstrip().startswith("#"):
                index += 1
                continue
            entry = _ENTRY.get().match(lines[index])
            if entry is None or len(entry.group(1).expandtabs()) <= depth:
                break
            value = entry.group(3)
            if value in ("|", ">", "|-", ">-", "|+", ">+"):
                inner = len(entry.group(1).expandtabs())
                index += 1
                while index < len(lines) and lines[index].strip() and _indent(lines[index]) > inner:
                    body = lines[index].strip()
                    if not body.startswith("[REDACTED"):
                        lines[index] = lines[index][: _indent(lines[index])] + marker(
                            "kubernetes-secret", body
                        )
                    index += 1
                continue
            if value.strip("'\"") and not value.startswith(("{{", "[REDACTED")):
                start = entry.start(3)
                lines[index] = lines[index][:start] + marker("kubernetes-secret", value)
            index += 1
    return "\n".join(lines)


def _holds_secret(decoded: str, redact: Callable[[str], str]) -> bool:
    return "[REDACTED" not in decoded and redact(decoded) != decoded


def _tokens(text: str, redact: Callable[[str], str], marker: Callable[[str, str], str]) -> str:
    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if len(token) % 8 == 0 and _BASE32.get().fullmatch(token):
            import base64

            decoded = _text(base64.b32decode(token))
            if decoded is not None and _holds_secret(decoded, redact):
                return marker("encoded-secret", token)
        if _HEX.get().fullmatch(token):
            decoded = _text(binascii.unhexlify(token))
        elif _BASE64.get().fullmatch(token):
            decoded = _from_base64(token)
        else:
            return token
        if decoded is not None and _holds_secret(decoded, redact):
            return marker("encoded-secret", token)
        return token

    return _TOKEN.get().sub(replace, text)


def _runs_of_lines(
    text: str, redact: Callable[[str], str], marker: Callable[[str, str], str]
) -> str:
    """Lines of one token each: joined, they may be a folded key, a split JWT or a PEM body."""

    def replace(match: re.Match[str]) -> str:
        run = match.group(0)
        lines = [line.strip() for line in run.split("\n")]
        joined = "".join(lines)
        if _holds_secret(joined, redact):
            return marker("split-secret", run)
        decoded = _from_base64(joined)
        if decoded is not None and _holds_secret(decoded, redact):
            return marker("encoded-secret", run)
        if _is_key_body(lines):
            return marker("private-key", run)
        return run

    return _LINE_RUN.get().sub(replace, text)


def _is_key_body(lines: list[str]) -> bool:
    """Three or more full base64 lines of one width (64 or 76): a PEM body. A private key,
    unless its DER is a certificate, a request or a public key (a SEQUENCE in a SEQUENCE)."""
    full = [line for line in lines if _KEY_LINE.get().fullmatch(line)]
    if len(full) < 3 or len({len(line) for line in full}) != 1:
        return False
    try:
        der = binascii.a2b_base64("".join(lines) + "==")
    except (binascii.Error, ValueError):
        return False
    if der[:2] in _PUBLIC_DER:
        inner = der[4:6] if der[:2] == b"\x30\x82" else der[3:5]
        if inner[:1] == b"\x30":
            return False
    return True


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _dumps(text: str, redact: Callable[[str], str], marker: Callable[[str, str], str]) -> str:
    """`xxd` and `hexdump -C` output: the bytes of consecutive dump lines, decoded."""
    if not _DUMP_LINE.get().search(text) and not any(
        _OD_LINE.get().fullmatch(line) for line in text.split("\n")
    ):
        return text
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        start = index
        data = bytearray()
        while index < len(lines):
            match = _OD_LINE.get().fullmatch(lines[index]) or _DUMP_LINE.get().match(lines[index])
            if match is None:
                break
            try:
                data += binascii.unhexlify("".join(match.group(1).split()))
            except (binascii.Error, ValueError):
                break
            index += 1
        if index - start >= 2:
            decoded = _text(bytes(data))
            block = "\n".join(lines[start:index])
            if decoded is not None and _holds_secret(decoded, redact):
                out.append(marker("encoded-secret", block))
            else:
                out.append(block)
            continue
        out.append(lines[index] if index == start else "\n".join(lines[start:index]))
        index = max(index, start + 1)
    return "\n".join(out)


def _from_base64(token: str) -> str | None:
    compact = token.replace("-", "+").replace("_", "/")
    if len(compact) < 16 or not _BASE64.get().fullmatch(compact):
        return None
    try:
        raw = binascii.a2b_base64(compact + "=" * (-len(compact) % 4))
    except (binascii.Error, ValueError):
        return None
    return _text(raw)


def _text(raw: bytes) -> str | None:
    """`raw` as text when it is mostly printable (what a hash or a key's bytes are not)."""
    if len(raw) < 8:
        return None
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(char.isprintable() or char in "\n\r\t" for char in decoded)
    return decoded if printable >= 0.95 * len(decoded) else None
