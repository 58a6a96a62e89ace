"""The ops contexts detect-secrets does not cover, as redaction rules: passwords in URLs and
connection strings, ``curl -u user:pass``, authorization and API-key headers, cookies,
secret-looking flags and the short password flags of the tools that have them, environment
assignments and config lines, docker's ``auth``, private key blocks of every kind, and key
shapes the library lacks. Read only when the rule table is built (`redact.rule_table`, cached
after), so the gate's start-up does not pay for them."""

from __future__ import annotations

__all__ = ["OPS_RULES"]

_SECRET_WORDS = (
    r"password|passwd|passphrase|secret|token|api[-_]?key|apikey|access[-_]?key|"  # noqa: S105
    r"private[-_]?key|client[-_]?secret|client[-_]?key[-_]?data|credentials?|accountkey|"
    r"sharedaccesskey|auth[-_]?key|authkey|session[-_]?key|signing[-_]?key|encryption[-_]?key|"
    r"master[-_]?key|webhook[-_]?url|(?<=[_.])pwd|preshared[-_]?key|authtok"
)
# A shell word: quoted and unquoted pieces up to a blank (`'a b'`, `x'"'y`, `"$P"w`). Only
# the first piece may hold blanks: in `'A=x' 'B=y'` the quote after x closes, not opens.
_WORD = r"(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"])(?:'[^'\s]*'|\"[^\"\s]*\"|[^\s'\"])*"
_VALUE = r"(?P<secret>(?![-<>|&;])" + _WORD + ")"
"""An option's value: not another option, nor a redirection or operator that follows a flag
(`gh auth login --with-token <<< X`)."""
_QUOTED_OR_WORD = r"(?P<secret>" + _WORD + ")"
_NOT_PLACEHOLDER = r"(?!\$[({A-Za-z_0-9]|<|\[|X{6,}(?![A-Za-z0-9]))"
"""Not a variable (`$2`, `${P}`, `$(cmd)`), a `<placeholder>`, `[PASSWORD]` or `XXXXXX`."""
_COMMAND_LINE = r"(?:[^\n|;&]|\\\r?\n)"
"""A character of a command's words up to a pipe or a list, `\\<newline>` continuations
included."""


_QUALIFIERS = (
    "stdin", "file", "fd", "path", "env", "url", "uri", "type", "name", "id", "ttl", "length",
    "len", "size", "dir", "helper", "cmd", "command", "prompt", "expiry", "expires", "expired",
    "timeout", "header", "version", "format", "mode", "method", "policy", "arn", "count", "min",
    "max", "days", "age", "source", "endpoint", "host", "server",
)  # fmt: skip
"""Last words of a name that say where or what the secret is (`--token-url`,
`secret_id_ttl`, `password_expired`): its value is not the secret."""


def _not_qualified(separators: str) -> str:
    """Lookbehinds that refuse a name ending in one of the qualifiers after `separators`."""
    return "".join(f"(?<![{separators}]{word})" for word in _QUALIFIERS)


_NOT_CODE_OR_MASK = (
    r"\"\$[{A-Za-z_(]|\*{3,}(?![^\s,;'\"}&])|"
    r"(?-i:(?:os|process|settings|config|conf|cfg|self|this|env|app|request|params|args|"
    r"options|opts|ctx|context|secrets|vars|values)\.[A-Za-z_])|"
    r"(?-i:[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)*+[\[(][\"'A-Za-z_)])|"
    r"(?-i:(?:[A-Za-z_]\w*+\.)++[A-Z][A-Z0-9_]*+)(?![^\s,;'\"}&])"
)
"""Values of an assignment that refer to a secret: a variable in double quotes (`"$(cat F)"`;
in single quotes `'$x'` is the text), a mask
(`********`), code that reads it (`os.environ["API_KEY"]`, `getenv('X')`,
`settings.API_KEY`, `process.env.TOKEN`)."""


_NOT_A_REFERENCE = (
    r"(?![\"']?\$[({A-Za-z_]|[\"']?<[^<>\s]*>|[\"']?\[[\w -]*\]|"
    r"(?-i:[a-z0-9]+[-_./])*(?-i:password|passwd|secret|token|key|creds?)(?-i:[-_./][a-z0-9]+)*"
    r"(?![^\s'\"]))"
)
"""Not a variable (`"$PW"`), a placeholder (`<password>`, `[value]`) or the name of a secret
(`db-password`, `prod/api_token`)."""


