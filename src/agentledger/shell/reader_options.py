"""Exact option lists for the readers that get more than a sandbox gives (`netreaders`):
each option as written (getopt accepts any unambiguous prefix of a long option, and
`--ze` is `--zero`; here only the exact word counts), each value of the kind listed."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Sequence

__all__ = [
    "DESTINATION",
    "HOST",
    "INT",
    "INTEGER",
    "NAME",
    "NOT_HTTP_PORTS",
    "NUM",
    "NUMBER",
    "STDOUT_ONLY",
    "TABLES",
    "URL",
    "ReaderOptions",
    "Shape",
    "any_text",
    "header",
    "interval",
    "matches",
    "names",
    "one_of",
    "positionals",
    "selectors",
    "url_problem",
    "write_out",
]


class Shape:
    """A regular expression a whole word must match, compiled when first used: a gated
    command whose words need none of them does not import `re` (start-up, issue 33)."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    def fullmatch(self, word: str) -> bool:
        """True when all of `word` matches."""
        if self._compiled is None:
            import re

            self._compiled = re.compile(self.pattern)
        return self._compiled.fullmatch(word) is not None


INTEGER = Shape(r"[0-9]{1,9}")
NUMBER = Shape(r"[0-9]{1,6}(\.[0-9]{1,3})?")
NAME = Shape(r"[A-Za-z0-9_.:@%/-]{1,253}")
HOST = Shape(r"[A-Za-z0-9_.:\[\]-]{1,253}")
DESTINATION = Shape(r"([A-Za-z0-9_.-]{1,64}@)?[A-Za-z0-9_.:\[\]-]{1,253}")
URL = Shape(r"(?i)https?://[^\s\x00-\x1f\x7f]+")
_AUTHORITY = Shape(
    r"(?i)(https?)://([A-Za-z0-9_.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(:[0-9]{1,5})?([/?#][^\s\x00-\x1f\x7f]*)?"
)
NOT_HTTP_PORTS = frozenset((
    1433, 1521, 1883, 2049, 2181, 3260, 3306, 3389, 4369, 5222, 5432, 5433, 5671, 5672, 6000,
    6379, 6380, 6667, 7000, 7001, 8125, 9042, 9092, 9160, 9300, 11211, 25672, 26379, 27017,
    27018, 27019, 28015, 61613, 61614, 61616,
))  # fmt: skip
"""Ports of daemons a request must not reach even with a read method: line and binary
protocols that take each line of a request as a command (redis and its sentinel,
memcached, IRC, MQTT, STOMP, XMPP, statsd, AMQP, Kafka, ZooKeeper, Erlang's epmd),
databases (PostgreSQL, MySQL, SQL Server, Oracle, MongoDB, Cassandra, RethinkDB,
Elasticsearch's transport), NFS, iSCSI, X11 and RDP. HTTP APIs on other ports (dashboards,
metrics, a development server on 5000 or 5050) are read with GET like any web server."""


def port_problem(number: int) -> str:
    """Why a request may not go to TCP port `number` ("" when it may): 80 and 443, and an
    unprivileged port (1024 and above) that is none of `NOT_HTTP_PORTS`. Below 1024 lie the
    line protocols of old (SMTP 25, POP 110, IMAP 143, FTP 21, telnet 23, ...)."""
    if number in (80, 443) or (number >= 1024 and number not in NOT_HTTP_PORTS):
        return ""
    if number < 1024:
        return f"port {number} is below 1024 and not 80 or 443 (a system service's)"
    return f"port {number} is a known daemon's that is not a web server (NOT_HTTP_PORTS)"


