"""Write secrets_new_kinds.jsonl (issue 33): secrets of kinds and in shapes the first corpus
(tests/test_gate_secrets.py) lacks. Its companion secrets_benign.txt, written by hand, holds
ordinary ops output that must come through unchanged.

    python tests/data/make_secrets_corpus.py     # writes beside this file

Each row of secrets_new_kinds.jsonl: {"kind", "text" (what the command printed or was given),
"secret" (what must not reach the log), "pieces" (parts of it that must not either: a key
folded over lines leaks when one line of it does)}.
"""

from __future__ import annotations

import base64
import json
import random
import string
import textwrap
from pathlib import Path

R = random.Random(33)
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
LOWER = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def pick(alphabet: str, size: int) -> str:
    return "".join(R.choice(alphabet) for _ in range(size))


def password() -> str:
    return pick(string.ascii_letters, 1) + pick(ALNUM + "!#%^*_+-.", R.randint(10, 18))


def key_body(lines: int = 5) -> str:
    return "\n".join(pick(B64, 64) for _ in range(lines)) + "\n" + pick(B64, 24) + "=="


def pem(label: str) -> str:
    return f"-----BEGIN {label}-----\n{key_body()}\n-----END {label}-----\n"


def jwt() -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    claims = {"sub": pick(HEX, 12), "iat": R.randint(10**9, 2 * 10**9), "role": "admin"}
    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.{pick(URLSAFE, 86)}"


ROWS: list[dict[str, object]] = []


def add(kind: str, text: str, secret: str, pieces: list[str] | None = None) -> None:
    ROWS.append({"kind": kind, "text": text, "secret": secret, "pieces": pieces or [secret]})


# --- context rules: assignments and files that hold passwords ---------------------------------
for name in (
    "DB_PASS",
    "MYSQL_ROOT_PASS",
    "REDIS_PASS",
    "SMTP_PASS",
    "ADMIN_PASSWORD",
    "POSTGRES_PASSWORD",
    "RABBITMQ_DEFAULT_PASS",
    "LDAP_BIND_PW",
    "DB_PWD",
    "PASS",
):
    s = password()
    add(
        f"assignment-{name}",
        R.choice(["{n}={s}", "export {n}={s}", "{n}='{s}'", "  - {n}={s}"]).format(n=name, s=s),
        s,
    )
for _ in range(4):
    s = password()
    add("netrc", f"machine api.internal login deploy password {s}", s)
    s = password()
    add("netrc-multiline", f"machine git.internal\n  login ci\n  password {s}\n", s)
for _ in range(4):
    s = password()
    add("pgpass", f"db.internal:5432:app:app_user:{s}", s)
s = password()
add("pgpass", f"*:*:*:postgres:{s}", s)
for tag in ("password", "Password", "pass", "secret", "adminPassword"):
    s = password()
    add(f"xml-{tag}", f"<{tag}>{s}</{tag}>", s)
s = password()
add("xml-attribute", f'<user name="admin" password="{s}"/>', s)
s = password()
add("xml-datasource", f'<property name="password" value="{s}"/>', s)
for key in ("password", "db_password", "passwd", "pass", "adminPass", "rootPassword"):
    s = password()
    add(f"yaml-{key}", f"  {key}: {s}", s)
    s = password()
    add(f"json-{key}", f'{{"user": "app", "{key}": "{s}"}}', s)
s = password()
add("ini-pass", f"[client]\nuser=root\npass = {s}\n", s)
s = password()
add("htpasswd-like", f"mysql://root:{s}@localhost", s)
s = password()
add("wpa-psk", f'network={{\n  ssid="corp"\n  psk="{s}"\n}}', s)
s = password()
add("redis-requirepass", f"requirepass {s}", s)
s = password()
add("masterauth", f"masterauth {s}", s)
s = pick(B64, 43) + "="
add("wireguard-private-key", f"[Interface]\nPrivateKey = {s}\nAddress = 10.8.0.1/24", s)
s = pick(ALNUM, 32)
add("snmp-community", f"rocommunity {s} 10.0.0.0/8", s)

