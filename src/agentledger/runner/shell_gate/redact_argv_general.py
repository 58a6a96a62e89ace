"""Secrets on a command line whatever its tool: the general layer beside the per-tool rules
of `redact_argv_rules` (issue 33, cause 10: "of new kinds at most 5%").

A per-tool table leaks what it does not name: each fresh set of cases written before its
rules left about half of them in the log. This layer reads any command, its name known or not
(`$TOOL`, `/opt/x/bin/tool`, `"$(command -v mysql)"`), by what the words say:

- an option whose name says secret (`--password`, `-ApiKey`, `--client_secret=`,
  `-PossrhPassword=`, `-auth`, `--community`): the name is split into words (dashes,
  underscores, dots, camelCase) and its LAST word decides. A secret noun there (`password`,
  `pass`, `pwd`, `secret`, `token`, `api key`, `private key`, `auth`, `credentials`,
  `cookie`, `session`, `signature`, `community`, or a word ending in one: `smtppass`) holds a
  secret; a qualifier there (`--password-file`, `--token-url`, `--auth-type`,
  `--secret-name`, `--token-ttl`, `--passwd-length`) names where or what the secret is, and
  the value is left. A bare `key` takes only a value that looks like a key;
- `user:password` in a user option (`-u u:pw`, `--user=u:pw`) and in any word `u:pw@host`;
  `-u USER -p PASS` of a tool no rule names, when PASS is not a number, a port or a word;
- a secret-named key given its value as the next word after `set`/`config`
  (`git config sendemail.smtppass X`, `dotnet user-secrets set Db:Password X`), after
  `--arg`-like options (`jq --arg token X`), and a verb that names it
  (`neo4j-admin dbms set-initial-password X`);
- a stored parameter's `--value` when the command names a secret (`--type SecureString`,
  `--name /app/db/password`, `gh secret set`); any tool's `--*password*-stdin` option makes
  each line it is fed a secret;
- in every word, here-document and here-string, code, SQL and request bodies
  (`redact_argv_code.payload_secrets`: `password='x'`, `"apiKey": "x"`, `passwd=x&`,
  `IDENTIFIED BY 'x'`, `crypt('x')`, `connect(dsn, user, 'x')`).

Values that only refer to a secret are left: variables (`$PW`, `${PW}`, `$(cmd)`),
placeholders (`<password>`, `[value]`, `XXXXXX`), paths, URLs and names such as
`db-password`.
"""

from __future__ import annotations

from agentledger.runner.shell_gate.redact_argv_options import Arg, Found, add_found, usable
from agentledger.runner.shell_gate.redact_decode import _Lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Sequence


__all__ = [
    "candidate",
    "general_secrets",
    "name_says_secret",
    "payload_words",
    "placeholder",
    "qualified",
    "reads_secret_input",
    "words_of",
]

