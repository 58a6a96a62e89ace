"""The hosts a command line reaches through ssh, scp, sftp, rsync or git over ssh.

A host named as such a target is a host whatever its last label (`ssh root@evil.sh`,
`scp f evil.is:/tmp`), a single label (`ssh prod-db`, which ssh's configuration or the
resolver's search domains send anywhere) or an IP address; so are the jump hosts of `-J` and
`-o ProxyJump=`, the `-o HostName=` that replaces the destination, and the hosts a
`-o ProxyCommand=` or an rsync `-e`/`--rsh` command connects to. `hostname_allowlist` checks
each of them.

The line is split as the shell splits words (`shlex`, quotes removed); a quoted command
(`bash -c '...'`, a remote command, a ProxyCommand) is read again, a few levels deep.
"""

from __future__ import annotations

import re

__all__ = ["TOOLS", "command_hosts"]

TOOLS = frozenset({"ssh", "scp", "sftp", "rsync", "autossh", "mosh", "slogin", "sshfs", "git"})
"""The tools whose targets name hosts; `git` for its scp-like `git@host:repo` form."""
URL_TOOLS = frozenset({"curl", "wget", "http", "https", "xh"})
"""Tools that read a word without a scheme as a URL: `curl intranet/x` is http://intranet/x."""
_URL_VALUE_OPTIONS = frozenset(
    {"-H", "-d", "-o", "-u", "-X", "-A", "-e", "-b", "-c", "-m", "-w", "-T", "-F", "-x", "-K",
     "-E", "-D", "-r", "-Q", "-t", "-Y", "-y", "-z", "-C", "-P", "-U", "-O", "-a", "-i",
     "--data", "--data-raw", "--data-binary", "--data-urlencode", "--header", "--user",
     "--request", "--output", "--max-time", "--connect-timeout", "--resolve", "--cacert",
     "--cert", "--key", "--proxy", "--user-agent", "--referer", "--cookie", "--cookie-jar",
     "--write-out", "--upload-file", "--form", "--config", "--range", "--retry", "--interface",
     "--dns-servers", "--connect-to", "--unix-socket", "--output-document", "--post-data",
     "--tries", "--timeout", "--password", "--auth", "-p", "--print", "--session"}
)  # fmt: skip
_SCHEMELESS = re.compile(
    r"^(?:[^@/\s]+@)?(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::\d{1,5})?(?:[/?#]|$)", re.I
)
_PROXY_TOOLS = frozenset(
    {"nc", "ncat", "netcat", "socat", "connect-proxy", "corkscrew", "proxytunnel"}
)
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "|&", "\n"})
_SSH_VALUE_OPTIONS = frozenset("BbcDEeFIiJLlmOoPpQRSWw")
"""Options of ssh, scp and sftp that take a value (the next word, or the rest of the word)."""
_RSYNC_VALUE_OPTIONS = frozenset(
    {"--rsh", "-e", "--rsync-path", "--port", "--password-file", "--exclude", "--include",
     "--exclude-from", "--include-from", "--files-from", "--filter", "-f", "--log-file",
     "--temp-dir", "-T", "--partial-dir", "--backup-dir", "--suffix", "--chmod", "--timeout",
     "--contimeout", "--bwlimit", "--compare-dest", "--copy-dest", "--link-dest", "--chown",
     "--usermap", "--groupmap", "--address", "--sockopts", "--out-format", "--max-size",
     "--min-size", "--modify-window", "--info", "--debug", "--protocol", "--iconv",
     "--checksum-choice", "--compress-choice", "--compress-level", "--skip-compress"}
)  # fmt: skip
_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?(\[[^\]/]+\]|[^@/:\s\[\]]+):(?!//)")
"""`[user@]host:path` (scp, rsync over ssh, git): the host is before the first colon, with no
slash before it (`./a:b` is a local file)."""
_NAMES = re.compile(
    r"(?<![\w.-])((?:[a-z0-9_-]+\.)+[a-z0-9-]+|\d{1,3}(?:\.\d{1,3}){3})(?![\w-])", re.I
)
_MAX_DEPTH = 4
_PROSE_WORDS = frozenset(
    {"a", "an", "and", "as", "at", "back", "in", "into", "is", "it", "on", "onto", "over",
     "the", "then", "there", "through", "to", "via", "was", "with", "without"}
)  # fmt: skip
"""Words a sentence about ssh puts where a command puts its target (`ssh into the box`)."""


def command_hosts(text: str, depth: int = 0) -> list[str]:
    """The hosts `text` (a command line, or free text holding one) reaches as ssh-like
    targets, lowercased, in order; empty when it names none of `TOOLS`."""
    if depth > _MAX_DEPTH or not any(tool in text for tool in TOOLS | URL_TOOLS):
        return []
    words = _split(text)
    hosts: list[str] = []
    for index, word in enumerate(words):
        tool = word.lstrip("`$(").rsplit("/", 1)[-1]
        if tool in TOOLS:
            args = []
            for arg in words[index + 1 :]:
                if arg in _SEPARATORS:
                    break
                args.append(arg.rstrip("`)") if arg.endswith("`") else arg)
            found = _tool_hosts(tool, args, depth)
            if not _command_position(words, index, word):
                # In prose ("via ssh on vps1") only what looks like a host counts.
                found = [host for host in found if "." in host or "@" in host or ":" in host]
            else:
                # A sentence that starts with the tool ("ssh into the box"): a word of the
                # language, not a machine; a real target has a user, a dot or another name.
                bare = {arg.lower() for arg in args} & _PROSE_WORDS
                found = [host for host in found if host.lower() not in bare]
            hosts += found
        elif tool in URL_TOOLS and _command_position(words, index, word):
            hosts += _url_operands(words[index + 1 :])
        elif " " in word or "\n" in word:
            hosts += command_hosts(word, depth + 1)  # a quoted command: bash -c '...'
        else:
            match = _SCP_LIKE.match(word)
            if match and "@" in word.split(":", 1)[0]:
                hosts.append(match.group(1))  # user@host:path anywhere: git, scp-like forms
    return [_clean(host) for host in dict.fromkeys(hosts) if _clean(host)]


_PREFIXES = frozenset(
    {"sudo", "doas", "env", "exec", "command", "nohup", "time", "nice", "ionice", "timeout",
     "xargs", "then", "do", "else", "watch", "stdbuf", "setsid", "builtin", "!", "{"}
)  # fmt: skip


def _command_position(words: list[str], index: int, word: str) -> bool:
    """True when the word at `index` is where the shell runs a command: first, after a
    separator or a prefix command (`sudo -u deploy`, `timeout 5`, `env A=1`), or opening a
    command substitution."""
    if word.startswith(("`", "$(", "(")):
        return True
    at = index - 1
    while at >= 0:
        previous = words[at]
        if previous in _SEPARATORS or previous.rsplit("/", 1)[-1] in _PREFIXES:
            return True
        option_value = at >= 1 and words[at - 1].startswith("-") and not previous.startswith("-")
        if previous.startswith("-") or "=" in previous or previous[:1].isdigit() or option_value:
            at -= 2 if option_value else 1
            continue
        return False
    return True


def _split(text: str) -> list[str]:
    import shlex

    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: words as they stand
        return text.replace(";", " ; ").split()


def _url_operands(args: list[str]) -> list[str]:
    """The hosts of the words a URL tool reads as URLs without a scheme (`intranet/x`,
    `localhost:9200`); URLs with one are read as URLs wherever they are."""
    hosts: list[str] = []
    skip = False
    for arg in args:
        if arg in _SEPARATORS:
            break
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in _URL_VALUE_OPTIONS
        elif "://" not in arg and (match := _SCHEMELESS.match(arg)):
            hosts.append(match.group(1))
    return hosts


def _clean(host: str) -> str:
    host = host.strip().strip("'\"").lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host if host and not host.startswith("%") else ""


def _tool_hosts(tool: str, args: list[str], depth: int) -> list[str]:
    """The hosts of one simple command of `tool` with its arguments."""
    hosts: list[str] = []
    operands: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            operands += args[index:]
            break
        if tool == "rsync" and arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in _RSYNC_VALUE_OPTIONS and not eq and index < len(args):
                value = args[index]
                index += 1
            if name == "--rsh":
                hosts += _ssh_command_hosts(value, depth)
            continue
        if tool == "git" and not operands and arg.startswith("-"):
            if arg in ("-c", "-C") and index < len(args):
                index += 1
            continue
        if arg.startswith("-") and len(arg) > 1 and tool != "git":
            # Grouped short options: the first that takes a value ends the group.
            for at, letter in enumerate(arg[1:], start=1):
                takes = letter in _SSH_VALUE_OPTIONS or (tool == "rsync" and letter in "eTf")
                if tool == "rsync" and letter not in "eTf":
                    continue
                if takes:
                    value = arg[at + 1 :]
                    if not value and index < len(args):
                        value = args[index]
                        index += 1
                    hosts += _option_hosts(tool, letter, value, depth)
                    break
            continue
        operands.append(arg)
    hosts += _operand_hosts(tool, operands, depth)
    return hosts


def _option_hosts(tool: str, letter: str, value: str, depth: int) -> list[str]:
    if tool == "rsync" and letter == "e":
        return _ssh_command_hosts(value, depth)
    if letter == "J":
        return [_host_of(item) for item in value.split(",") if item.strip()]
    if letter == "o":
        key, _, setting = value.replace("=", " ", 1).partition(" ")
        key = key.strip().lower()
        setting = setting.strip()
        if key == "proxyjump":
            return [_host_of(item) for item in setting.split(",") if item.strip()]
        if key == "hostname":
            return [setting]
        if key in ("proxycommand", "localcommand", "remotecommand"):
            return _proxy_command_hosts(setting, depth)
    return []


def _ssh_command_hosts(command: str, depth: int) -> list[str]:
    """The hosts of an rsync `-e` command (`ssh -J jump -p 22`): its options only."""
    words = _split(command)
    if not words:
        return []
    tool = words[0].rsplit("/", 1)[-1]
    if tool not in TOOLS:
        return []
    options = [word for word in words[1:] if word.startswith("-")]
    hosts: list[str] = []
    index = 1
    while index < len(words):
        word = words[index]
        index += 1
        if word in options and len(word) == 2 and word[1] in _SSH_VALUE_OPTIONS:
            value = words[index] if index < len(words) else ""
            index += 1
            hosts += _option_hosts("ssh", word[1], value, depth)
        elif word.startswith("-") and len(word) > 2 and word[1] in _SSH_VALUE_OPTIONS:
            hosts += _option_hosts("ssh", word[1], word[2:], depth)
    return hosts


def _proxy_command_hosts(command: str, depth: int) -> list[str]:
    """The hosts a ProxyCommand connects to: those of an ssh in it, and every dotted name or
    address in it (`nc evil.at 22`, `socat - TCP:evil.at:22`); `%h` is the destination."""
    hosts = command_hosts(command, depth + 1)
    words = _split(command)
    if words and words[0].rsplit("/", 1)[-1] in _PROXY_TOOLS:
        # `nc gw 22`: a bare name (the dotted ones are found below).
        hosts += [word for word in words[1:] if not word.startswith(("-", "%"))
                  and not word.isdigit() and ":" not in word and "." not in word]  # fmt: skip
    hosts += [match.group(1) for match in _NAMES.finditer(command)]
    return hosts


def _host_of(target: str) -> str:
    """The host of `[user@]host[:port]` or `ssh://[user@]host[:port]/`."""
    target = target.strip()
    if "://" in target:
        target = target.split("://", 1)[1].split("/", 1)[0]
    target = target.rsplit("@", 1)[-1]
    if target.startswith("["):
        return target.split("]", 1)[0] + "]"
    return target.split(":", 1)[0] if target.count(":") <= 1 else target


def _operand_hosts(tool: str, operands: list[str], depth: int) -> list[str]:
    if not operands:
        return []
    if tool in ("ssh", "autossh", "mosh", "slogin", "sftp"):
        first = operands[0]
        hosts = [_host_of(first)]
        if tool == "sftp":
            hosts = [_host_of(first.split(":", 1)[0] if "://" not in first else first)]
        if len(operands) > 1:
            hosts += command_hosts(" ".join(operands[1:]), depth + 1)  # the remote command
        return hosts
    hosts = []
    for operand in operands:  # scp, rsync, sshfs, git: [user@]host:path and host::module
        if "://" in operand:
            hosts.append(_host_of(operand))
            continue
        match = _SCP_LIKE.match(operand)
        if match and (tool != "git" or "@" in operand.split(":", 1)[0]):
            hosts.append(match.group(1))  # git's HEAD:file is no host
    return hosts
