"""Redaction: secrets are replaced by ``[REDACTED]`` in what the gate logs.

The built-in rules cover passwords in URLs (``https://user:pass@host``), secret-looking flags
(``--password X``, ``--token=X``, ``mysql -pX``), assignments and config lines
(``AWS_SECRET_ACCESS_KEY=...``, ``"password": "..."``), ``Authorization``/``Bearer`` headers,
signed URLs (``sig=``), private key blocks and the shapes of common keys (AWS ``AKIA...``,
GitHub ``ghp_...``, ``sk-...`` API keys, Slack, Google, JWTs). A policy adds its own regular
expressions (`redact:`): the group named ``secret``, else the first group, else the whole match
is replaced.

Each built-in rule names words that must appear for it to match, so text without any of them
is returned as is without compiling a regular expression.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Sequence

__all__ = ["MARK", "Redactor"]

MARK = "[REDACTED]"

# Words that name secrets (not secrets themselves).
_SECRET_WORDS = (
    r"password|passwd|passphrase|secret|token|api[-_]?key|apikey|access[-_]?key|"  # noqa: S105
    r"private[-_]?key|client[-_]?secret|credentials?|accountkey|sharedaccesskey"
)
_HINT_WORDS = (
    "pass", "secret", "token", "key", "credential",
)  # fmt: skip
_VALUE = r"(?P<secret>'[^'\n]*'|\"[^\"\n]*\"|(?!-)[^\s'\"]+)"

# (words of which one must appear, lower case; the pattern; its flags: i = ignore case, s = dotall)
_RULES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (
        ("-----begin",),
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?P<secret>.*?)"
        r"(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
        "s",
    ),
    (("://",), r"\b[a-z][a-z0-9+.-]*://[^\s/:@'\"]*:(?P<secret>[^\s@/'\"]+)@", "i"),
    (
        ("authorization", "bearer"),
        r"(?:authorization\s*[:=]\s*(?:bearer|basic|token|digest)?\s*|\bbearer\s+)"
        r"(?P<secret>[A-Za-z0-9._~+/=-]{6,})",
        "i",
    ),
    (
        _HINT_WORDS,
        r"(?<![\w-])--?[a-z0-9_-]*(?:" + _SECRET_WORDS + r")[a-z0-9_-]*(?:=|\s+)" + _VALUE,
        "i",
    ),
    (
        _HINT_WORDS,
        r"(?<![\w-])[a-z0-9_.]*(?:" + _SECRET_WORDS + r")[a-z0-9_.]*[\"']?\s*[:=]\s*"
        r"(?P<secret>'[^'\n]*'|\"[^\"\n]*\"|[^\s,;'\"}&]+)",
        "i",
    ),
    (("sig=",), r"[?&]sig=(?P<secret>[^&\s'\"]+)", "i"),
    (
        ("mysql", "mariadb"),
        r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]*?\s-p(?P<secret>[^\s'\"]+)",
        "i",
    ),
    (
        ("akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka"),
        r"\b(?P<secret>(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16})\b",
        "",
    ),
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
        "",
    ),
    (("sk-",), r"(?<![\w-])(?P<secret>sk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,})", ""),
    (("sk_", "rk_"), r"\b(?P<secret>[sr]k_(?:live|test)_[A-Za-z0-9]{16,})", ""),
    (("xox",), r"\b(?P<secret>xox[abprs]-[A-Za-z0-9-]{10,})", ""),
    (("aiza",), r"\b(?P<secret>AIza[0-9A-Za-z_-]{35})", ""),
    (("eyj",), r"\b(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})", ""),
)

_compiled: dict[str, re.Pattern[str]] = {}


def _compile(pattern: str, flags: str) -> re.Pattern[str]:
    key = flags + "\0" + pattern
    found = _compiled.get(key)
    if found is None:
        import re

        value = (re.IGNORECASE if "i" in flags else 0) | (re.DOTALL if "s" in flags else 0)
        found = _compiled[key] = re.compile(pattern, value)
    return found


def check_pattern(pattern: str) -> str | None:
    """Why `pattern` is not a usable regular expression, or None when it is."""
    import re

    try:
        re.compile(pattern)
    except re.error as exc:
        return f"not a regular expression: {exc}"
    return None


class Redactor:
    """Replaces secrets in text by ``[REDACTED]``: the built-in rules plus `extra` patterns."""

    __slots__ = ("extra",)

    def __init__(self, extra: Sequence[str] = ()) -> None:
        self.extra = tuple(extra)

    def redact(self, text: str) -> str:
        """`text` with every secret the rules recognise replaced by ``[REDACTED]``."""
        if not text:
            return text
        lowered = text.lower()
        for hints, pattern, flags in _RULES:
            if any(hint in lowered for hint in hints):
                text = _compile(pattern, flags).sub(_replace, text)
        for pattern in self.extra:
            text = _compile(pattern, "").sub(_replace, text)
        return text


def _replace(match: re.Match[str]) -> str:
    whole = match.group(0)
    group: int | str = 0
    if "secret" in match.re.groupindex:
        group = "secret"
    elif match.re.groups:
        group = 1
    start, end = match.span(group)
    if start < 0 or start == end:
        return whole
    offset = match.start()
    return whole[: start - offset] + MARK + whole[end - offset :]