_FLAG_WORDS = (
    r"(?:ask|no|show|hide|skip|prompt|generate|random|use|print|with|without|allow|enable|"
    r"disable|require|read|from)"
)
"""First words of an option that is a switch about a secret (`--ask-pass`, `--no-password`,
`--show-token=false`), not one that takes it."""
_NOT_A_FILE = (
    r"(?![\w./~-]*\.(?:ya?ml|json|txt|conf|cfg|ini|toml|xml|env|pem|key|crt|cer|p12|pfx|jks|"
    r"kdbx|gpg|asc|sh|py|js|log|csv|db|sqlite|jar|cookies?)(?![^\s'\"]))"
)
"""Not a file name (`--ask-pass site.yml`, `curl -b cookies.txt`)."""
_NOT_A_PORT = r"(?![\d.:\[\]]+(?:/(?:tcp|udp|sctp))?(?![^\s'\"]))"
"""Not a port mapping (`docker run -p 8080:80`, `-p 127.0.0.1:53:53/udp`)."""


def _command(tools: str, span: str = r"[^\n|;&]") -> str:
    """One of `tools` (an alternation) and its words up to the option that follows: never
    past another of `tools`, so that a line of many (`https://u:p@` a thousand times) is
    searched in linear time, not from each to the line's end."""
    return r"\b(?:" + tools + r")\b(?:(?!\b(?:" + tools + r")\b)" + span + r")*?"