class ReaderOptions:
    """A reader's exact options: flags, options with a value (and what the value may be),
    and whether short flags may be combined (`-nvL`, as getopt reads them)."""

    __slots__ = ("combine", "flags", "valued")

    def __init__(
        self,
        flags: str | Sequence[str] = (),
        valued: dict[str, Callable[[str], bool]] | None = None,
        *,
        combine: bool = True,
    ) -> None:
        self.flags = frozenset(flags.split() if isinstance(flags, str) else flags)
        self.valued = valued or {}
        self.combine = combine

    def parse(self, args: Sequence[str], stop_at_positional: bool) -> tuple[list[str], int, str]:
        """The options of `args` in order (as given), the index where options end, and a
        problem ('' when none)."""
        seen: list[str] = []
        index = 0
        while index < len(args):
            word = args[index]
            if word == "--" and not stop_at_positional:
                return seen, index, "-- is not allowed before the arguments of a network reader"
            if word == "--" or not word.startswith("-") or word == "-":
                if stop_at_positional:
                    return seen, index + (word == "--"), ""
                index += 1
                continue
            taken, problem = self._one(args, index, seen)
            if problem:
                return seen, index, problem
            index += taken
        return seen, index, ""

    def _one(self, args: Sequence[str], index: int, seen: list[str]) -> tuple[int, str]:
        word = args[index]
        if word in self.flags:
            seen.append(word)
            return 1, ""
        name, eq, inline = word.partition("=")
        if word.startswith("--") and eq and name in self.valued:
            return 1, self._value(name, inline, seen)
        if word in self.valued:
            if index + 1 >= len(args):
                return 1, f"{word} needs a value"
            return 2, self._value(word, args[index + 1], seen)
        if not word.startswith("--") and self.combine and len(word) > 2:
            return self._combined(args, index, seen)
        return 1, f"{word} is not an option the network readers allow (exact options only)"

    def _combined(self, args: Sequence[str], index: int, seen: list[str]) -> tuple[int, str]:
        word = args[index]
        for position in range(1, len(word)):
            flag = "-" + word[position]
            if flag in self.flags:
                seen.append(flag)
                continue
            if flag in self.valued:
                rest = word[position + 1 :]
                if rest:
                    return 1, self._value(flag, rest, seen)
                if index + 1 >= len(args):
                    return 1, f"{flag} needs a value"
                return 2, self._value(flag, args[index + 1], seen)
            return 1, f"{flag} (in {word}) is not an option the network readers allow"
        return 1, ""

    def _value(self, name: str, value: str, seen: list[str]) -> str:
        seen.append(name)
        if not self.valued[name](value):
            return f"{name} {value!r} is not a value the network readers allow"
        return ""


def names(text: str) -> frozenset[str]:
    return frozenset(text.split())


def one_of(*choices: str) -> Callable[[str], bool]:
    allowed = frozenset(choices)
    return lambda value: value in allowed


def matches(pattern: Shape | str) -> Callable[[str], bool]:
    shape = Shape(pattern) if isinstance(pattern, str) else pattern
    return shape.fullmatch


def any_text(value: str) -> bool:
    return value.isprintable()


def interval(value: str) -> bool:
    return NUMBER.fullmatch(value) and float(value) >= 0.2


_FRAMING = frozenset(
    ("transfer-encoding", "content-length", "upgrade", "connection", "te", "expect")
)
"""Headers that change how a request is framed or turn it into another protocol."""


_TOKEN = Shape(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}")
"""An RFC 7230 token: what a header's name is; no blank or control in it."""


def header(value: str) -> bool:
    """A header a read may send: ``Name: value`` with a name that is an RFC 7230 token (a
    line ``SET k: v`` is a command to a line-protocol daemon), not one from a file
    (`@FILE`), not one that overrides the method or changes the request's framing, and no
    Host header but one that names a host (``Host:`` and ``Host;`` remove or empty it, and a
    request without one passes a daemon's guard against HTTP, as redis's)."""
    name, colon, rest = value.partition(":")
    lowered = name.lower()
    return (
        bool(colon)
        and _TOKEN.fullmatch(name)
        and rest.isprintable()
        and "method" not in lowered
        and "override" not in lowered
        and lowered not in _FRAMING
        and (lowered != "host" or HOST.fullmatch(rest.strip()))
    )


def url_problem(url: str) -> str:
    """Why `url` may not be read ("" when it may): only http and https, a host name or
    address without user information, and a port `port_problem` allows."""
    if not URL.fullmatch(url) or not _AUTHORITY.fullmatch(url):
        return f"{url!r}: only http:// and https:// URLs of a host name or address are read"
    scheme, _, rest = url.partition("://")
    authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    port = authority.rsplit("]", 1)[-1].partition(":")[2]
    number = int(port) if port else (443 if scheme.lower() == "https" else 80)
    problem = port_problem(number)
    return f"{url!r}: {problem}" if problem else ""


def write_out(value: str) -> bool:
    return value.isprintable() and "%output{" not in value and "%{stderr}" not in value


INT = matches(INTEGER)
NUM = matches(NUMBER)
STDOUT_ONLY = one_of("-", "/dev/null")
TABLES = one_of("filter", "nat", "mangle", "raw", "security")


def selectors(words: list[str]) -> str:
    for word in words:
        if word.startswith("-") or not NAME.fullmatch(word):
            return f"{word!r} is not a device, address or selector name"
    return ""


def positionals(args: Sequence[str], options: ReaderOptions) -> list[str]:
    """The words of `args` that are neither options nor option values."""
    found: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        if word.startswith("-") and word != "-":
            index += 1
            if word in options.valued:
                index += 1
            elif not word.startswith("--") and options.combine and len(word) > 2:
                letters = [f"-{letter}" for letter in word[1:]]
                valued = [i for i, flag in enumerate(letters) if flag in options.valued]
                if valued and valued[0] == len(letters) - 1:
                    index += 1
            continue
        found.append(word)
        index += 1
    return found
