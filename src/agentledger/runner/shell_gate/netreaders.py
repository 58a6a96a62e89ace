"""The network readers: the few commands that run in the sandbox with the host's network.

Every other command runs in a network namespace of its own (loopback only), so that a
command the classifier got wrong can neither change the host's network nor reach a daemon
over it. These need the host's network to answer at all: the firewall (`iptables -S`,
`iptables-save`, `nft list`), traffic control and addresses (`tc ... show`, `ip ... show`),
sockets (`ss`), reachability (`ping`), names (`dig`, `host`, `nslookup`), reading a URL
(`curl`, `wget`: GET or HEAD over http or https) and remote commands (`ssh HOST CMD`: the
classifier judges CMD). `NETWORK_READERS` names them.

A reader gets the host's network only when its words are checked here first: each option
exactly as listed (no abbreviation: getopt reads `--ze` as `--zero`, and `iptables --ze -L`
zeroes the counters), each value of the kind listed, each positional word of the shape
listed. The line must be the reader alone, or the reader piped into the rest of the line
(`iptables -S | grep DROP`); the reader is then run from the words checked here, without a
shell, so what runs is what was checked, and the rest of the line runs in a sandbox of its
own with no network. The words are plain or in single quotes (what bash reads the same way
as any tokenizer). As root, the firewall readers keep CAP_NET_ADMIN (reading netfilter
needs it; `iptables` also CAP_NET_RAW, for the legacy backend's raw socket) and `ping` keeps
CAP_NET_RAW; as these run from checked words without a shell, nothing else gets them, and
no other command keeps any capability. Readers get a clean environment, so that
`WGETRC`, `CURL_HOME` or a proxy set by the agent cannot turn a read into a write, and
curl and wget are told to ignore their configuration files and to follow no scheme but
http and https.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "NETWORK_READERS",
    "NetworkGrant",
    "check_reader",
    "names_reader",
    "network_grant",
    "reader_environment",
    "split_reader",
    "strict_words",
]

_INTEGER = re.compile(r"[0-9]{1,9}")
_NUMBER = re.compile(r"[0-9]{1,6}(\.[0-9]{1,3})?")
_NAME = re.compile(r"[A-Za-z0-9_.:@%/-]{1,253}")
_HOST = re.compile(r"[A-Za-z0-9_.:\[\]-]{1,253}")
_DESTINATION = re.compile(r"([A-Za-z0-9_.-]{1,64}@)?[A-Za-z0-9_.:\[\]-]{1,253}")
_URL = re.compile(r"https?://[^\s\x00-\x1f\x7f]+", re.IGNORECASE)
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,-")
_FIREWALL_CAPS = ("CAP_NET_ADMIN",)
# The legacy iptables backend reads the tables through a raw socket.
_IPTABLES_CAPS = ("CAP_NET_ADMIN", "CAP_NET_RAW")
# ping as root sends ICMP through a raw socket (it is not setuid here: no-new-privileges).
_PING_CAPS = ("CAP_NET_RAW",)
SYSTEM_DIRECTORIES = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""Where a network reader is looked for (PATH is the agent's; it is not used)."""
_PATH = ":".join(SYSTEM_DIRECTORIES)
_KEPT_VARIABLES = ("LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ", "SSH_AUTH_SOCK")


class NetworkGrant:
    """A reader allowed the host's network: the argv to run (no shell), the capabilities
    it keeps as root, and the rest of the line its output is piped into (run isolated)."""

    __slots__ = ("argv", "capabilities", "rest", "stderr_to_null", "stderr_to_stdout", "tool")

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

    def __repr__(self) -> str:
        return f"NetworkGrant({self.argv!r}, rest={self.rest!r})"


class _Options:
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


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _one_of(*choices: str) -> Callable[[str], bool]:
    allowed = frozenset(choices)
    return lambda value: value in allowed