# --- keys and tokens decoded, folded, split ---------------------------------------------------
for label in ("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY"):
    block = pem(label)
    body = block.split("\n")[1:-2]
    add(f"pem-body-{label}", "\n".join(body), body[0], body[:-1])
    encoded = base64.b64encode(block.encode()).decode()
    add(
        f"base64-pem-{label}",
        encoded,
        encoded[:60],
        [encoded[i : i + 40] for i in range(0, len(encoded) - 40, 200)],
    )
    folded = "\n".join(textwrap.wrap(encoded, 76))
    add(f"base64-folded-pem-{label}", folded, folded.split("\n")[1], folded.split("\n")[1:-1])
    hexed = block.encode().hex()
    add(f"hex-pem-{label}", hexed, hexed[:64], [hexed[i : i + 64] for i in range(0, 512, 64)])
    xxd_lines = []
    raw = block.encode()
    for off in range(0, len(raw), 16):
        chunk = raw[off : off + 16]
        hx = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        text = "".join(chr(c) if 32 <= c < 127 else "." for c in chunk)
        xxd_lines.append(f"{off:08x}: {hx:<39}  {text}")
    add(
        f"xxd-pem-{label}",
        "\n".join(xxd_lines),
        body[0][:16],
        [line[51:] for line in xxd_lines[3:8]],
    )
for maker in (
    lambda: "ghp_" + pick(ALNUM, 36),
    lambda: "AKIA" + pick(UPPER, 16),
    lambda: "xoxb-" + pick(string.digits, 12) + "-" + pick(ALNUM, 24),
):
    token = maker()
    encoded = base64.b64encode(f"token={token}\n".encode()).decode()
    add("base64-token", f"echo {encoded} | base64 -d", encoded, [encoded])
    add("hex-token", token.encode().hex(), token.encode().hex())
for _ in range(3):
    token = jwt()
    head, claims, sig = token.split(".")
    add("jwt-split-lines", f"{head}.\n{claims}.\n{sig}", sig, [claims, sig])
    folded = "\n".join(textwrap.wrap(token, 64))
    add("jwt-folded", folded, token, folded.split("\n")[1:])
s = password()
encoded = base64.b64encode(s.encode()).decode()
add("k8s-secret-data", f"data:\n  password: {encoded}\n", encoded)
add(
    "k8s-secret-jsonpath",
    f"kubectl get secret db -o jsonpath='{{.data.password}}'\n{encoded}",
    encoded,
)