_STRONG = frozenset((
    "password", "passwd", "passphrase", "pass", "pwd", "pw", "secret", "token", "apikey",
    "credential", "credentials", "creds", "cred", "psk", "jwt", "passcode", "sessionid",
    "authtoken", "accesstoken", "sessiontoken", "secretkey", "privatekey", "accesskey",
    "authtok", "bindpw", "rootpw",
))  # fmt: skip
"""Last words of a name that hold a secret."""
_WEAK = frozenset(("auth", "authorization", "cookie", "session", "signature", "community"))
"""Last words that hold a secret unless the value is a plain word (`--auth basic`)."""
_ENDINGS = ("password", "passwd", "passphrase", "pass", "pwd", "secret", "token", "apikey")
"""A last word ending in one of these holds a secret (`smtppass`, `storepass`, `dbpassword`)."""
_NOT_ENDINGS = ("bypass", "compass", "askpass", "nopass", "surpass", "trespass", "encompass")
_KEY_KINDS = frozenset((
    "api", "private", "access", "secret", "auth", "client", "signing", "encryption", "master",
    "session", "account", "storage", "shared", "sas", "consumer", "license", "app", "admin",
    "hmac", "webhook", "write", "read", "root", "service", "deploy", "integration", "x",
    "preshared", "unseal", "recovery", "gossip",
))  # fmt: skip
"""Words before `key` that make it a secret key (`--api-key`, `--secret_access_key`)."""
_QUALIFIERS = frozenset((
    "file", "files", "path", "paths", "dir", "directory", "url", "uri", "urls", "endpoint",
    "host", "server", "type", "kind", "name", "names", "id", "ids", "arn", "ttl", "length",
    "len", "size", "min", "max", "count", "env", "var", "fd", "stdin", "cmd", "command",
    "helper", "prompt", "mode", "method", "format", "source", "backend", "provider", "expired",
    "expires", "expiry", "expiration", "lifetime", "age", "days", "timeout", "duration",
    "validity", "policy", "required", "enabled", "disabled", "enable", "disable", "header",
    "location", "prefix", "suffix", "label", "version", "algorithm", "algo", "field", "column",
    "attr", "attribute", "scope", "audience", "issuer", "user", "username", "login", "role",
    "ref", "regex", "pattern", "template", "jar", "domain", "store", "manager", "hash",
    "hashed", "stdout", "output", "input", "out", "in", "flag", "option", "reset", "change",
    "changed", "list", "level", "strength", "complexity", "history", "hint", "check",
    "mount", "volume", "cache", "service", "plugin", "index", "provided", "set", "mask",
))  # fmt: skip
"""Last words of a name whose value says where or what the secret is, not the secret."""
_VALUE_WORDS = frozenset(("value", "string", "text", "plain", "plaintext", "literal", "data"))
"""Last words that mean the value of the name before them (`--secret-string X`)."""
_FLAG_WORDS = frozenset((
    "ask", "no", "show", "hide", "skip", "prompt", "generate", "random", "use", "print", "with",
    "without", "allow", "enable", "disable", "require", "read", "from",
))  # fmt: skip
"""First words of an option that is a switch about a secret, not one that takes it."""
_PLAIN_VALUES = frozenset((
    "true", "false", "yes", "no", "on", "off", "none", "null", "nil", "basic", "digest",
    "bearer", "ntlm", "negotiate", "kerberos", "oauth", "oauth2", "oidc", "plain", "login",
    "md5", "sha1", "sha256", "sha512", "password", "token", "secret", "required", "optional",
    "prompt", "ask", "stdin", "env", "file", "default", "auto", "any", "all", "jwt", "saml",
    "ldap", "local", "cert", "tls", "ssl", "scram-sha-256", "userpass", "approle", "aws",
    "github", "iam", "keyfile", "session", "cookie", "header", "query", "form", "json",
))  # fmt: skip
_USER_OPTIONS = frozenset(("-u", "-U", "--user", "--proxy-user", "--basic-auth", "--creds"))
_CONTAINERS = frozenset((
    "docker", "podman", "nerdctl", "buildah", "crictl", "ctr", "runc", "crun", "lxc", "incus",
    "kubectl", "oc", "systemd-run", "systemd-nspawn", "bwrap", "unshare", "setpriv",
))  # fmt: skip
"""Tools whose `-u X:Y` is a user and a group."""
_PAIR_USER = frozenset(("-u", "-U", "-l", "--user", "--username", "--login"))
_PAIR_PASS = frozenset(("-p", "-P"))
_VALUE_OPTIONS = frozenset((
    "--value", "--body", "--secret-value", "--string-value", "--content", "--data-value",
))  # fmt: skip
"""Options that give the value of a stored parameter or secret (see `_stores_a_secret`)."""
_NAME_OPTIONS = frozenset(("--name", "-n", "--id", "--parameter-name", "--path"))
_SECRET_STORES = frozenset(("secret", "secrets", "password", "passwords", "token", "tokens"))
_SET_VERBS = frozenset(("set", "config", "configure", "put", "add", "set-value", "setx"))
_ARG_OPTIONS = frozenset((
    "--arg", "--argjson", "-var", "--var", "--env", "--set", "--set-string", "--define",
    "--param", "--parameter", "--property", "--build-arg", "--extra-var", "--secret-env",
))  # fmt: skip
"""Options that take a name and, as the next word, its value (`jq --arg token X`)."""
_VERB_NAMING_IT = (
    r"(?:set|reset|change|update|new|init|initial)[-_]?(?:[a-z]+[-_])?"
    r"(?:password|passwd|passphrase|secret|token)"
)


def words_of(name: str) -> list[str]:
    """The words of a name: `--secret_access_key` -> secret, access, key; `ossrhPassword`
    -> ossrh, password; `X-Api-Token` -> x, api, token."""
    import re

    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name.lstrip("-$@:."))
    return [word for word in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if word]


