"""The network readers: the few commands that run in the sandbox with the host's network.

Every other command runs in a network namespace of its own (loopback only), so that a
command the classifier got wrong can neither change the host's network nor reach a daemon
over it. These need the host's network to answer at all: the firewall (`iptables -S`,
`iptables-save`, `nft list`), traffic control and addresses (`tc ... show`, `ip ... show`),
sockets (`ss`), reachability (`ping`), names (`dig`, `host`, `nslookup`), reading a URL
(`curl`, `wget`: GET or HEAD over http or https), a database (`psql -c QUERY`, in one
transaction made read-only first) and remote commands (`ssh HOST CMD`: the classifier
judges CMD). Two more need a daemon's Unix socket, which the sandbox otherwise
refuses (`seccomp`): `systemctl` (status, show, list-...) and `docker` (ps, inspect, logs,
...), each with a network of its own. `reader_checks.READERS` is the table of them all.

A reader gets the host's network only when its words are checked here first: each option
exactly as listed (no abbreviation: getopt reads `--ze` as `--zero`, and `iptables --ze -L`
zeroes the counters), each value of the kind listed, each positional word of the shape
listed. The line must be the reader alone, or the reader piped into the rest of the line
(`iptables -S | grep DROP`); the reader is then run from the words checked here, without a
shell, so what runs is what was checked, and the rest of the line runs in a sandbox of its
own with no network. The words are plain, in single quotes, or in double quotes holding
nothing bash expands (what bash reads the same way as any tokenizer). As root, the firewall
readers keep CAP_NET_ADMIN (reading netfilter needs it; `iptables` also CAP_NET_RAW, for the
legacy backend's raw socket) and `ping` keeps CAP_NET_RAW; as these run from checked words
without a shell, nothing else gets them, and no other command keeps any capability. Readers
get a clean environment, so that `WGETRC`, `CURL_HOME` or a proxy set by the agent cannot
turn a read into a write, and curl and wget are told to ignore their configuration files and
to follow no scheme but http and https.
"""

from __future__ import annotations

from agentledger.runner.shell_gate.environment import (
    SYSTEM_DIRECTORIES,
    SYSTEM_PATH,
    clean_environment,
)
from agentledger.runner.shell_gate.reader_checks import READERS
from agentledger.shell.reader_options import Shape

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "NetworkGrant",
    "check_reader",
    "names_reader",
    "network_grant",
    "reader_environment",
    "split_reader",
    "strict_words",
]

_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,-")
_SOCKET_VARIABLES = ("SSH_AUTH_SOCK", "PGPASSFILE")


class NetworkGrant:
    """A reader allowed the host's network: the argv to run (no shell), the capabilities
    it keeps as root, and the rest of the line its output is piped into (run isolated)."""

    __slots__ = (
        "argv",
        "capabilities",
        "host_network",
        "rest",
        "stderr_to_null",
        "stderr_to_stdout",
        "tool",
        "unix_sockets",
    )

    def __init__(
        self,
        argv: list[str],
        tool: str,
        capabilities: tuple[str, ...] = (),
        rest: str | None = None,
    ) -> None:
        self.argv = argv
        self.tool = tool
        self.capabilities = capabilities
        self.rest = rest
        self.stderr_to_stdout = False
        self.stderr_to_null = False
        self.host_network = True
        self.unix_sockets = False

    def __repr__(self) -> str:
        return f"NetworkGrant({self.argv!r}, rest={self.rest!r})"


