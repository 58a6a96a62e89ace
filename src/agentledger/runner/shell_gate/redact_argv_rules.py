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

from agentledger.runner.shell_gate.redact_argv_kinds import KINDS
from agentledger.runner.shell_gate.redact_argv_options import (
    Arg,
    Found,
    add_found,
    after_word,
    pairs,
    positional,
    read_options,
    secret_name,
    shaped,
    simple_rule,
    sql_secrets,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["STDIN", "TOOLS"]


# Each rule: (tool's arguments) -> the secrets found. Tools that read one from stdin are in
# STDIN with the shape of each line.


def _htpasswd(args: Sequence[Arg]) -> Found:
    read = read_options(args, {}, "-C -r")
    if "-b" in read.flags and len(read.positionals) >= 2:
        positional(read.found, read.positionals, -1)
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
        positional(found, words, 3, "secret-pair")
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
    after_word(read.found, read.positionals, ("password",))
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
        positional(read.found, words, -1)
    if verbs[:2] == ["config", "set"] and len(words) >= 4 and secret_name(verbs[2]):
        positional(read.found, words, 3)
    return read.found


def _vault(args: Sequence[Arg]) -> Found:
    valued = "-address -namespace -path -format -field -ca-cert -client-cert -client-key"
    read = read_options(args, {"-token": "value", "--token": "value"}, valued)
    words = read.positionals
    if not words:
        return read.found
    if words[0].value == "login":
        rest = words[1:]
        method = any((w.value or "").startswith(("-method", "--method")) for w in args)
        if rest and not method and "=" not in (rest[0].value or ""):
            positional(read.found, rest, 0, "vault-token")
        pairs(read.found, rest)
    elif words[0].value in ("kv", "write", "secrets"):
        pairs(read.found, words[1:])
    if words[0].value in ("login", "write"):
        # AppRole's `secret_id=` is the credential (elsewhere `*_id` names a secret)
        for arg in words[1:]:
            if (arg.value or "").startswith("secret_id="):
                add_found(read.found, arg, (arg.value or "")[10:], "secret-pair")
    if [arg.value for arg in words[:2]] == ["operator", "unseal"]:
        positional(read.found, words, 2, "vault-unseal-key")  # a key share
    return read.found


def _rabbitmq(args: Sequence[Arg]) -> Found:
    found: Found = []
    words = read_options(args, {}, "-n --node -q").positionals
    verb = words[0].value if words else None
    if verb in ("add_user", "change_password", "authenticate_user") and len(words) >= 3:
        positional(found, words, 2)
    return found


def _mc(args: Sequence[Arg]) -> Found:
    """`mc alias set NAME URL ACCESS SECRET`, `mc config host add NAME URL ACCESS SECRET`."""
    found: Found = []
    words = read_options(args, {}, "--config-dir -C --api --path").positionals
    verbs = [w.value for w in words[:3]]
    if verbs[:2] == ["alias", "set"]:
        positional(found, words, 5)
    elif verbs == ["config", "host", "add"]:
        positional(found, words, 6)
    return found


def _after(words: tuple[str, ...], index: int) -> Callable[..., Found]:
    """The positional `index` after the subcommand words `words` (`bw unlock PW`)."""

    def rule(args: Sequence[Arg]) -> Found:
        found: Found = []
        positionals = read_options(args, {}, "--session").positionals
        if tuple(arg.value for arg in positionals[: len(words)]) == words:
            positional(found, positionals[len(words) :], index)
        return found

    return rule


def _nmcli(args: Sequence[Arg]) -> Found:
    found: Found = []
    after_word(found, args, ("password", "wifi-sec.psk", "802-11-wireless-security.psk"))
    return found


def _wpa_passphrase(args: Sequence[Arg]) -> Found:
    found: Found = []
    positional(found, read_options(args, {}).positionals, 1)
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


def _oracle(args: Sequence[Arg]) -> Found:
    """`expdp user/pass@db ...`, `rman target sys/pass@db`: any word shaped user/pass."""
    found: Found = []
    for arg in read_options(args, {}, "").positionals:
        if "=" not in (arg.value or ""):
            add_found(found, arg, shaped("user/pass", arg.value), "password-arg")
    return found


def _rclone(args: Sequence[Arg]) -> Found:
    found: Found = []
    words = read_options(args, {}, "--config").positionals
    verbs = [w.value for w in words]
    if verbs[:1] == ["obscure"]:
        positional(found, words, 1)
    if verbs[:2] in (["config", "create"], ["config", "update"]):
        rest = words[2:]
        for index, arg in enumerate(rest[:-1]):
            if secret_name(arg.value or "") or (arg.value or "").endswith(("_key", "key")):
                add_found(found, rest[index + 1], rest[index + 1].value, "secret-pair")
        pairs(found, rest)
    return found


def _bw(args: Sequence[Arg]) -> Found:
    found: Found = []
    words = read_options(args, {"--passwordenv": "none"}, "--session --method --code").positionals
    verbs = [w.value for w in words]
    if verbs[:1] == ["unlock"]:
        positional(found, words, 1)
    if verbs[:1] == ["login"]:
        positional(found, words, 2)
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


def _hash_maker(flag: str) -> Callable[..., Found]:
    """`mosquitto_passwd -b FILE USER PASS`: the last positional when `flag` is given."""

    def rule(args: Sequence[Arg]) -> Found:
        read = read_options(args, {}, "-c -U -H -I")
        if flag in read.flags and len(read.positionals) >= 2:
            positional(read.found, read.positionals, -1)
        return read.found

    return rule


def _mkpasswd(args: Sequence[Arg]) -> Found:
    """`mkpasswd [-m METHOD] [-S SALT] PASSWORD [SALT]`: the first positional."""
    read = read_options(args, {}, "-m -S -R -P --method --salt --rounds --password-fd")
    if not {"-s", "--stdin"} & read.flags:
        positional(read.found, read.positionals, 0)
    return read.found


def _net(args: Sequence[Arg]) -> Found:
    """`net rpc password USER NEWPASS -U admin%PASS`."""
    read = read_options(args, {"-U": "user%pass", "--user": "user%pass"}, "-S -I -W -p -w")
    verbs = [arg.value for arg in read.positionals[:2]]
    if verbs[1:] == ["password"] or verbs[:1] == ["password"]:
        positional(read.found, read.positionals, 3 if verbs[1:] == ["password"] else 2)
    return read.found


def _lftp(args: Sequence[Arg]) -> Found:
    """`lftp -u user,pass`, and `open -u user,pass` / `user NAME PASS` in its `-e`/`-c`
    script."""
    read = read_options(args, {"-u": "user,pass", "--user": "user,pass"}, "-e -c -p -f")
    import re

    for name in ("-e", "-c"):
        script = read.values.get(name)
        if script is None or not script.value:
            continue
        for match in re.finditer(r"(?:-u\s+[^,\s;]+,|\buser\s+\S+\s+)([^\s;'\"]+)", script.value):
            add_found(read.found, script, match.group(1), "password-flag")
    return read.found


_PIN = {"-P": "value", "--pin": "value", "-n": "value", "--new-pin": "value", "--puk": "value"}
_PIN |= {"-m": "value", "--management-key": "value", "--new-puk": "value", "-p": "value"}


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
    "sshpass": simple_rule({"-p": "value"}, "-f -d -P"),
    "wget": simple_rule(
        dict.fromkeys(
            ("--password", "--http-password", "--ftp-password", "--proxy-password"), "value"
        )
    ),
    "curl": _curl,
    "smbclient": simple_rule({"-U": "user%pass", "--user": "user%pass", "--password": "value"}),
    "rpcclient": simple_rule({"-U": "user%pass", "--user": "user%pass"}),
    "mosquitto_pub": simple_rule({"-P": "value", "--pw": "value"}, "-h -p -u -t -m -i -q"),
    "mosquitto_sub": simple_rule({"-P": "value", "--pw": "value"}, "-h -p -u -t -i -q"),
    "ipmitool": simple_rule({"-P": "value", "-k": "value", "-y": "value"}, "-I -H -U -p -L -f"),
    "ssh-keygen": simple_rule({"-P": "value", "-N": "value"}, "-t -b -f -C -E -a -Z -O -n -I"),
    "rdesktop": simple_rule({"-p": "value"}, "-u -d -g -a -k -r"),
    "mongo": simple_rule({"-p": "value", "--password": "value"}, "-u --username --host"),
    "mongosh": simple_rule({"-p": "value", "--password": "value"}, "-u --username --host"),
    "ldappasswd": simple_rule({"-w": "value", "-s": "value", "-a": "value"}, "-D -H -h -b"),
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
    **dict.fromkeys(("expdp", "impdp", "exp", "imp", "rman", "sqlldr", "dgmgrl"), _oracle),
    "bw": _bw,
    "useradd": _user_tool,
    "usermod": _user_tool,
    "expect": _expect,
    "snmpwalk": simple_rule(
        {"-A": "value", "-X": "value", "-c": "value"}, "-v -u -l -a -x -O -r -t"
    ),
    "kubectl": simple_rule({"--token": "value", "--password": "value"}, "-n -o -l --context"),
    "oc": simple_rule({"--token": "value", "--password": "value", "-p": "value"}, "-n -o -u"),
    "mosquitto_passwd": _hash_maker("-b"),
    "mkpasswd": _mkpasswd,
    "slappasswd": simple_rule({"-s": "value"}, "-h -c -n -T"),
    "doveadm": simple_rule({"-p": "value"}, "-s -u -r -c -o"),
    "unrar": simple_rule({"-p": "attached"}),
    "rar": simple_rule({"-p": "attached", "-hp": "attached"}),
    "net": _net,
    "lftp": _lftp,
    "ykman": simple_rule(_PIN, "--device -d"),
    "pkcs11-tool": simple_rule(
        {"--pin": "value", "-p": "value", "--so-pin": "value", "--new-pin": "value"},
        "--module -O -d --id -a --label -y --type",
    ),
    "az": simple_rule(
        {"--account-key": "value", "--password": "value", "-p": "value", "--sas-token": "value"},
        "-g -n -c --account-name --resource-group --name --container-name -o --query",
    ),
    "etcdctl": simple_rule(
        {"--user": "user:pass", "--password": "value"}, "--endpoints --cacert --cert --key"
    ),
    "rabbitmqadmin": simple_rule(
        {"-p": "value", "--password": "value"}, "-u -H -P -V --username --host --port --vhost"
    ),
}
TOOLS.update(KINDS)
for _tool in ("snmpget", "snmpset", "snmpbulkwalk", "snmpgetnext", "snmptable", "snmptrap"):
    TOOLS[_tool] = TOOLS["snmpwalk"]
for _tool in ("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldapwhoami", "ldapmodrdn"):
    TOOLS[_tool] = simple_rule({"-w": "value"}, "-D -H -h -b -s -f")

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


def _keytab(args: Sequence[Arg]) -> bool:
    """`kinit -k`, `kinit -t KEYTAB`: the key is in a file, the input is not read."""
    return any((a.value or "")[:1] == "-" and {"k", "t"} & set((a.value or "")[1:]) for a in args)


def _gpg_stdin(args: Sequence[Arg]) -> str | None:
    """`gpg --passphrase-fd 0`: the first line of its input is the passphrase."""
    values = [arg.value for arg in args]
    if "--passphrase-fd=0" in values or any(
        value == "--passphrase-fd" and values[index + 1] == "0"
        for index, value in enumerate(values[:-1])
    ):
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
        "kinit": lambda args: None if _keytab(args) else "line",
        "vncpasswd": _when_flag(("-f",)),
        "mkpasswd": _when_flag(("-s", "--stdin")),
        "gpg": _gpg_stdin,
        "gpg2": _gpg_stdin,
        "openconnect": _when_flag(("--passwd-on-stdin",)),
    }
)