def name_says_secret(name: str) -> str | None:
    """Whether a variable, option or key called `name` holds a secret by its name: "strong",
    "weak" (unless its value is a plain word), "key" (only a value that looks like a key),
    or None."""
    words = words_of(name)
    while len(words) > 1 and words[-1] in _VALUE_WORDS:
        words.pop()
    if not words or (len(words) > 1 and words[0] in _FLAG_WORDS):
        return None  # --ask-pass, --no-password, --show-token
    last = words[-1]
    if last in _QUALIFIERS:
        return None
    if last in _STRONG:
        return "strong"
    if last in _WEAK:
        return "weak"
    if last in ("key", "keys", "encrypt", "encryption"):  # consul's `-encrypt=KEY`
        if len(words) > 1 and words[-2] in _KEY_KINDS:
            return "strong"
        return "key"
    if last.endswith(_ENDINGS) and not last.endswith(_NOT_ENDINGS):
        return "strong"
    return None


def qualified(name: str) -> bool:
    """True when the last word of `name` says where or what a secret is (`TOKEN_URL`)."""
    words = words_of(name)
    return bool(words) and words[-1] in _QUALIFIERS


def placeholder(value: str) -> bool:
    """A value that stands for a secret rather than being one: a variable or command
    substitution, `<password>`, `[value]`, `{{ x }}`, `XXXXXX`, `***`, `...`."""
    import re

    return bool(
        re.fullmatch(
            r"\$.*|.*\$[({A-Za-z_].*|<[^<>]*>|\[[^\[\]]*\]|\{\{.*\}\}|%\(.*|[Xx*.]{3,}|"
            r"%[-+ #0-9.]*[sdqbiuxX](?:\\[nr])*|"
            r"(?:your|my|the|some|new)[-_]?(?:password|passwd|pass|secret|token|key)\w*",
            value,
            re.DOTALL,
        )
    )


def candidate(value: str | None, strength: str = "strong") -> bool:
    """A value worth redacting for a name of `strength` (see `name_says_secret`)."""
    if not value or not usable(value) or placeholder(value):
        return False
    lowered = value.lower()
    if lowered.startswith(("http://", "https://", "s3://", "gs://", "arn:", "secret://")):
        return False
    if _names_a_secret(lowered) or _FILE_NAME.get().fullmatch(lowered):
        return False
    if strength == "weak":
        return lowered not in _PLAIN_VALUES and not value.isdigit() and len(value) >= 4
    if strength == "key":
        return _looks_like_key(value)
    return True


_NAMING_WORDS = _Lazy("pass|secret|token")
_FILE_NAME = _Lazy(
    r"[\w./~-]*\.(?:ya?ml|json|txt|conf|cfg|ini|toml|xml|env|pem|key|crt|cer|p12|pfx|jks|kdbx|"
    r"gpg|asc|sh|py|js|log|csv|db|sqlite|jar|cookies?)"
)


def _names_a_secret(lowered: str) -> bool:
    """`db-password`, `prod/api_token`: a name of a secret, not a secret."""
    import re

    return bool(
        re.fullmatch(r"[a-z0-9]+(?:[-_./][a-z0-9]+)*", lowered)
        and re.search(
            r"(?:^|[-_./])(?:password|passwd|secret|token|key|creds?)(?:$|[-_./])", lowered
        )
    )


def _looks_like_key(value: str) -> bool:
    """A run of 24 or more key characters holding letters and digits."""
    import re

    return bool(
        re.fullmatch(r"[A-Za-z0-9+/=_-]{24,}", value)
        and re.search(r"[0-9]", value)
        and re.search(r"[A-Za-z]", value)
        and value.count("/") < 2
    )


def _mixed(value: str) -> bool:
    """A password-like word: two kinds of characters of letters (either case), digits and
    others, not a number, port, address or list of them."""
    import re

    if re.fullmatch(r"[\d.:,\[\]a-fA-F/-]*\d[\d.:,\[\]a-fA-F/-]*(?:/(?:tcp|udp|sctp))?", value):
        return False
    kinds = sum(
        bool(re.search(pattern, value)) for pattern in ("[a-z]", "[A-Z]", "[0-9]", "[^A-Za-z0-9]")
    )
    return kinds >= 2 and len(value) >= 4 and value.lower() not in _PRIORITIES


_PRIORITIES = frozenset(("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"))