def _matches(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda value: pattern.fullmatch(value) is not None


def _any_text(value: str) -> bool:
    return value.isprintable()


def _interval(value: str) -> bool:
    return _NUMBER.fullmatch(value) is not None and float(value) >= 0.2


def _header(value: str) -> bool:
    name = value.partition(":")[0].strip().lower()
    return value.isprintable() and "method" not in name and "override" not in name


def _write_out(value: str) -> bool:
    return value.isprintable() and "%output{" not in value and "%{stderr}" not in value


_INT = _matches(_INTEGER)
_NUM = _matches(_NUMBER)
_STDOUT_ONLY = _one_of("-", "/dev/null")
_TABLES = _one_of("filter", "nat", "mangle", "raw", "security")


def _iptables(args: list[str]) -> str:
    options = _Options(
        "-L --list -S --list-rules -n --numeric -v --verbose -x --exact --line-numbers -w --wait",
        {"-t": _TABLES, "--table": _TABLES},
    )
    seen, _, problem = options.parse(args, stop_at_positional=False)
    if problem:
        return problem
    listing = [flag for flag in seen if flag in ("-L", "--list", "-S", "--list-rules")]
    if len(listing) != 1:
        return "exactly one of -L, --list, -S, --list-rules is needed"
    positionals = [word for word in _positionals(args, options) if word]
    if len(positionals) > 2 or not all(_NAME.fullmatch(word) for word in positionals):
        return "only a chain name (and a rule number) may follow"
    return ""


def _iptables_save(args: list[str]) -> str:
    options = _Options("-c --counters", {"-t": _TABLES, "--table": _TABLES})
    _, end, problem = options.parse(args, stop_at_positional=True)
    if problem:
        return problem
    return "" if end == len(args) else f"{args[end]!r}: iptables-save takes options only"


_NFT_OBJECTS = _names(
    "ruleset tables table chains chain sets set maps map counters counter quotas quota "
    "flowtables flowtable meters meter limits limit"
)


def _nft(args: list[str]) -> str:
    options = _Options(
        "-a --handle -n --numeric -s --stateless -j --json -t --terse -y "
        "--numeric-priority -p --numeric-protocol -T --numeric-time -S "
        "--service"
    )
    _, end, problem = options.parse(args, stop_at_positional=True)
    if problem:
        return problem
    words = args[end:]
    if len(words) < 2 or words[0] != "list" or words[1] not in _NFT_OBJECTS:
        return "only `nft list OBJECT ...` reads (OBJECT: ruleset, table, chain, set, ...)"
    if not all(re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", word) for word in words[2:]):
        return "only family, table and chain names may follow `nft list`"
    return ""


_TC_OPTIONS = _Options(
    "-s -stats -statistics -d -details -p -pretty -j -json -g -graph -iec -raw", combine=False
)


def _tc(args: list[str]) -> str:
    _, end, problem = _TC_OPTIONS.parse(args, stop_at_positional=True)
    if problem:
        return problem
    words = args[end:]
    if not words or words[0] not in ("qdisc", "class", "filter"):
        return "only `tc qdisc|class|filter show ...` reads"
    if len(words) > 1 and words[1] not in ("show", "list", "ls"):
        return f"`tc {words[0]} {words[1]}`: only show, list or ls reads"
    return _selectors(words[2:])


_IP_OPTIONS = _Options(
    "-4 -6 -s -stats -statistics -d -details -br -brief -j -json -p -pretty -o -oneline -h -human",
    combine=False,
)
_IP_OBJECTS = {
    **dict.fromkeys(("a", "addr", "address"), "address"),
    **dict.fromkeys(("r", "ro", "route"), "route"),
    **dict.fromkeys(("ru", "rule"), "rule"),
    **dict.fromkeys(("l", "link"), "link"),
    **dict.fromkeys(("n", "neigh", "neighbor", "neighbour"), "neigh"),
}


def _ip(args: list[str]) -> str:
    _, end, problem = _IP_OPTIONS.parse(args, stop_at_positional=True)
    if problem:
        return problem
    words = args[end:]
    if not words or words[0] not in _IP_OBJECTS:
        return "only `ip addr|route|rule|link|neigh show ...` reads"
    verbs = ("show", "list", "ls", "lst") + (("get",) if _IP_OBJECTS[words[0]] == "route" else ())
    if len(words) > 1 and words[1] not in verbs:
        return f"`ip {words[0]} {words[1]}`: only {', '.join(verbs)} reads"
    return _selectors(words[2:])


def _selectors(words: list[str]) -> str:
    for word in words:
        if word.startswith("-") or not _NAME.fullmatch(word):
            return f"{word!r} is not a device, address or selector name"
    return ""


_SS_FAMILIES = _one_of("inet", "inet6", "link", "unix", "netlink", "vsock", "tipc", "xdp", "mptcp")
_SS_QUERY = _matches(re.compile(r"[a-z0-9_,!|]{1,100}"))
_SS_OPTIONS = _Options(
    "-t -u -l -n -p -a -x -w -4 -6 -s -e -m -i -o -H -O -r -d -S -0 --tcp --udp --listening "
    "--numeric --processes --all --unix --raw --ipv4 --ipv6 --summary --extended --memory "
    "--info --options --no-header --oneline --resolve --dccp --sctp --packet",
    {"-f": _SS_FAMILIES, "--family": _SS_FAMILIES, "-A": _SS_QUERY, "--query": _SS_QUERY},
)


def _ss(args: list[str]) -> str:
    _, end, problem = _SS_OPTIONS.parse(args, stop_at_positional=True)
    if problem:
        return problem
    for word in args[end:]:
        if word.startswith("-") or not word.isprintable():
            return f"{word!r}: only a filter may follow the options of ss"
    return ""


def _ping(args: list[str]) -> str:
    options = _Options(
        "-n -q -4 -6 -D -O -v",
        {"-c": _INT, "-W": _NUM, "-w": _INT, "-i": _interval, "-s": _INT, "-t": _INT},
    )
    _, _, problem = options.parse(args, stop_at_positional=False)
    if problem:
        return problem
    hosts = _positionals(args, options)
    if len(hosts) != 1 or not _HOST.fullmatch(hosts[0]):
        return "ping takes one host"
    return ""


def _dig(args: list[str]) -> str:
    options = _Options(
        "-4 -6",
        {
            "-t": _matches(re.compile(r"[A-Za-z0-9]{1,10}")),
            "-c": _one_of("IN", "CH", "HS", "in", "ch", "hs"),
            "-x": _matches(_HOST),
            "-q": _matches(_NAME),
        },
    )
    _, _, problem = options.parse(args, stop_at_positional=False)
    if problem:
        return problem
    for word in _positionals(args, options):
        if not re.fullmatch(r"@?[A-Za-z0-9_.:*-]{1,253}|\+[a-z0-9-]{1,30}(=[0-9]{1,5})?", word):
            return f"{word!r}: only names, types, @SERVER and +options may be given to dig"
    return ""


def _host(args: list[str]) -> str:
    options = _Options(
        "-a -v -4 -6 -C -r -T -d -l",
        {"-t": _matches(re.compile(r"[A-Za-z0-9]{1,10}")), "-W": _INT},
    )
    _, _, problem = options.parse(args, stop_at_positional=False)
    if problem:
        return problem
    names = _positionals(args, options)
    if not 1 <= len(names) <= 2 or not all(_HOST.fullmatch(name) for name in names):
        return "host takes a name and, optionally, a server"
    return ""


def _nslookup(args: list[str]) -> str:
    for word in args:
        if word.startswith("-"):
            if not re.fullmatch(r"-(type|query|q|timeout|retry)=[A-Za-z0-9]{1,10}|-debug", word):
                return f"{word} is not an option the network readers allow"
        elif not _HOST.fullmatch(word):
            return f"{word!r}: nslookup takes a name and, optionally, a server"
    return "" if 1 <= sum(not w.startswith("-") for w in args) <= 2 else "nslookup needs a name"


_CURL_OPTIONS = _Options(
    "-s --silent -S --show-error -f --fail --fail-with-body -L --location -I --head -i "
    "--include -v --verbose -k --insecure -4 -6 --compressed -N --no-buffer --http1.1 "
    "--http2 -g --globoff -q",
    {
        **dict.fromkeys(("-m", "--max-time", "--connect-timeout"), _NUM),
        **dict.fromkeys(("--retry", "--max-filesize", "--max-redirs"), _INT),
        **dict.fromkeys(("-H", "--header"), _header),
        **dict.fromkeys(("-A", "--user-agent", "-u", "--user", "-r", "--range"), _any_text),
        **dict.fromkeys(("-w", "--write-out"), _write_out),
        **dict.fromkeys(("-X", "--request"), _one_of("GET", "HEAD")),
        **dict.fromkeys(("-o", "--output"), _STDOUT_ONLY),
    },
)
_WGET_OPTIONS = _Options(
    "-q --quiet -S --server-response --spider --no-check-certificate -4 -6 -nv --no-verbose",
    {
        **dict.fromkeys(("-O", "--output-document"), _STDOUT_ONLY),
        **dict.fromkeys(("-T", "--timeout"), _NUM),
        **dict.fromkeys(("-t", "--tries", "--max-redirect"), _INT),
        **dict.fromkeys(("--header",), _header),
        **dict.fromkeys(("-U", "--user-agent"), _any_text),
    },
)


def _fetch(options: _Options) -> Callable[[list[str]], str]:
    def check(args: list[str]) -> str:
        _, _, problem = options.parse(args, stop_at_positional=False)
        if problem:
            return problem
        urls = _positionals(args, options)
        if not urls:
            return "a URL is needed"
        for url in urls:
            if _URL.fullmatch(url) is None:
                return f"{url!r}: only http:// and https:// URLs are read"
        return ""

    return check


_SSH_OPTION_NAMES = _names(
    (
        "ConnectTimeout StrictHostKeyChecking BatchMode UserKnownHostsFile LogLevel "
        "ServerAliveInterval ServerAliveCountMax Port User IdentityFile IdentitiesOnly "
        "PasswordAuthentication ConnectionAttempts GlobalKnownHostsFile PubkeyAuthentication "
        "PreferredAuthentications HostKeyAlgorithms PubkeyAcceptedKeyTypes "
        "PubkeyAcceptedAlgorithms KbdInteractiveAuthentication CheckHostIP HashKnownHosts "
        "AddressFamily Compression"
    ).lower()
)


def _ssh_option(value: str) -> bool:
    name, _, setting = value.replace(" ", "=", 1).partition("=")
    return (
        name.lower() in _SSH_OPTION_NAMES
        and re.fullmatch(r"[A-Za-z0-9_.,/@:~+-]*", setting) is not None
    )


_SSH_OPTIONS = _Options(
    "-q -T -n -4 -6 -v -C -x -k",
    {
        "-p": _INT,
        "-l": _matches(re.compile(r"[A-Za-z0-9_.-]{1,64}")),
        "-i": _matches(re.compile(r"[A-Za-z0-9_./~-]{1,4096}")),
        "-o": _ssh_option,
    },
)


def _ssh(args: list[str]) -> str:
    # OpenSSH reads options again after the destination, up to the first plain word.
    _, end, problem = _SSH_OPTIONS.parse(args, stop_at_positional=True)
    if problem:
        return problem
    if end >= len(args) or not _DESTINATION.fullmatch(args[end]):
        return "a destination (HOST or USER@HOST) is needed"
    _, more, problem = _SSH_OPTIONS.parse(args[end + 1 :], stop_at_positional=True)
    if problem:
        return problem
    if end + 1 + more >= len(args):
        return "ssh without a remote command opens a session; give the command to run"
    return ""


def _positionals(args: Sequence[str], options: _Options) -> list[str]:
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


_READERS: dict[str, tuple[Callable[[list[str]], str], tuple[str, ...]]] = {
    "iptables": (_iptables, _IPTABLES_CAPS),
    "ip6tables": (_iptables, _IPTABLES_CAPS),
    "iptables-save": (_iptables_save, _IPTABLES_CAPS),
    "ip6tables-save": (_iptables_save, _IPTABLES_CAPS),
    "nft": (_nft, _FIREWALL_CAPS),
    "tc": (_tc, ()),
    "ip": (_ip, ()),
    "ss": (_ss, ()),
    "ping": (_ping, _PING_CAPS),
    "dig": (_dig, ()),
    "host": (_host, ()),
    "nslookup": (_nslookup, ()),
    "curl": (_fetch(_CURL_OPTIONS), ()),
    "wget": (_fetch(_WGET_OPTIONS), ()),
    "ssh": (_ssh, ()),
}
NETWORK_READERS = frozenset(_READERS)
"""The commands that may run with the host's network, after their words are checked."""
_FORCED = {
    # curl: -q (must come first) skips .curlrc; only http and https, redirects included.
    "curl": ["-q", "--proto", "=http,https", "--proto-redir", "=http,https"],
    "wget": ["--no-config", "--max-redirect=5"],
}


def reader_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a network reader runs with: the system PATH, the user's own HOME,
    and the locale; nothing else the agent set (``WGETRC``, ``CURL_HOME``, proxies)."""
    import pwd

    env = {"PATH": _PATH}
    try:
        entry = pwd.getpwuid(os.geteuid())
        env.update(HOME=entry.pw_dir, USER=entry.pw_name, LOGNAME=entry.pw_name)
    except KeyError:
        env["HOME"] = "/"
    for name in _KEPT_VARIABLES:
        value = environ.get(name)
        if value is not None and value.isprintable():
            env[name] = value
    return env


def check_reader(words: Sequence[str]) -> str:
    """'' when `words` (a reader and its arguments) may have the host's network, else why
    not."""
    name = words[0].rsplit("/", 1)[-1] if words else ""
    reader = _READERS.get(name)
    if reader is None:
        return f"{name or 'nothing'} is not a network reader"
    return reader[0](list(words[1:]))


def strict_words(text: str) -> list[str] | None:
    """The words of `text` when bash reads them as any tokenizer would: plain characters
    and single-quoted strings only (no expansion, quoting or operator bash could read
    otherwise); None when anything else is there."""
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
        elif char == "'":
            end = text.find("'", index + 1)
            if end < 0:
                return None
            current.append(text[index + 1 : end])
            in_word, index = True, end
        elif char in _PLAIN:
            current.append(char)
            in_word = True
        else:
            return None
        index += 1
    if in_word:
        words.append("".join(current))
    if words and ("=" in words[0] and words[0].split("=", 1)[0].isidentifier()):
        return None  # an assignment before the command
    return words


def split_reader(line: str) -> tuple[str, str | None]:
    """`line` as its first command and the rest after a pipe (None without one)."""
    quoted = False
    for index, char in enumerate(line):
        if char == "'":
            quoted = not quoted
        elif char == "|" and not quoted:
            after = line[index + 1 : index + 2]
            if after in ("|", "&"):
                return line, None
            return line[:index], line[index + 1 :]
    return line, None


_STDERR_SUFFIXES = {" 2>&1": True, " 2>/dev/null": False}
_TIMEOUT = re.compile(r"[0-9]{1,6}(\.[0-9]{1,3})?[smh]?")


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
    if not words or words[0].rsplit("/", 1)[-1] not in _READERS:
        return None
    name = words[0].rsplit("/", 1)[-1]
    if "/" in words[0] and words[0].rsplit("/", 1)[0] not in SYSTEM_DIRECTORIES:
        return f"{words[0]} is not the system's {name}: network readers run from {_PATH}"
    check, capabilities = _READERS[name]
    problem = check(words[1:])
    if problem:
        return f"{name} gets the host's network only with the options it reads with: {problem}"
    if rest is not None and not rest.strip():
        return "nothing follows the pipe"
    argv = [*prefix, words[0], *_FORCED.get(name, ()), *words[1:]]
    grant = NetworkGrant(argv, name, capabilities if euid == 0 else (), rest)
    grant.stderr_to_stdout = bool(stderr_to_stdout)
    grant.stderr_to_null = stderr_to_stdout is False
    return grant


def names_reader(command: str, via: Sequence[str] = ()) -> bool:
    """True when a simple command (its text, and the wrappers it runs under) needs a network
    reader: it is one, or it runs through ssh."""
    words = command.split(None, 1)
    first = words[0].strip("'\"").rsplit("/", 1)[-1] if words else ""
    return first in _READERS or "ssh" in via
