"""What `ip` may be given as a network reader: its objects and commands as ip itself reads
them, abbreviations included.

iproute2 compares a word with a keyword by `matches()` (lib/utils.c): a non-empty prefix of
the keyword matches it, so `ip a s` is `ip address show` and `ip r a` is `ip route add`. An
object is the first of ip's table (ip/ip.c, in its order) that the word starts; a command is
read here only when every command of that object the word may start only reads: `ip l s` may
be `ip link set` (ip takes it so), and is refused; `ip l sh` is `ip link show`.
"""

from __future__ import annotations

from agentledger.shell.reader_options import ReaderOptions, selectors

__all__ = ["check_ip", "ip_command", "ip_object"]

OPTIONS = ReaderOptions(
    "-4 -6 -s -stats -statistics -d -details -br -brief -j -json -p -pretty -o -oneline -h -human",
    combine=False,
)
OBJECTS = (
    "address", "addrlabel", "maddress", "route", "rule", "neighbor", "neighbour", "ntable",
    "ntbl", "link", "l2tp", "fou", "ila", "macsec", "tunnel", "tunl", "tuntap", "tap", "token",
    "tcpmetrics", "tcp_metrics", "monitor", "xfrm", "mroute", "mrule", "netns", "netconf",
    "vrf", "sr", "nexthop", "mptcp", "ioam", "help", "stats", "amt",
)  # fmt: skip
"""ip's objects in the order of its table (ip/ip.c): the first one a word starts is taken."""
_READ = ("list", "show", "lst", "save", "showdump", "help", "xstats", "afstats")
_COMMANDS = {
    "address": "add change chg replace delete flush restore",
    "route": "add change chg replace prepend append test delete flush restore get",
    "rule": "add delete flush restore",
    "link": "add set change replace delete property",
    "neighbor": "add delete change chg replace flush get",
}
"""Per object read here, the commands of ip that change something (and `get`, which is read
for a route only), besides the reading ones (_READ)."""
_READS = {obj: (*_READ, *(("get",) if obj == "route" else ())) for obj in _COMMANDS}
_OTHERS = {obj: tuple(v for v in words.split() if v not in _READS[obj])
           for obj, words in _COMMANDS.items()}  # fmt: skip


def ip_object(word: str) -> str | None:
    """The object ip takes `word` for (its first match), or None."""
    if not word:
        return None
    for name in OBJECTS:
        if name.startswith(word):
            return "neighbor" if name == "neighbour" else name
    return None


def ip_command(obj: str, word: str) -> str:
    """Why `ip OBJ WORD` may do more than read ("" when every command WORD starts reads)."""
    reads = [verb for verb in _READS[obj] if word and verb.startswith(word)]
    others = [verb for verb in _OTHERS[obj] if word and verb.startswith(word)]
    if reads and not others:
        return ""
    may = f" (ip may take it for `{obj} {others[0]}`)" if others and others[0] != word else ""
    return (
        f"`ip {obj} {word}`{may}: only {', '.join(_READS[obj])} read, or a prefix of one "
        "that starts no other command"
    )


def check_ip(args: list[str]) -> str:
    _, end, problem = OPTIONS.parse(args, stop_at_positional=True)
    if problem:
        return problem
    words = args[end:]
    if words[:1] == ["netns"]:  # the namespaces' names and ids; nothing else of netns
        return "" if words[1:] in ([], ["list"], ["ls"]) else "only `ip netns list` reads"
    obj = ip_object(words[0]) if words else None
    if obj not in _COMMANDS:
        return "only `ip addr|route|rule|link|neigh show ...`, `ip netns list` read"
    assert obj is not None
    if len(words) > 1 and (problem := ip_command(obj, words[1])):
        return problem
    return selectors(words[2:])