# (kind, pattern, flags: i = ignore case, s = dot matches newline). Order matters: blocks and
# contexts first, so that a key inside them is reported with its context.
OPS_RULES: tuple[tuple[str, str, str], ...] = (
    (
        "private-key",
        # any armored block whose label says private or secret, OpenVPN's static keys too
        r"-----BEGIN (?P<label>[A-Za-z0-9 ]*(?:PRIVATE KEY(?: BLOCK)?|SECRET KEY|PGP MESSAGE|"
        r"[Ss]tatic [Kk]ey V\d))-----(?P<secret>.*?)(?:-----END (?P=label)-----|\Z)",
        "s",
    ),
    (
        "private-key",
        r"---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----(?P<secret>.*?)"
        r"(?:---- END SSH2 ENCRYPTED PRIVATE KEY ----|\Z)",
        "s",
    ),
    ("private-key", r"PuTTY-User-Key-File-\d+:(?P<secret>.*?)(?:Private-MAC: \S+|\Z)", "s"),
    ("age-secret-key", r"(?P<secret>AGE-SECRET-KEY-1[0-9A-Z]{50,})", ""),
    # the user may hold an `@` (`smtp://alerts@corp.example:PASS@host`)
    ("url-password", r"\b[a-z][a-z0-9+.-]*://[^\s/:'\"]*:(?P<secret>[^\s@/'\"]+)@", "i"),
    # a key as a URL's user (a Sentry DSN, `https://TOKEN@git.example`)
    ("url-token", r"\b[a-z][a-z0-9+.-]*://(?P<secret>[A-Za-z0-9_-]{24,})@", "i"),
    (
        "basic-auth",
        _command("curl|wget|http|https|xh|grpcurl", _COMMAND_LINE)
        + r"\s(?:-u|--user|-U|--proxy-user)(?:\s+|=)?['\"]?(?!<)[^\s:'\"]*['\"]?:['\"]?"
        r"(?P<secret>" + _NOT_PLACEHOLDER + r"[^\s'\"]+)",
        "",
    ),
    (
        # `-u "secret:"`: a token given as the user, the password left empty (gitleaks)
        "basic-auth",
        _command("curl|wget|http|https|xh|grpcurl", _COMMAND_LINE)
        + r"\s(?:-u|--user)(?:\s+|=)?(?P<q>['\"])(?P<secret>[^\s:'\"]{6,}):(?P=q)",
        "",
    ),
    (
        # an OAuth client id of key length (gitleaks' generic rule counts it)
        "client-id",
        r"client[-_]?id[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9_-]{32,})",
        "i",
    ),
    (
        "auth-header",
        r"\b(?:proxy-)?authorization(?>\s*[:=]\s*(?:bearer|basic|token|digest|negotiate|"
        r"aws4-hmac-sha256|sso-key)?\s*)(?P<secret>"
        + _NOT_PLACEHOLDER
        + r"[^\s'\"]{6,}(?:[ ,][^\s'\"]+)*)",
        "i",
    ),
    ("bearer-token", r"\bbearer\s+(?P<secret>(?!X{6,}(?![A-Za-z0-9]))[A-Za-z0-9._~+/=-]{6,})", "i"),
    (
        "api-key-header",
        r"(?:api[-_]?key|apikey|token|secret|session)\s*:\s*"
        r"(?P<secret>(?!\$[{(A-Za-z_]|\*{3,}(?![^\s'\"]))[^\s'\"]{6,})",
        "i",
    ),
    ("cookie", r"\b(?:set-)?cookie\s*:\s*(?P<secret>[^\r\n'\"]+)", "i"),
    (
        "cookie",
        _command("curl") + r"\s(?:-b|--cookie)(?:\s+|=)" + _NOT_A_FILE + _QUOTED_OR_WORD,
        "",
    ),
    ("docker-auth", r"\"(?:auth|identitytoken|registrytoken)\"\s*:\s*\"(?P<secret>[^\"]+)\"", ""),
    ("openssl-pass", r"\bpass:(?P<secret>[^\s'\"]+)", ""),
    (
        "password-flag",
        _command("docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|az|cf")
        + r"\s(?:-p|--password|--secret)(?:\s+|=)"
        + _NOT_A_PORT
        + _QUOTED_OR_WORD,
        "",
    ),
    ("password-flag", r"\bsshpass\b(?:\s+-[a-oq-z]\S*)*\s+-p\s*" + _QUOTED_OR_WORD, ""),
    (
        "password-flag",
        _command("mysql|mysqldump|mysqladmin|mariadb|mariadb-dump|mysqlimport|mysqlcheck")
        + r"\s-p(?P<secret>[^\s'\"]+)",
        "",
    ),
    (
        "password-flag",
        _command("mongo|mongosh|mongodump|mongorestore") + r"\s-p\s+" + _QUOTED_OR_WORD,
        "",
    ),
    ("password-flag", _command("redis-cli") + r"\s(?:-a|--pass)\s+" + _QUOTED_OR_WORD, ""),
    ("password-flag", _command("ldap[a-z]*") + r"\s-w\s*" + _QUOTED_OR_WORD, ""),
    ("password-flag", _command("zip|unzip") + r"\s-P\s+" + _QUOTED_OR_WORD, ""),
    ("password-flag", _command("7za?") + r"\s-p(?P<secret>[^\s'\"]+)", ""),
    (
        "password-flag",
        _command("smbclient") + r"\s-U\s*['\"]?[^\s%'\"]+%(?P<secret>[^\s'\"]+)",
        "",
    ),
    ("password-flag", r"(?<![\w-])-(?:src|dest|new)?(?:store|key)pass\s+" + _QUOTED_OR_WORD, ""),
    (
        "secret-flag",
        # not `--password-stdin HOST`, `--password-file F`, `--passphrase-fd 0`: the option
        # says where the secret is, its value is not it
        r"(?<![\w-])--?(?!"
        + _FLAG_WORDS
        + r"[-_])[a-z0-9_-]*(?:"
        + _SECRET_WORDS
        + r")[a-z0-9_-]*"
        + _not_qualified("_-")
        + r"(?:=|\s+)"
        + _NOT_A_REFERENCE
        + _NOT_A_FILE
        + r"(?!(?:yes|no|true|false)(?![^\s'\"]))"
        + _VALUE,
        "i",
    ),
    (
        "secret-assignment",
        r"(?:"
        + _SECRET_WORDS
        + r")[a-z0-9_.]*"
        + _not_qualified("_.")
        + r"\]?(?:\s+(?:string|str|const))?\\?[\"']?\s*"
        r"(?>(?::{1,3}=|=>|[?+.]=|[:=]))\s*"
        r"(?P<secret>(?!"
        + _NOT_CODE_OR_MASK
        + r"|\$\{|\{\{|\$[A-Za-z_(]|<[^<>\s]*>|\[[\w -]*\](?![^\s,;'\"}&])|"
        r"%[-+ #0-9.]*[sdqbiuxX](?:\\[nr])*(?![^\s,;'\"}&])|"
        r"(?:yes|no|true|false|on|off|none|null)(?![^\s,;'\"}&])|''(?![^\s,;'\"}&])|\"\"(?![^\s,;'\"}&])|"
        r"[|>][-+0-9]*[ \t]*(?:\n|\Z)|"
        r"(?-i:[a-z0-9]+[-_./])*(?-i:password|passwd|secret|token|key|creds?)"
        r"(?-i:[-_./][a-z0-9]+)*(?![^\s,;'\"}&])|"
        r"(?-i:(?:/[a-z0-9_.-]+)+/?)(?![^\s,;'\"}&])|"
        r"[0-9]{1,4}(?![^\s,;'\"}&]))"
        r"(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s,;'\"}&])"
        r"(?:'[^'\s]*'|\"[^\"\s]*\"|[^\s,;'\"}&])*)",
        "i",
    ),
    ("connection-password", r"(?<![\w/])(?:pwd|password)\s*=\s*(?P<secret>(?!/)[^;'\"\s]+)", "i"),
    # Oracle's thin JDBC URL names the user and password before the host
    ("connection-password", r"\bjdbc:oracle:\w+:[^/\s:@'\"]+/(?P<secret>[^@\s'\"]+)@", "i"),
    # a webhook whose path ends in its token (Mattermost, Rocket.Chat, Gitea, ...)
    (
        "webhook-token",
        r"\bhttps?://[^\s/'\"]+(?:/[^\s/'\"?#]+)*?/(?:hooks|webhooks?)/(?:[\w-]{1,24}/)??"
        r"(?P<secret>(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{20,})",
        "i",
    ),
    (
        "signed-url",
        r"[?&](?:sig|signature|x-amz-signature|x-goog-signature)=(?P<secret>[^&\s'\"]+)",
        "i",
    ),
    (
        "aws-access-key",
        r"\b(?P<secret>(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA|ABIA|ACCA)"
        r"[A-Z0-9]{16})\b",
        "",
    ),
    ("github-token", r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{20,})", ""),
    ("github-token", r"\b(?P<secret>github_pat_[A-Za-z0-9_]{20,})", ""),
    (
        "gitlab-token",
        r"\b(?P<secret>gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas|rrt|ffct)-"
        r"[A-Za-z0-9_-]{20,})",
        "",
    ),
    ("anthropic-key", r"(?<![\w-])(?P<secret>sk-ant-[A-Za-z0-9_-]{16,})", ""),
    ("openai-key", r"(?<![\w-])(?P<secret>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,})", ""),
    ("stripe-key", r"\b(?P<secret>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})", ""),
    ("stripe-webhook-secret", r"\b(?P<secret>whsec_[A-Za-z0-9+/=]{16,})", ""),
    ("slack-token", r"\b(?P<secret>xox[abposrec]-[A-Za-z0-9-]{10,})", ""),
    (
        "slack-webhook",
        r"(?P<secret>https://hooks\.slack\.com/(?:services|workflows|triggers)/\S+)",
        "i",
    ),
    (
        "discord-webhook",
        r"(?P<secret>https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\S+)",
        "i",
    ),
    ("teams-webhook", r"(?P<secret>https://[\w.-]+\.webhook\.office\.com/\S+)", "i"),
    ("google-api-key", r"\b(?P<secret>AIza[0-9A-Za-z_-]{35})", ""),
    (
        "google-oauth",
        r"\b(?P<secret>GOCSPX-[A-Za-z0-9_-]{20,}|ya29\.[0-9A-Za-z_-]{20,}|"
        r"1//0[0-9A-Za-z_-]{30,})",
        "",
    ),
    ("jwt", r"\b(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)", ""),
    ("npm-token", r"\b(?P<secret>npm_[A-Za-z0-9]{36})\b", ""),
    ("pypi-token", r"\b(?P<secret>pypi-[A-Za-z0-9_-]{50,})", ""),
    ("vault-token", r"\b(?P<secret>hv[sbr]\.[A-Za-z0-9_-]{20,})", ""),
    ("huggingface-token", r"\b(?P<secret>hf_[A-Za-z0-9]{30,})\b", ""),
    ("digitalocean-token", r"\b(?P<secret>do[opr]_v1_[a-f0-9]{64})\b", ""),
    ("sendgrid-key", r"\b(?P<secret>SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,})", ""),
    (
        "azure-client-secret",
        r"(?<![\w~.-])(?P<secret>[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34})",
        "",
    ),
    (
        "azure-sas",
        r"\b(?:SharedAccessSignature|sv=\d{4}-\d\d-\d\d&)\S*?sig=(?P<secret>[^&\s'\"]+)",
        "i",
    ),
    ("docker-pat", r"\b(?P<secret>dckr_pat_[A-Za-z0-9_-]{20,})", ""),
    ("shopify-token", r"\b(?P<secret>shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})\b", ""),
    ("atlassian-token", r"\b(?P<secret>ATATT3[A-Za-z0-9_=-]{50,})", ""),
    ("grafana-token", r"\b(?P<secret>gl(?:sa|c)_[A-Za-z0-9_=+/-]{32,})", ""),
    ("databricks-token", r"\b(?P<secret>dapi[a-f0-9]{32}(?:-\d)?)\b", ""),
    ("linear-key", r"\b(?P<secret>lin_api_[A-Za-z0-9]{40})\b", ""),
    ("postman-key", r"\b(?P<secret>PMAK-[a-f0-9]{24}-[a-f0-9]{34})\b", ""),
    ("newrelic-key", r"\b(?P<secret>NRAK-[A-Z0-9]{27})\b", ""),
    ("sentry-token", r"\b(?P<secret>sntry[su]_[A-Za-z0-9_=+/-]{30,})", ""),
    ("doppler-token", r"\b(?P<secret>dp\.(?:st|ct|sa|scim|audit)\.[A-Za-z0-9_.-]{30,})", ""),
    ("terraform-token", r"\b(?P<secret>[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,})", ""),
    ("pulumi-token", r"\b(?P<secret>pul-[a-f0-9]{40})\b", ""),
    ("mailgun-key", r"\b(?P<secret>key-[a-f0-9]{32})\b", ""),
    ("twilio-key", r"\b(?P<secret>SK[a-f0-9]{32})\b", ""),
)
