"""Which words of a command line carry a secret, per tool: the command-line secret argument
rules (issue 33, cause 10: `htpasswd -b FILE USER PASS`, `echo 'u:p' | chpasswd`,
`openssl enc -k PASS`, `echo PW | sudo -S`, `aws configure set aws_secret_access_key X`).

A tool's rule reads its arguments as the shell passes them (values after quote removal, with
where each word is in the line) and names the words, or the part of a word, that hold a
secret. A tool that reads a secret from its standard input (`chpasswd`, `sudo -S`,
`docker login --password-stdin`) says so and how the secret sits in each line; `redact_argv`
then finds what the line feeds it (`echo`/`printf` before it in a pipeline, a here-string, a
here-document).

Read by `redact_argv` only, when a command line names one of these tools.
"""

from __future__ import annotations

from agentledger.runner.shell_gate.redact import SECRET_NAME

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "STDIN",
    "TOOLS",
    "Arg",
    "Found",
    "add_found",
    "read_options",
    "secret_name",
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
    return any(part in lowered for part in SECRET_NAME) or lowered in ("pass", "pw", "pwd")


def _usable(value: str | None) -> bool:
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
    if _usable(secret) and secret is not None:
        found.append((arg, secret, kind))


def _positional(found: Found, args: Sequence[Arg], index: int, kind: str = "password-arg") -> None:
    if -len(args) <= index < len(args):
        add_found(found, args[index], args[index].value, kind)


def _pairs(found: Found, args: Sequence[Arg], separator: str = "=") -> None:
    """`KEY=VALUE` words whose key names a secret (vault kv put, rclone config)."""
    for arg in args:
        key, has, value = (arg.value or "").partition(separator)
        if has and secret_name(key):
            add_found(found, arg, value, "secret-pair")


def _after_word(found: Found, args: Sequence[Arg], words: tuple[str, ...]) -> None:
    """The word after any of `words` (`nmcli ... password X`, `mysqladmin password X`)."""
    for index, arg in enumerate(args[:-1]):
        if (arg.value or "").lower() in words:
            add_found(found, args[index + 1], args[index + 1].value, "password-arg")


def _subcommand(args: Sequence[Arg]) -> list[str]:
    return [arg.value or "" for arg in args if not (arg.value or "-").startswith("-")]


_SQL_WORDS = ("password", "identified", "requirepass")


def sql_secrets(text: str) -> list[str]:
    """Passwords in SQL text: `PASSWORD 'x'`, `IDENTIFIED BY 'x'`, `PASSWORD = 'x'`."""
    lowered = text.lower()
    if not any(word in lowered for word in _SQL_WORDS):
        return []
    import re

    pattern = r"(?i)\b(?:password|identified\s+(?:with\s+\w+\s+)?by)\s*(?:=\s*)?E?'((?:[^']|'')+)'"
    return [match.group(1) for match in re.finditer(pattern, text)]


# Each rule: (tool's arguments) -> the secrets found. Tools that read one from stdin are in
# STDIN with the shape of each line.


def _htpasswd(args: Sequence[Arg]) -> Found:
    read = read_options(args, {}, "-C -r")
    if "-b" in read.flags and len(read.positionals) >= 2:
        _positional(read.found, read.positionals, -1)
    return read.found


def _openssl(args: Sequence[Arg]) -> Found:
    shapes = {"-pass": "pass:", "-passin": "pass:", "-passout": "pass:", "-password": "pass:"}
    shapes |= {"-k": "value", "-K": "value", "-kfile": "none", "-macopt": "none"}
    valued = "-in -out -inkey -salt -iv -md -cipher -name -certfile -CAfile -caname -S -engine"
    secret = {k: v for k, v in shapes.items() if v != "none"}
    read = read_options(args[1:], secret, valued, single_dash=True)
    if args and args[0].value == "passwd":
        for arg in read.positionals:
            add_found(read.found, arg, arg.value, "password-arg")
    return read.found


def _aws(args: Sequence[Arg]) -> Found:
    found: Found = []
    read = read_options(args, {}, "--profile --region --output --endpoint-url")
    words = read.positionals
    configure = len(words) >= 4 and [w.value for w in words[:2]] == ["configure", "set"]
    if configure and secret_name((words[2].value or "").rsplit(".", 1)[-1]):
        _positional(found, words, 3, "secret-pair")
    return found


