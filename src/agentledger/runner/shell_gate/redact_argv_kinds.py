"""Command-line secret rules for tools the first table did not name (issue 33, cause 10:
"of new kinds at most 5%"): database and Cassandra clients (`cqlsh -p`, `bcp -P`,
`isql DSN USER PASS`), package registries (`cargo login TOKEN`, `twine -p`,
`poetry config http-basic.R USER PASS`), PuTTY's `-pw`, `racadm -p`, `winexe -U u%p`,
Kerberos' `kadmin -w` and the `-pw` of its `-q` script, `wpa_cli ... psk`, `ccrypt -K`,
`grafana-cli admin reset-admin-password PW`, `doctl -t`, then the blind part's kinds:
`nodetool -pw`, `tsql -P`, `skopeo --creds`, `npm config set ..._authToken`,
`iwconfig IF key s:PASS`. Merged into
`redact_argv_rules.TOOLS`; the corpus they were written from is
tests/data/secrets/cmdline_kinds_cases.jsonl.
"""

from __future__ import annotations

import re

from agentledger.runner.shell_gate.redact_argv_options import (
    Arg,
    Found,
    add_found,
    after_word,
    positional,
    read_options,
    secret_name,
    simple_rule,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["KINDS"]


def _isql(args: Sequence[Arg]) -> Found:
    """unixODBC's `isql [options] DSN [USER [PASSWORD]]` (its valued options are attached)."""
    read = read_options(args, {}, "")
    positional(read.found, read.positionals, 2)
    return read.found


def _cargo(args: Sequence[Arg]) -> Found:
    """`cargo login [TOKEN]`, `cargo publish --token TOKEN`."""
    read = read_options(args, {"--token": "value"}, "--registry --index --config -Z --color")
    if [arg.value for arg in read.positionals[:1]] == ["login"]:
        positional(read.found, read.positionals, 1, "token-arg")
    return read.found


def _poetry(args: Sequence[Arg]) -> Found:
    """`poetry config http-basic.REPO USER PASS`, `poetry config pypi-token.REPO TOKEN`."""
    found: Found = []
    words = read_options(args, {}, "-C --directory -P --project").positionals
    if [arg.value for arg in words[:1]] != ["config"] or len(words) < 3:
        return found
    key = words[1].value or ""
    if key.startswith("http-basic."):
        positional(found, words, 3)
    elif key.startswith("pypi-token."):
        positional(found, words, 2, "token-arg")
    return found


_KADMIN_SCRIPT = re.compile(r"(?:^|\s)-(?:pw|password)\s+(['\"]?)([^'\"\s]+)\1")


def _kadmin(args: Sequence[Arg]) -> Found:
    """`kadmin -w PASS`, and `-pw PASS` in the request of `-q` (`addprinc`, `cpw`)."""
    valued = "-p -k -t -c -r -s -x -e -m -d -q --query"
    read = read_options(args, {"-w": "value"}, valued)
    for name in ("-q", "--query"):
        script = read.values.get(name)
        if script is not None:
            for match in _KADMIN_SCRIPT.finditer(script.value or ""):
                add_found(read.found, script, match.group(2), "password-arg")
    return read.found


_WPA_SECRET = ("psk", "password", "sae_password", "wep_key0", "wep_key1", "wep_key2", "wep_key3")


def _wpa_cli(args: Sequence[Arg]) -> Found:
    """`wpa_cli [-i IF] set_network ID psk '"PASS"'` (and `password`, `wep_keyN`)."""
    found: Found = []
    words = read_options(args, {}, "-i -p -P -g -G -a").positionals
    verbs = [(arg.value or "").lower() for arg in words]
    if verbs[:1] == ["set_network"] and len(words) >= 4 and verbs[2] in _WPA_SECRET:
        value = words[3].value
        add_found(found, words[3], value.strip('"') if value else value, "password-arg")
    return found


def _grafana(args: Sequence[Arg]) -> Found:
    found: Found = []
    words = read_options(args, {}, "--homepath --config --pluginsDir --repo --pluginUrl")
    after_word(found, words.positionals, ("reset-admin-password",))
    return found


def _npm_config(args: Sequence[Arg]) -> Found:
    """`npm config set //REGISTRY/:_authToken TOKEN` (or `KEY=VALUE`), and yarn's, pnpm's."""
    found: Found = []
    words = read_options(args, {}, "--location -g --userconfig").positionals
    if [arg.value for arg in words[:2]] != ["config", "set"]:
        return found
    for index, arg in enumerate(words[2:], 2):
        key, has, value = (arg.value or "").partition("=")
        name = key.rsplit(":", 1)[-1]
        if not (secret_name(name) or name.lower().endswith("_auth")):
            continue
        if has:
            add_found(found, arg, value, "token-arg")
        else:
            positional(found, words, index + 1, "token-arg")
    return found


def _iwconfig(args: Sequence[Arg]) -> Found:
    """`iwconfig IF key s:PASS` (or a hex key); `key off`, `key open`, `key [2]` hold none."""
    found: Found = []
    for index, arg in enumerate(args[:-1]):
        value = args[index + 1].value or ""
        plain = value in ("off", "on", "open", "restricted") or value.startswith("[")
        if arg.value in ("key", "enc") and not plain:
            add_found(found, args[index + 1], value.removeprefix("s:"), "password-arg")
    return found


def _security(args: Sequence[Arg]) -> Found:
    """macOS `security add-generic-password ... -w PASS` (and add-internet-password)."""
    if not args or not (args[0].value or "").startswith("add-"):
        return []
    return read_options(args[1:], {"-w": "value"}, "-a -s -r -l -c -C -D -j -T -U -G -k").found


def _oathtool(args: Sequence[Arg]) -> Found:
    """`oathtool [--totp] [-b] KEY [OTP]`: the first positional is the shared secret."""
    read = read_options(args, {}, "-d --digits -w --window -s --time-step-size -S -N -c")
    words = [arg for arg in read.positionals if arg.value != "-"]
    positional(read.found, words[:1], 0, "otp-secret")
    return read.found


_TDS = {"-P": "value", "--password": "value"}
_PUTTY = simple_rule({"-pw": "value"}, "-P -l -i -m -D -L -R -hostkey -proxycmd -sercfg -pwfile")

KINDS: dict[str, Callable[[Sequence[Arg]], Found]] = {
    "cqlsh": simple_rule(
        {"-p": "value", "--password": "value"},
        "-u --username -k --keyspace -e --execute -f --file --cqlversion --encoding",
    ),
    "isql": _isql,
    "bcp": simple_rule(_TDS, "-S -U -d -f -e -F -L -b -a -t -r -h -i -o -m -q -C"),
    "sqsh": simple_rule(_TDS, "-S -U -D -i -o -e -c -h -m -w"),
    "twine": simple_rule(
        {"-p": "value", "--password": "value"},
        "-u --username -r --repository --repository-url -c --comment -i --identity "
        "--sign-with --config-file --cert --client-cert",
    ),
    "cargo": _cargo,
    "poetry": _poetry,
    "doctl": simple_rule({"-t": "value", "--access-token": "value"}, "-c --config --context -o"),
    "kadmin": _kadmin,
    "kadmin.local": _kadmin,
    "plink": _PUTTY,
    "pscp": _PUTTY,
    "psftp": _PUTTY,
    "racadm": simple_rule({"-p": "value"}, "-r -u -i -c -o -g -f"),
    "wpa_cli": _wpa_cli,
    "grafana-cli": _grafana,
    "ccrypt": simple_rule({"-K": "value", "--key": "value"}, "-k --keyfile -S --suffix -H"),
    "mcrypt": simple_rule({"-k": "value", "--key": "value"}, "-f -a -m -o -s -h"),
    "tsql": simple_rule(_TDS, "-S -H -p -U -D -I -o -v -t -r"),
    "freebcp": simple_rule(_TDS, "-S -U -d -f -e -F -L -b -t -r -h -i -o -c"),
    "nodetool": simple_rule(
        {"-pw": "value", "--password": "value"},
        "-u --username -h --host -p --port -pwf --password-file",
    ),
    "skopeo": simple_rule(
        dict.fromkeys(("--creds", "--src-creds", "--dest-creds"), "user:pass")
        | {"--password": "value", "-p": "value"},
        "-u --username --authfile --src-authfile --dest-authfile",
    ),
    "npm": _npm_config,
    "yarn": _npm_config,
    "pnpm": _npm_config,
    "iwconfig": _iwconfig,
    "winexe": simple_rule({"-U": "user%pass", "--user": "user%pass", "--password": "value"}),
    "ab": simple_rule(
        {"-A": "user:pass", "-P": "user:pass"}, "-n -c -t -s -b -B -T -p -u -v -g -e -H -C -X -E"
    ),
    "security": _security,
    "oathtool": _oathtool,
}