def general_secrets(
    name: str | None, args: Sequence[Arg], raw: Callable[[Arg], str] | None = None
) -> Found:
    """The secrets of one simple command, its tool `name` (None when only known at run time),
    found by what its words say (see the module's text); `raw` gives a word as typed, read
    for code when its value is only known at run time (`"$p = ConvertTo-SecureString 'x'"`)."""
    found: Found = []
    typed = " ".join(arg.value or (raw(arg) if raw is not None else "") for arg in args).lower()
    if not _may_hold(typed):
        return found
    from agentledger.runner.shell_gate.redact_argv_code import payload_found

    tool = (name or "").rsplit("/", 1)[-1]
    index = 0
    positionals: list[Arg] = []
    users = False
    values: list[tuple[Arg, str]] = []
    names: list[tuple[Arg, str]] = []
    while index < len(args):
        arg = args[index]
        index += 1
        word = arg.value
        if word is None:
            if raw is not None:
                payload_found(found, arg, raw(arg))
            continue
        payload_found(found, arg, word)
        _user_at_host(found, arg, word)
        nxt = args[index] if index < len(args) else None
        if not word.startswith("-") or word in ("-", "--"):
            positionals.append(arg)
            continue
        option, has_value, value = word.partition("=")
        if option in _USER_OPTIONS or (option == "-a" and tool in ("http", "https", "xh")):
            taken = value if has_value else (nxt.value if nxt is not None else None)
            holder = arg if has_value else nxt
            if option in _PAIR_USER and taken and not taken.startswith("-"):
                users = True
            if holder is not None and taken and tool not in _CONTAINERS:
                _user_colon(found, holder, taken)
            continue
        if option in _PAIR_USER:
            users = users or bool(
                has_value or (nxt is not None and nxt.value and nxt.value[:1] != "-")
            )
            continue
        if option in _PAIR_PASS and users and tool not in _CONTAINERS:
            taken = value if has_value else (nxt.value if nxt is not None else None)
            holder = arg if has_value else nxt
            if holder is not None and taken and _mixed(taken) and usable(taken):
                add_found(found, holder, taken, "password-flag")
            continue
        if option in _ARG_OPTIONS and not has_value and nxt is not None and index + 1 < len(args):
            if "=" not in (nxt.value or "") and name_says_secret(nxt.value or "") == "strong":
                after = args[index + 1]
                if candidate(after.value):
                    add_found(found, after, after.value, "secret-pair")
            continue
        if option in _VALUE_OPTIONS or option in _NAME_OPTIONS:
            taken = value if has_value else (nxt.value if nxt is not None else None)
            holder = arg if has_value else nxt
            if holder is not None and taken is not None:
                (values if option in _VALUE_OPTIONS else names).append((holder, taken))
            continue
        if len(option.lstrip("-")) < 2:
            continue
        strength = name_says_secret(option)
        if strength is None:
            continue
        holder = arg if has_value else nxt
        taken = value if has_value else (nxt.value if nxt is not None else None)
        if holder is None or taken is None or (not has_value and taken.startswith("-")):
            continue
        if not has_value:
            index += 1
        user_value = words_of(option)[-1] in ("auth", "cred", "creds", "credentials", "basic")
        if user_value and ":" in taken and not taken.startswith(("http:", "https:")):
            _user_colon(found, holder, taken)
        elif candidate(taken, strength):
            add_found(found, holder, taken, "secret-flag")
    _positional_secrets(found, positionals)
    if values and _stores_a_secret(typed, names, positionals):
        for holder, taken in values:
            if candidate(taken):
                add_found(found, holder, taken, "secret-value")
    return found


def reads_secret_input(args: Sequence[Arg]) -> str | None:
    """ "line" when an option of any tool says it reads a secret from standard input
    (`--password-stdin`, `--passwd-on-stdin`, `--token-from-stdin`): each line it is fed is
    one; None otherwise."""
    for arg in args:
        value = arg.value or ""
        if value.startswith("--") and "stdin" in value:
            words = [word for word in words_of(value) if word not in ("stdin", "on", "from")]
            if words and name_says_secret("-".join(words)) in ("strong", "weak", "key"):
                return "line"
    return None


def _stores_a_secret(typed: str, names: list[tuple[Arg, str]], positionals: Sequence[Arg]) -> bool:
    """A command that stores its `--value` as a secret: `--type SecureString`, a `--name`
    that names a secret (`/app/db/password`), or a `secret` subcommand (`gh secret set`)."""
    if "securestring" in typed:
        return True
    for _, name in names:
        if name_says_secret(name.rstrip("/").rsplit("/", 1)[-1]) in ("strong", "key"):
            return True
    return any((arg.value or "").lower() in _SECRET_STORES for arg in positionals[:3])