def _mysql(args: Sequence[Arg]) -> Found:
    valued = "-u -h -P -e -D -S --user --host --port --execute --database --socket"
    read = read_options(args, {"-p": "attached", "--password": "attached"}, valued)
    for name in ("-e", "--execute"):
        if name in read.values:
            _sql(read.found, read.values[name])
    for arg in args:
        if (arg.value or "").startswith("--execute="):
            _sql(read.found, arg)
    _after_word(read.found, read.positionals, ("password",))
    return read.found


def _sql(found: Found, arg: Arg) -> None:
    for secret in sql_secrets(arg.value or ""):
        add_found(found, arg, secret, "sql-password")


def _sql_tool(options: str, secret: dict[str, str] | None = None) -> Callable[..., Found]:
    names = options.split()

    def rule(args: Sequence[Arg]) -> Found:
        read = read_options(args, secret or {}, " ".join([*names, "-U", "-h", "-d", "-S"]))
        for name in names:
            if name in read.values:
                _sql(read.found, read.values[name])
        for arg in args:
            if (arg.value or "").startswith(("--command=", "--query=")):
                _sql(read.found, arg)
        for arg in read.positionals:
            for secret_value in _conninfo(arg.value or ""):
                add_found(read.found, arg, secret_value, "connection-password")
        return read.found

    return rule


def _conninfo(text: str) -> list[str]:
    """`password=X` in a libpq connection string."""
    if "password" not in text.lower():
        return []
    import re

    return re.findall(r"(?i)\bpassword\s*=\s*'?([^'\s]+)", text)


def _redis(args: Sequence[Arg]) -> Found:
    read = read_options(args, {"-a": "value", "--pass": "value"}, "-h -p -n -u --user -s -r -i")
    words = read.positionals
    verbs = [(w.value or "").lower() for w in words]
    if verbs[:1] == ["auth"] and len(words) >= 2:
        _positional(read.found, words, -1)
    if verbs[:2] == ["config", "set"] and len(words) >= 4 and secret_name(verbs[2]):
        _positional(read.found, words, 3)
    return read.found


def _simple(secret: dict[str, str], valued: str = "") -> Callable[..., Found]:
    def rule(args: Sequence[Arg]) -> Found:
        return read_options(args, secret, valued).found

    return rule


def _vault(args: Sequence[Arg]) -> Found:
    read = read_options(args, {"-token": "value", "--token": "value"}, "-address -namespace")
    words = read.positionals
    if not words:
        return read.found
    if words[0].value == "login":
        rest = words[1:]
        method = any((w.value or "").startswith(("-method", "--method")) for w in args)
        if rest and not method and "=" not in (rest[0].value or ""):
            _positional(read.found, rest, 0, "vault-token")
        _pairs(read.found, rest)
    elif words[0].value in ("kv", "write", "secrets"):
        _pairs(read.found, words[1:])
    return read.found


def _rabbitmq(args: Sequence[Arg]) -> Found:
    found: Found = []
    words = read_options(args, {}, "-n --node -q").positionals
    verb = words[0].value if words else None
    if verb in ("add_user", "change_password", "authenticate_user") and len(words) >= 3:
        _positional(found, words, 2)
    return found


def _mc(args: Sequence[Arg]) -> Found:
    """`mc alias set NAME URL ACCESS SECRET`, `mc config host add NAME URL ACCESS SECRET`."""
    found: Found = []
    words = read_options(args, {}, "--config-dir -C --api --path").positionals
    verbs = [w.value for w in words[:3]]
    if verbs[:2] == ["alias", "set"]:
        _positional(found, words, 5)
    elif verbs == ["config", "host", "add"]:
        _positional(found, words, 6)
    return found


def _after(words: tuple[str, ...], index: int) -> Callable[..., Found]:
    """The positional `index` after the subcommand words `words` (`bw unlock PW`)."""

    def rule(args: Sequence[Arg]) -> Found:
        found: Found = []
        positionals = read_options(args, {}, "--session").positionals
        if tuple(arg.value for arg in positionals[: len(words)]) == words:
            _positional(found, positionals[len(words) :], index)
        return found

    return rule


def _nmcli(args: Sequence[Arg]) -> Found:
    found: Found = []
    _after_word(found, args, ("password", "wifi-sec.psk", "802-11-wireless-security.psk"))
    return found


def _wpa_passphrase(args: Sequence[Arg]) -> Found:
    found: Found = []
    _positional(found, read_options(args, {}).positionals, 1)
    return found


