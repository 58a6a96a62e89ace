"""What each reader may be given: one check per tool, and `READERS`, the table of them with
what each gets (the host's network, the daemons' sockets, capabilities as root)."""

from __future__ import annotations

from agentledger.runner.shell_gate.reader_ip import check_ip
from agentledger.shell.fetch_words import CURL_FORCED, WGET_FORCED, check_curl, check_wget
from agentledger.shell.reader_options import (
    DESTINATION,
    HOST,
    INT,
    NAME,
    NUM,
    TABLES,
    ReaderOptions,
    Shape,
    any_text,
    interval,
    matches,
    names,
    one_of,
    positionals,
    selectors,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["PSQL_READ_ONLY", "READERS", "Reader"]

_NFT_NAME = Shape(r"[A-Za-z0-9_.-]{1,64}")
_DIG_WORD = Shape(r"@?[A-Za-z0-9_.:*-]{1,253}|\+[a-z0-9-]{1,30}(=[0-9]{1,5})?")
# Options that shape the query only: its type and class, TCP (-vc) or UDP, recursion, the
# search list, the server's port (a DNS port: any other sends the query to whatever daemon
# listens there, a syslog or a cache that takes lines), the debug output.
_NSLOOKUP_OPTION = Shape(
    r"-(type|query|q|querytype|class|timeout|retry)=[A-Za-z0-9]{1,10}|-port=(53|5353)"
    r"|-(no)?(debug|d2|vc|recurse|search|defname)"
)
_SSH_SETTING = Shape(r"[A-Za-z0-9_.,/@:~+-]*")
_DOCKER_NAME = Shape(r"[A-Za-z0-9_.:/@-]{1,256}")
_FIREWALL_CAPS = ("CAP_NET_ADMIN",)
# The legacy iptables backend reads the tables through a raw socket.
_IPTABLES_CAPS = ("CAP_NET_ADMIN", "CAP_NET_RAW")
# ping as root sends ICMP through a raw socket (it is not setuid here: no-new-privileges).
_PING_CAPS = ("CAP_NET_RAW",)


def _iptables(args: list[str]) -> str:
    options = ReaderOptions(
        "-L --list -S --list-rules -n --numeric -v --verbose -x --exact --line-numbers -w --wait",
        {"-t": TABLES, "--table": TABLES},
    )
    seen, _, problem = options.parse(args, stop_at_positional=False)
    if problem:
        return problem
    listing = [flag for flag in seen if flag in ("-L", "--list", "-S", "--list-rules")]
    if len(listing) != 1:
        return "exactly one of -L, --list, -S, --list-rules is needed"
    chains = [word for word in positionals(args, options) if word]
    if len(chains) > 2 or not all(NAME.fullmatch(word) for word in chains):
        return "only a chain name (and a rule number) may follow"
    return ""


def _iptables_save(args: list[str]) -> str:
    options = ReaderOptions("-c --counters", {"-t": TABLES, "--table": TABLES})
    _, end, problem = options.parse(args, stop_at_positional=True)
    if problem:
        return problem
    return "" if end == len(args) else f"{args[end]!r}: iptables-save takes options only"


_NFT_OBJECTS = names(
    "ruleset tables table chains chain sets set maps map counters counter quotas quota "
    "flowtables flowtable meters meter limits limit"
)


def _nft(args: list[str]) -> str:
    options = ReaderOptions(
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
    if not all(_NFT_NAME.fullmatch(word) for word in words[2:]):
        return "only family, table and chain names may follow `nft list`"
    return ""


_TC_OPTIONS = ReaderOptions(
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
    return selectors(words[2:])


_SS_FAMILIES = one_of("inet", "inet6", "link", "unix", "netlink", "vsock", "tipc", "xdp", "mptcp")
_SS_QUERY = matches(r"[a-z0-9_,!|]{1,100}")
_SS_OPTIONS = ReaderOptions(
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
    options = ReaderOptions(
        "-n -q -4 -6 -D -O -v",
        {
            **{"-c": INT, "-W": NUM, "-w": INT, "-i": interval, "-s": INT, "-t": INT},
            # -M: path MTU discovery (do, want, dont, probe); -I: the interface or address
            # sent from. Both shape this ping's packets only.
            "-M": one_of("do", "want", "dont", "probe"),
            "-I": matches(HOST),
        },
    )
    _, _, problem = options.parse(args, stop_at_positional=False)
    if problem:
        return problem
    hosts = positionals(args, options)
    if len(hosts) != 1 or not HOST.fullmatch(hosts[0]):
        return "ping takes one host"
    return ""


def _dig(args: list[str]) -> str:
    options = ReaderOptions(
        "-4 -6",
        {
            "-t": matches(r"[A-Za-z0-9]{1,10}"),
            "-c": one_of("IN", "CH", "HS", "in", "ch", "hs"),
            "-x": matches(HOST),
            "-q": matches(NAME),
        },
    )
    _, _, problem = options.parse(args, stop_at_positional=False)
    if problem:
        return problem
    for word in positionals(args, options):
        if not _DIG_WORD.fullmatch(word):
            return f"{word!r}: only names, types, @SERVER and +options may be given to dig"
    return ""


def _host(args: list[str]) -> str:
    options = ReaderOptions(
        "-a -v -4 -6 -C -r -T -d -l",
        {"-t": matches(r"[A-Za-z0-9]{1,10}"), "-W": INT},
    )
    _, _, problem = options.parse(args, stop_at_positional=False)
    if problem:
        return problem
    names = positionals(args, options)
    if not 1 <= len(names) <= 2 or not all(HOST.fullmatch(name) for name in names):
        return "host takes a name and, optionally, a server"
    return ""


def _nslookup(args: list[str]) -> str:
    for word in args:
        if word.startswith("-"):
            if not _NSLOOKUP_OPTION.fullmatch(word):
                return f"{word} is not an option the network readers allow"
        elif not HOST.fullmatch(word):
            return f"{word!r}: nslookup takes a name and, optionally, a server"
    return "" if 1 <= sum(not w.startswith("-") for w in args) <= 2 else "nslookup needs a name"


_SSH_OPTIONNAMES = names(
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
    return name.lower() in _SSH_OPTIONNAMES and _SSH_SETTING.fullmatch(setting)


_SSH_OPTIONS = ReaderOptions(
    "-q -T -n -4 -6 -v -C -x -k",
    {
        "-p": INT,
        "-l": matches(r"[A-Za-z0-9_.-]{1,64}"),
        "-i": matches(r"[A-Za-z0-9_./~-]{1,4096}"),
        "-o": _ssh_option,
    },
)


def _ssh(args: list[str]) -> str:
    # OpenSSH reads options again after the destination, up to the first plain word.
    _, end, problem = _SSH_OPTIONS.parse(args, stop_at_positional=True)
    if problem:
        return problem
    if end >= len(args) or not DESTINATION.fullmatch(args[end]):
        return "a destination (HOST or USER@HOST) is needed"
    _, more, problem = _SSH_OPTIONS.parse(args[end + 1 :], stop_at_positional=True)
    if problem:
        return problem
    if end + 1 + more >= len(args):
        return "ssh without a remote command opens a session; give the command to run"
    return ""


_UNIT = Shape(r"[A-Za-z0-9@_.:\\*-]{1,256}")
_SYSTEMCTL_READS = names(
    "status show cat is-active is-enabled is-failed is-system-running list-units "
    "list-unit-files list-sockets list-timers list-jobs list-dependencies get-default"
)
_SYSTEMCTL_OPTIONS = ReaderOptions(
    "--no-pager -l --full -a --all --failed --plain --no-legend -q --quiet --value "
    "--no-ask-password --system -r --recursive --reverse --before --after",
    {
        # `-p ActiveState,SubState`: systemctl takes a comma list of names here
        **dict.fromkeys(
            ("-t", "--type", "--state", "-p", "--property"),
            matches(r"[A-Za-z0-9_.:@%/-]{1,253}(,[A-Za-z0-9_.:@%/-]{1,253}){0,63}"),
        ),
        **dict.fromkeys(("-n", "--lines"), INT),
        **dict.fromkeys(("-o", "--output"), matches(r"[a-z-]{1,20}")),
    },
)


def _systemctl(args: list[str]) -> str:
    """Only what reads the manager's state; never -H/-M (another host or container)."""
    _, _, problem = _SYSTEMCTL_OPTIONS.parse(args, stop_at_positional=False)
    if problem:
        return problem
    words = positionals(args, _SYSTEMCTL_OPTIONS)
    if words and words[0] not in _SYSTEMCTL_READS:
        return f"`systemctl {words[0]}`: only {', '.join(sorted(_SYSTEMCTL_READS))} read"
    for word in words[1:]:
        if not _UNIT.fullmatch(word):
            return f"{word!r} is not a unit name or pattern"
    return ""


_DOCKER_READS = {
    "ps": (), "images": (), "inspect": (), "logs": (), "version": (), "info": (), "port": (),
    "top": (), "stats": (), "container": ("ls", "list", "ps", "inspect", "logs", "port", "top",
                                          "stats"),
    "image": ("ls", "list", "inspect", "history"), "network": ("ls", "list", "inspect"),
    "volume": ("ls", "list", "inspect"), "system": ("df", "info"),
    "compose": ("ps", "logs", "config", "ls", "images", "top", "version"),
}  # fmt: skip
_DOCKER_OPTIONS = ReaderOptions(
    "-a --all -q --quiet --no-trunc -s --size -t --timestamps --details --no-stream "
    "--digests -l --latest",
    {
        **dict.fromkeys(("--format", "-f", "--filter"), any_text),
        **dict.fromkeys(("--tail", "-n", "--last"), matches(r"[0-9]{1,9}|all")),
        **dict.fromkeys(("--since", "--until"), matches(r"[0-9A-Za-z:.+-]{1,40}")),
        "--type": one_of("container", "image", "volume", "network"),
    },
)


def _docker(args: list[str]) -> str:
    """Listing and inspecting, over the local daemon's socket; no global option (`-H`,
    `--context` and `--config` would name another daemon or configuration)."""
    if args in (["--version"], ["-v"]):
        return ""
    if not args or args[0].startswith("-"):
        return "docker needs a subcommand first (no global options but --version)"
    reads = _DOCKER_READS.get(args[0])
    if reads is None:
        return f"`docker {args[0]}`: only {', '.join(sorted(_DOCKER_READS))} read"
    rest = args[1:]
    if reads:
        if not rest or rest[0] not in reads:
            return f"`docker {args[0]}`: only {', '.join(reads)} read"
        rest = rest[1:]
    if args[0] in ("stats", "container") and "stats" in args[:2] and "--no-stream" not in rest:
        return "docker stats reads only with --no-stream"
    _, _, problem = _DOCKER_OPTIONS.parse(rest, stop_at_positional=False)
    if problem:
        return problem
    for word in positionals(rest, _DOCKER_OPTIONS):
        if not _DOCKER_NAME.fullmatch(word):
            return f"{word!r} is not a container, image, network or volume name"
    return ""


_NETSTAT_OPTIONS = ReaderOptions(
    "-t -u -w -x -l -a -n -p -e -o -r -i -s -g -W -4 -6 --tcp --udp --raw --unix --listening "
    "--all --numeric --programs --extend --timers --route --interfaces --statistics --groups "
    "--wide --numeric-hosts --numeric-ports --numeric-users"
)


def _netstat(args: list[str]) -> str:
    """netstat reads /proc/net of its network namespace; never -c (it would not end)."""
    _, _, problem = _NETSTAT_OPTIONS.parse(args, stop_at_positional=False)
    if problem:
        return problem
    extra = positionals(args, _NETSTAT_OPTIONS)
    return f"{extra[0]!r}: netstat takes options only" if extra else ""


def _service(args: list[str]) -> str:
    """`service UNIT status` (systemctl status, or the init script's status) and
    `service --status-all`; no other action."""
    if args == ["--status-all"] or (
        len(args) == 2 and args[1] == "status" and _UNIT.fullmatch(args[0])
    ):
        return ""
    return "service only as `service UNIT status` or `service --status-all`"


def _ufw(args: list[str]) -> str:
    """`ufw status [verbose|numbered]` and `ufw version`: they list the rules through
    iptables; every other command changes them."""
    if args in (["status"], ["status", "verbose"], ["status", "numbered"], ["version"]):
        return ""
    if args in (["--version"],):
        return ""
    return "ufw only as `ufw status`, `ufw status verbose|numbered` or `ufw version`"


_PG_NAME = Shape(r"[A-Za-z0-9_.-]{1,63}")
"""A database or user name: never a connection string (`options=-csearch_path=...`,
`sslkey=...`, `service=...`) or a URI, whose parts psql would obey."""
_PSQL_OPTIONS = ReaderOptions(
    "-A --no-align -t --tuples-only -x --expanded -q --quiet -X --no-psqlrc -w --no-password "
    "--csv -e --echo-queries",
    {
        **dict.fromkeys(("-h", "--host"), matches(HOST)),
        **dict.fromkeys(("-p", "--port"), INT),
        **dict.fromkeys(("-U", "--username", "-d", "--dbname"), matches(_PG_NAME)),
        **dict.fromkeys(("-F", "--field-separator", "-R", "--record-separator"), any_text),
        **dict.fromkeys(("-c", "--command"), any_text),
    },
)
_PSQL_VARIABLE = Shape(r"(?s).*(?<!:):(?!:)[A-Za-z_'\"{].*")
"""psql's interpolation of a variable (`:name`, `:'name'`, `:"name"`, `:{?name}`)."""
_PSQL_DESCRIBE = Shape(r"\\(d[a-zA-Z]{0,3}\+?S?|l\+?|conninfo)( [A-Za-z0-9_.*\"+-]{1,128})?")
"""A describing backslash command alone (`\\dt`, `\\d+ users`, `\\l`, `\\conninfo`)."""
PSQL_READ_ONLY = "SET TRANSACTION READ ONLY"
"""What psql runs first, in the one transaction (`-1`) of all its `-c` texts."""


def _psql(args: list[str]) -> str:
    """psql with SQL that is only queries: no file, no variable, no backslash command (psql
    would run them on the client), no session or transaction statement (one could end the
    read-only transaction the reader runs in), no connection string."""
    options, _, problem = _PSQL_OPTIONS.parse(args, stop_at_positional=False)
    if problem:
        return problem
    for word in positionals(args, _PSQL_OPTIONS):
        if not _PG_NAME.fullmatch(word):
            return f"{word!r} is not a database or user name (no connection strings)"
    texts = [
        args[index + 1] for index, word in enumerate(args[:-1]) if word in ("-c", "--command")
    ] + [word.split("=", 1)[1] for word in args if word.startswith("--command=")]
    if not texts or len(texts) != options.count("-c") + options.count("--command"):
        return "psql reads the network only with its SQL given by -c TEXT (or --command=TEXT)"
    from agentledger.shell.sql import analyse_sql

    for text in texts:
        if _PSQL_DESCRIBE.fullmatch(text.strip()):
            continue  # psql runs catalog queries for it, in the same read-only transaction
        copied = _copied_query(text.strip())
        if copied is not None:
            text = copied  # `\\copy X to stdout` runs COPY X TO STDOUT: X is what is read
        if "\\" in text or _PSQL_VARIABLE.fullmatch(text):
            return "psql -c with a backslash command or a :variable runs what the gate cannot see"
        analysis = analyse_sql(text)
        if analysis.error is not None or analysis.writes or not analysis.statements:
            why = analysis.error or (analysis.writes[0][0] if analysis.writes else "no query")
            return f"psql -c gets the network only for queries alone: {why}"
    return ""


_PSQL_COPY_OUT = Shape(
    r"(?is)\\copy\s+(\(.+\)|[A-Za-z0-9_.]{1,128})\s+to\s+stdout"
    r"(\s+(with\s+)?\(?[A-Za-z0-9_ ,']{0,100}\)?)?"
)


def _copied_query(text: str) -> str | None:
    """The query `\\copy (QUERY) to stdout` or `\\copy TABLE to stdout` reads, as SQL."""
    if not _PSQL_COPY_OUT.fullmatch(text):
        return None
    source = text[len("\\copy") :].strip()
    if source.startswith("("):
        depth = 0
        for index, char in enumerate(source):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                return source[1:index]
        return None
    return f"SELECT * FROM {source.split(None, 1)[0]}"


class Reader:
    """A reader: its check, the capabilities it keeps as root, whether it gets the host's
    network and the daemons' Unix sockets, and words put before the agent's (its own
    configuration ignored, its reach narrowed)."""

    __slots__ = ("capabilities", "check", "forced", "host_network", "unix_sockets")

    def __init__(
        self,
        check: Callable[[list[str]], str],
        capabilities: tuple[str, ...] = (),
        *,
        host_network: bool = True,
        unix_sockets: bool = False,
        forced: tuple[str, ...] = (),
    ) -> None:
        self.check = check
        self.capabilities = capabilities
        self.host_network = host_network
        self.unix_sockets = unix_sockets
        self.forced = forced


READERS: dict[str, Reader] = {
    "iptables": Reader(_iptables, _IPTABLES_CAPS),
    "ip6tables": Reader(_iptables, _IPTABLES_CAPS),
    "iptables-save": Reader(_iptables_save, _IPTABLES_CAPS),
    "ip6tables-save": Reader(_iptables_save, _IPTABLES_CAPS),
    "nft": Reader(_nft, _FIREWALL_CAPS),
    "tc": Reader(_tc),
    "ip": Reader(check_ip),
    "ss": Reader(_ss),
    "ping": Reader(_ping, _PING_CAPS),
    "dig": Reader(_dig),
    "host": Reader(_host),
    "nslookup": Reader(_nslookup),
    # curl: -q (it must come first) skips .curlrc; only http and https, redirects included.
    "curl": Reader(
        check_curl,
        forced=CURL_FORCED,
    ),
    "wget": Reader(check_wget, forced=WGET_FORCED),
    # The agent's key (SSH_AUTH_SOCK) is a Unix socket.
    "ssh": Reader(_ssh, unix_sockets=True),
    "systemctl": Reader(_systemctl, host_network=False, unix_sockets=True),
    "docker": Reader(_docker, host_network=False, unix_sockets=True),
    "netstat": Reader(_netstat),
    "service": Reader(_service, host_network=False, unix_sockets=True),
    "ufw": Reader(_ufw, _IPTABLES_CAPS),
    # psql: no psqlrc (-X), quiet (no SET tag), every -c in one transaction (-1) made read-only
    # first, so that a function a view or a policy calls cannot write either.
    "psql": Reader(_psql, forced=("-X", "-q", "-1", "-c", PSQL_READ_ONLY)),
}
"""Every reader, by command name."""