# --- token kinds neither corpus had -----------------------------------------------------------
KINDS = {
    "heroku-api-key": lambda: "HRKU-" + pick(URLSAFE, 60),
    "mailchimp-key": lambda: pick(HEX, 32) + "-us" + str(R.randint(1, 20)),
    "square-token": lambda: "EAAA" + pick(URLSAFE, 60),
    "square-oauth-secret": lambda: "sq0csp-" + pick(URLSAFE, 43),
    "shopify-token": lambda: "shpat_" + pick(HEX, 32),
    "asana-pat": lambda: (
        "2/" + pick(string.digits, 16) + "/" + pick(string.digits, 16) + ":" + pick(HEX, 32)
    ),
    "airtable-pat": lambda: "pat" + pick(ALNUM, 14) + "." + pick(HEX, 64),
    "alibaba-access-key": lambda: "LTAI" + pick(ALNUM, 20),
    "atlassian-token": lambda: "ATATT3xFfGF0" + pick(URLSAFE, 180),
    "bitbucket-app-password": lambda: "ATBB" + pick(ALNUM, 32),
    "clojars-token": lambda: "CLOJARS_" + pick(LOWER, 60),
    "contentful-token": lambda: "CFPAT-" + pick(URLSAFE, 43),
    "databricks-token": lambda: "dapi" + pick(HEX, 32),
    "doppler-token": lambda: "dp.pt." + pick(ALNUM, 43),
    "dropbox-token": lambda: "sl." + pick(URLSAFE, 135),
    "duffel-token": lambda: "duffel_live_" + pick(URLSAFE, 43),
    "dynatrace-token": lambda: "dt0c01." + pick(UPPER, 24) + "." + pick(UPPER, 64),
    "easypost-key": lambda: "EZAK" + pick(ALNUM, 54),
    "flutterwave-key": lambda: "FLWSECK_TEST-" + pick(HEX, 32) + "-X",
    "frameio-token": lambda: "fio-u-" + pick(URLSAFE, 64),
    "gocardless-token": lambda: "live_" + pick(URLSAFE, 40),
    "grafana-service-account": lambda: "glsa_" + pick(ALNUM, 32) + "_" + pick(HEX, 8),
    "hashicorp-tf-token": lambda: pick(ALNUM, 14) + ".atlasv1." + pick(URLSAFE, 67),
    "linear-key": lambda: "lin_api_" + pick(ALNUM, 40),
    "launchdarkly-key": lambda: (
        "api-"
        + pick(HEX, 8)
        + "-"
        + pick(HEX, 4)
        + "-"
        + pick(HEX, 4)
        + "-"
        + pick(HEX, 4)
        + "-"
        + pick(HEX, 12)
    ),
    "mapbox-secret": lambda: "sk.eyJ1Ijoi" + pick(ALNUM, 40) + "." + pick(URLSAFE, 22),
    "new-relic-key": lambda: "NRAK-" + pick(UPPER, 27),
    "okta-token": lambda: "00" + pick(URLSAFE, 40),
    "planetscale-password": lambda: "pscale_pw_" + pick(URLSAFE, 43),
    "postman-key": lambda: "PMAK-" + pick(HEX, 24) + "-" + pick(HEX, 34),
    "prefect-key": lambda: "pnu_" + pick(ALNUM, 36),
    "pulumi-token": lambda: "pul-" + pick(HEX, 40),
    "readme-key": lambda: "rdme_" + pick(LOWER, 70),
    "rubygems-key": lambda: "rubygems_" + pick(HEX, 48),
    "scalingo-token": lambda: "tk-us-" + pick(URLSAFE, 48),
    "sendinblue-key": lambda: "xkeysib-" + pick(HEX, 64) + "-" + pick(ALNUM, 16),
    "sentry-token": lambda: "sntrys_" + pick(ALNUM, 60),
    "shippo-token": lambda: "shippo_live_" + pick(HEX, 40),
    "sidekiq-secret": lambda: pick(HEX, 8) + ":" + pick(HEX, 8),
    "telegram-bot-token": lambda: str(R.randint(10**8, 10**9)) + ":AA" + pick(URLSAFE, 33),
    "typeform-token": lambda: "tfp_" + pick(URLSAFE, 44) + "_" + pick(URLSAFE, 14),
    "yandex-key": lambda: "AQVN" + pick(URLSAFE, 36),
    "gitlab-runner-token": lambda: "glrt-" + pick(URLSAFE, 20),
    "openai-key": lambda: "sk-" + pick(ALNUM, 20) + "T3BlbkFJ" + pick(ALNUM, 20),
    "azure-devops-pat": lambda: pick(LOWER, 52),
    "cloudflare-token": lambda: pick(URLSAFE, 40),
    "fastly-token": lambda: pick(URLSAFE, 32),
    "hf-org-token": lambda: "api_org_" + pick(ALNUM, 34),
    "npm-legacy": lambda: (
        pick(HEX, 8)
        + "-"
        + pick(HEX, 4)
        + "-"
        + pick(HEX, 4)
        + "-"
        + pick(HEX, 4)
        + "-"
        + pick(HEX, 12)
    ),
    "confluent-key": lambda: pick(UPPER, 16),
}
CONTEXTS = {
    "sidekiq-secret": "BUNDLE_ENTERPRISE__CONTRIBSYS__COM={s}",
    "azure-devops-pat": "AZURE_DEVOPS_EXT_PAT={s}",
    "cloudflare-token": "CLOUDFLARE_API_TOKEN={s}",
    "fastly-token": "FASTLY_API_TOKEN={s}",
    "okta-token": "Authorization: SSWS {s}",
    "npm-legacy": "//registry.npmjs.org/:_authToken={s}",
    "confluent-key": "CONFLUENT_CLOUD_API_KEY={s}",
    "mailchimp-key": "MAILCHIMP_KEY={s}",
    "launchdarkly-key": "LD_API_KEY={s}",
    "gocardless-token": "GOCARDLESS_ACCESS_TOKEN={s}",
}
for kind, make in KINDS.items():
    s = make()
    add(kind, CONTEXTS.get(kind, "{s}").format(s=s), s)

HERE = Path(__file__).parent
with (HERE / "secrets_new_kinds.jsonl").open("w") as handle:
    for row in ROWS:
        handle.write(json.dumps(row) + "\n")
print(len(ROWS), "secrets")