def reader_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a network reader runs with: `environment.clean_environment` (the
    system PATH, the user's own HOME, the locale) and the ssh agent's socket and the
    PostgreSQL password file; nothing else the agent set (``WGETRC``, ``CURL_HOME``,
    proxies)."""
    return clean_environment(environ, _SOCKET_VARIABLES)


def check_reader(words: Sequence[str]) -> str:
    """'' when `words` (a reader and its arguments) may have the host's network, else why
    not."""
    name = words[0].rsplit("/", 1)[-1] if words else ""
    reader = READERS.get(name)
    if reader is None:
        return f"{name or 'nothing'} is not a network reader"
    return reader.check(list(words[1:]))


_IGNORED_ASSIGNMENTS = frozenset(
    ("SYSTEMD_PAGER", "PAGER", "SYSTEMD_COLORS", "SYSTEMD_LESS", "COLUMNS", "LINES", "NO_COLOR")
)
"""Assignments before a reader that only shape its output (it runs without them)."""
_DOUBLE_QUOTED_SPECIAL = frozenset("$`\\!")
"""What bash still reads inside double quotes (history expansion only interactively)."""


def strict_words(text: str) -> list[str] | None:
    """The words of `text` when bash reads them as any tokenizer would: plain characters,
    single-quoted strings, and double-quoted ones without `$`, a backquote, a backslash or
    `!` (no expansion, quoting or operator bash could read otherwise); None when anything
    else is there."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    index = 0
    while index < len(text):
        char = text[index]
        if char in " \t":
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
        elif char in "'\"":
            end = text.find(char, index + 1)
            quoted = text[index + 1 : end]
            if end < 0 or (char == '"' and _DOUBLE_QUOTED_SPECIAL.intersection(quoted)):
                return None
            current.append(quoted)
            in_word, index = True, end
        elif char in _PLAIN:
            current.append(char)
            in_word = True
        else:
            return None
        index += 1
    if in_word:
        words.append("".join(current))
    while words and "=" in words[0] and words[0].split("=", 1)[0] in _IGNORED_ASSIGNMENTS:
        words = words[1:]  # readers run with a clean environment: these change nothing
    if words and ("=" in words[0] and words[0].split("=", 1)[0].isidentifier()):
        return None  # an assignment before the command
    return words


def split_reader(line: str) -> tuple[str, str | None]:
    """`line` as its first command and the rest after a pipe (None without one)."""
    quote = ""
    for index, char in enumerate(line):
        if char in "'\"" and quote in ("", char):
            quote = "" if quote else char
        elif char == "|" and not quote:
            after = line[index + 1 : index + 2]
            if after in ("|", "&"):
                return line, None
            return line[:index], line[index + 1 :]
    return line, None


_STDERR_SUFFIXES = {" 2>&1": True, " 2>/dev/null": False}
_TIMEOUT = Shape(r"[0-9]{1,6}(\.[0-9]{1,3})?[smh]?")


def network_grant(line: str, euid: int) -> NetworkGrant | str | None:
    """Whether the command line `line` gets the host's network: a NetworkGrant; a string
    saying why it may not (its first command is a network reader whose words are not all
    allowed); None when its first command is no network reader (it runs with a network of
    its own). `euid` 0 (root) keeps the firewall readers' capability."""
    head, rest = split_reader(line.strip())
    head = head.rstrip()
    stderr_to_stdout: bool | None = None
    for suffix, merged in _STDERR_SUFFIXES.items():
        if head.endswith(suffix):
            head, stderr_to_stdout = head[: -len(suffix)], merged
            break
    words = strict_words(head)
    if not words:
        return None
    prefix: list[str] = []
    if words[0] == "sudo":
        words = words[2:] if words[1:2] == ["-n"] else words[1:]
    if len(words) > 2 and words[0] == "timeout" and _TIMEOUT.fullmatch(words[1]):
        prefix, words = words[:2], words[2:]
    if not words or words[0].rsplit("/", 1)[-1] not in READERS:
        return None
    name = words[0].rsplit("/", 1)[-1]
    if "/" in words[0] and words[0].rsplit("/", 1)[0] not in SYSTEM_DIRECTORIES:
        return f"{words[0]} is not the system's {name}: network readers run from {SYSTEM_PATH}"
    reader = READERS[name]
    problem = reader.check(words[1:])
    if problem:
        reach = "its daemon's socket" if not reader.host_network else "the host's network"
        return f"{name} gets {reach} only with the words it reads with: {problem}"
    if rest is not None and not rest.strip():
        return "nothing follows the pipe"
    argv = [*prefix, words[0], *reader.forced, *words[1:]]
    grant = NetworkGrant(argv, name, reader.capabilities if euid == 0 else (), rest)
    grant.host_network = reader.host_network
    grant.unix_sockets = reader.unix_sockets
    grant.stderr_to_stdout = bool(stderr_to_stdout)
    grant.stderr_to_null = stderr_to_stdout is False
    return grant


def names_reader(command: str, via: Sequence[str] = ()) -> bool:
    """True when a simple command (its text, and the wrappers it runs under) needs a network
    reader: it is one, or it runs through ssh."""
    words = command.split(None, 1)
    first = words[0].strip("'\"").rsplit("/", 1)[-1] if words else ""
    return first in READERS or "ssh" in via