def _may_hold(typed: str) -> bool:
    """False when the words `typed` (lowered, joined) hold no name that says secret, no
    `user:password` and no `-p` beside a user: most commands."""
    if payload_words().search(typed):
        return True
    import re

    users = re.search(r"(?<!\S)(?:-[ul]|--user)", typed) is not None
    if ":" in typed and ("@" in typed or users or "-a" in typed):
        return True
    return users and re.search(r"(?<!\S)-p", typed) is not None


def _user_colon(found: Found, holder: Arg, value: str) -> None:
    """`user:password` given to a user option: the password (not `uid:gid`, not `u:u`);
    samba's `DOMAIN\\user%password` too."""
    import re

    samba = re.fullmatch(r"[\w.\\/@-]+%(?![-+ #0-9.]*[sdq]$)(\S+)", value)
    if samba is not None and candidate(samba.group(1)):
        add_found(found, holder, samba.group(1), "basic-auth")
        return
    if not re.fullmatch(r"[\w.@\\/+-]+:\S+", value):
        return  # `date -u +%H:%M`, `ss -u 'dport == :443'`
    user, _, secret = value.partition(":")
    if secret.isdigit() or secret == user or "@" in secret[:1]:
        return
    secret = secret.split("@", 1)[0] if "@" in secret and "/" not in user else secret
    if candidate(secret):
        add_found(found, holder, secret, "basic-auth")


def _user_at_host(found: Found, arg: Arg, word: str) -> None:
    """`user:password@host` in a word without a scheme (`impacket 'DOM/u:p@h'`)."""
    if "@" not in word or ":" not in word or "://" in word:
        return
    import re

    match = re.search(r"(?:^|[\s=/\\])[\w.+-]+:(?P<secret>[^\s@:/]+)@[\w-]+(?:\.[\w-]+)*", word)
    if match is None:
        return
    secret = match.group("secret")
    host = word[match.end("secret") + 1 :]
    if host.lower().startswith(("sha256", "sha512", "sha1", "sha384")) or secret.isdigit():
        return
    if candidate(secret):
        add_found(found, arg, secret, "url-password")


def _positional_secrets(found: Found, positionals: Sequence[Arg]) -> None:
    """`set KEY VALUE` where KEY names a secret; a verb that names one before its value."""
    import re

    values = [(arg.value or "") for arg in positionals]
    lowered = [value.lower() for value in values]
    verb = next((index for index, value in enumerate(lowered) if value in _SET_VERBS), len(values))
    for index, value in enumerate(values[:-1]):
        setting = index > verb
        namespace = _AUTH_NAMESPACES.get(lowered[index].split(".", 1)[0]) if setting else None
        if namespace and "." in value and index + namespace < len(values):
            after = positionals[index + namespace]  # `config http-basic.REPO USER PASS`
            if candidate(after.value):
                add_found(found, after, after.value, "secret-pair")
                continue
        if setting and "=" not in value and name_says_secret(value.rsplit(":", 1)[-1]) == "strong":
            after = positionals[index + 1]
            if candidate(after.value) and not lowered[index].startswith(("-", "/")):
                add_found(found, after, after.value, "secret-pair")
                continue
        naming = _NAMING_WORDS.get().search(lowered[index])
        if naming and re.fullmatch(_VERB_NAMING_IT, lowered[index]):
            rest = positionals[index + 1 : index + 3]
            after = rest[-1]
            if after.value and _mixed(after.value) and candidate(after.value):
                add_found(found, after, after.value, "password-arg")


_AUTH_NAMESPACES = {
    "http-basic": 2, "bearer": 1, "github-oauth": 1, "gitlab-token": 1, "gitlab-oauth": 1,
    "bitbucket-oauth": 2, "pypi-token": 1, "forgejo-token": 1,
}  # fmt: skip
"""Setting keys `NAMESPACE.REPOSITORY` that take credentials (composer, poetry, pdm), and
which value after the key is the secret (`http-basic.R USER PASS`: the second)."""


_PAYLOAD_WORDS = (
    "pass", "pw", "secret", "token", "key", "auth", "cred", "cookie", "-session", "session=",
    "session:", "session'", 'session"', "sessionid", "signature", "community", "identified",
    "crypt", "hash", "connect", "mysqli", "pdo", "login(", "psk", "securestring", "http-basic",
)  # fmt: skip
_words_pattern: list[re.Pattern[str]] = []


def payload_words() -> re.Pattern[str]:
    """Finds any of `_PAYLOAD_WORDS` (one search, not one `in` per word)."""
    if not _words_pattern:
        import re

        _words_pattern.append(re.compile("|".join(map(re.escape, _PAYLOAD_WORDS))))
    return _words_pattern[0]