def _freerdp(args: Sequence[Arg]) -> Found:
    found: Found = []
    for arg in args:
        value = arg.value or ""
        for prefix in ("/p:", "/password:", "/gp:", "/gateway-password:", "-p:"):
            if value.lower().startswith(prefix):
                add_found(found, arg, value[len(prefix) :], "password-arg")
    return found


def _sqlplus(args: Sequence[Arg]) -> Found:
    found: Found = []
    for arg in read_options(args, {}, "-M -R").positionals[:1]:
        add_found(found, arg, shaped("user/pass", arg.value), "password-arg")
    return found


def _rclone(args: Sequence[Arg]) -> Found:
    found: Found = []
    words = read_options(args, {}, "--config").positionals
    verbs = [w.value for w in words]
    if verbs[:1] == ["obscure"]:
        _positional(found, words, 1)
    if verbs[:2] in (["config", "create"], ["config", "update"]):
        rest = words[2:]
        for index, arg in enumerate(rest[:-1]):
            if secret_name(arg.value or "") or (arg.value or "").endswith(("_key", "key")):
                add_found(found, rest[index + 1], rest[index + 1].value, "secret-pair")
        _pairs(found, rest)
    return found


def _bw(args: Sequence[Arg]) -> Found:
    found: Found = []
    words = read_options(args, {"--passwordenv": "none"}, "--session --method --code").positionals
    verbs = [w.value for w in words]
    if verbs[:1] == ["unlock"]:
        _positional(found, words, 1)
    if verbs[:1] == ["login"]:
        _positional(found, words, 2)
    return found


def _user_tool(args: Sequence[Arg]) -> Found:
    valued = "-c -d -e -f -g -G -k -K -s -u -L -R -P -Z -b --home --shell --comment --uid --gid"
    return read_options(args, {"-p": "value", "--password": "value"}, valued).found


def _curl(args: Sequence[Arg]) -> Found:
    shapes = {"-u": "user:pass", "--user": "user:pass", "-U": "user:pass"}
    shapes |= {"--proxy-user": "user:pass", "-E": "user:pass", "--cert": "user:pass"}
    shapes |= {"--oauth2-bearer": "value", "--pass": "value", "--proxy-pass": "value"}
    valued = "-H -d -o -X -x -A -e -T -F -b -c -m -w --data --header --output --request --proxy"
    return read_options(args, shapes, valued).found


def _expect(args: Sequence[Arg]) -> Found:
    found: Found = []
    import re

    pattern = (
        r"(?is)expect\s+\S*(?:assword|assphrase|pin)\S*\s*[;\n]?\s*send\s+(?:--\s+)?\"([^\"]*)\""
    )
    for arg in args:
        for secret in re.findall(pattern, arg.value or ""):
            add_found(found, arg, secret.removesuffix("\\r").removesuffix("\\n"), "password-arg")
    return found


_MYSQL = ("mysql", "mysqldump", "mysqladmin", "mariadb", "mariadb-dump", "mysqlimport")
TOOLS: dict[str, Callable[[Sequence[Arg]], Found]] = {
    "htpasswd": _htpasswd,
    "openssl": _openssl,
    "aws": _aws,
    **dict.fromkeys(_MYSQL, _mysql),
    "mysqlcheck": _mysql,
    "psql": _sql_tool("-c --command"),
    "sqlcmd": _sql_tool("-Q -q", {"-P": "value"}),
    "clickhouse-client": _sql_tool("-q --query", {"--password": "value"}),
    "redis-cli": _redis,
    "valkey-cli": _redis,
    "sshpass": _simple({"-p": "value"}, "-f -d -P"),
    "wget": _simple(
        dict.fromkeys(
            ("--password", "--http-password", "--ftp-password", "--proxy-password"), "value"
        )
    ),
    "curl": _curl,
    "smbclient": _simple({"-U": "user%pass", "--user": "user%pass", "--password": "value"}),
    "rpcclient": _simple({"-U": "user%pass", "--user": "user%pass"}),
    "lftp": _simple({"-u": "user,pass", "--user": "user,pass"}, "-e -p -c"),
    "mosquitto_pub": _simple({"-P": "value", "--pw": "value"}, "-h -p -u -t -m -i -q"),
    "mosquitto_sub": _simple({"-P": "value", "--pw": "value"}, "-h -p -u -t -i -q"),
    "ipmitool": _simple({"-P": "value", "-k": "value", "-y": "value"}, "-I -H -U -p -L -f"),
    "ssh-keygen": _simple({"-P": "value", "-N": "value"}, "-t -b -f -C -E -a -Z -O -n -I"),
    "rdesktop": _simple({"-p": "value"}, "-u -d -g -a -k -r"),
    "mongo": _simple({"-p": "value", "--password": "value"}, "-u --username --host"),
    "mongosh": _simple({"-p": "value", "--password": "value"}, "-u --username --host"),
    "ldappasswd": _simple({"-w": "value", "-s": "value", "-a": "value"}, "-D -H -h -b"),
    "vault": _vault,
    "rabbitmqctl": _rabbitmq,
    "mc": _mc,
    "nmcli": _nmcli,
    "wpa_passphrase": _wpa_passphrase,
    "xfreerdp": _freerdp,
    "xfreerdp3": _freerdp,
    "wlfreerdp": _freerdp,
    "sqlplus": _sqlplus,
    "rclone": _rclone,
    "bw": _bw,
    "useradd": _user_tool,
    "usermod": _user_tool,
    "expect": _expect,
    "snmpwalk": _simple({"-A": "value", "-X": "value", "-c": "value"}, "-v -u -l -a -x -O -r -t"),
    "kubectl": _simple({"--token": "value", "--password": "value"}, "-n -o -l --context"),
    "oc": _simple({"--token": "value", "--password": "value", "-p": "value"}, "-n -o -u"),
}
for _tool in ("snmpget", "snmpset", "snmpbulkwalk", "snmpgetnext", "snmptable", "snmptrap"):
    TOOLS[_tool] = TOOLS["snmpwalk"]
for _tool in ("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldapwhoami", "ldapmodrdn"):
    TOOLS[_tool] = _simple({"-w": "value"}, "-D -H -h -b -s -f")

STDIN: dict[str, Callable[[Sequence[Arg]], str | None]] = {}
"""Tools that read a secret from standard input, given their arguments: the shape of each
line (``line``: the whole line, ``user:pass``, ``ftp``: `user NAME PASS` lines), or None when
these arguments read no secret."""


def _always(shape: str) -> Callable[[Sequence[Arg]], str | None]:
    return lambda args: shape


def _when_flag(flags: tuple[str, ...], shape: str = "line") -> Callable[..., str | None]:
    def reads(args: Sequence[Arg]) -> str | None:
        for arg in args:
            value = arg.value or ""
            if value in flags or (
                value[:1] == "-"
                and value[1:2] != "-"
                and any(f[1:] in value[1:] for f in flags if len(f) == 2)
            ):
                return shape
        return None

    return reads


def _passwd(args: Sequence[Arg]) -> str | None:
    status = {"-S", "--status", "-l", "--lock", "-u", "--unlock", "-d", "--delete", "-e", "-a"}
    return None if any(arg.value in status for arg in args) else "line"


def _login_stdin(args: Sequence[Arg]) -> str | None:
    values = [arg.value for arg in args]
    if "--password-stdin" in values:
        return "line"
    if values[:2] == ["secret", "create"] and values[-1:] == ["-"]:
        return "line"
    return None


def _openssl_stdin(args: Sequence[Arg]) -> str | None:
    values = [arg.value for arg in args]
    for index, value in enumerate(values[:-1]):
        if value in ("-pass", "-passin", "-passout", "-password") and values[index + 1] == "stdin":
            return "line"
    return None


STDIN.update(
    {
        "chpasswd": _always("user:pass"),
        "chgpasswd": _always("user:pass"),
        "passwd": _passwd,
        "smbpasswd": _when_flag(("-s",)),
        "sudo": _when_flag(("-S", "--stdin")),
        "htpasswd": _when_flag(("-i",)),
        "cryptsetup": _always("line"),
        "docker": _login_stdin,
        "podman": _login_stdin,
        "nerdctl": _login_stdin,
        "buildah": _login_stdin,
        "skopeo": _login_stdin,
        "helm": _login_stdin,
        "oras": _login_stdin,
        "gh": _when_flag(("--with-token",)),
        "vault": lambda args: "line" if any(a.value == "-" for a in args[:3]) else None,
        "openssl": _openssl_stdin,
        "ftp": _always("ftp"),
        "sftp": _always("ftp"),
        "rdesktop": lambda args: "line" if any(a.value == "-" for a in args) else None,
    }
)
