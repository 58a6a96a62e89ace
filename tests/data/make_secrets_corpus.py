"""Write secrets_new_kinds.jsonl and secrets_benign.txt (issue 33): secrets of kinds and in
shapes the first corpus (tests/test_gate_secrets.py) lacks, and ordinary ops output that
must come through unchanged.

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
for name in ("DB_PASS", "MYSQL_ROOT_PASS", "REDIS_PASS", "SMTP_PASS", "ADMIN_PASSWORD",
             "POSTGRES_PASSWORD", "RABBITMQ_DEFAULT_PASS", "LDAP_BIND_PW", "DB_PWD", "PASS"):
    s = password()
    add(f"assignment-{name}", R.choice(["{n}={s}", "export {n}={s}", "{n}='{s}'",
                                        "  - {n}={s}"]).format(n=name, s=s), s)
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
    add(f"base64-pem-{label}", encoded, encoded[:60], [encoded[i:i + 40]
                                                        for i in range(0, len(encoded) - 40, 200)])
    folded = "\n".join(textwrap.wrap(encoded, 76))
    add(f"base64-folded-pem-{label}", folded, folded.split("\n")[1],
        folded.split("\n")[1:-1])
    hexed = block.encode().hex()
    add(f"hex-pem-{label}", hexed, hexed[:64], [hexed[i:i + 64] for i in range(0, 512, 64)])
    xxd_lines = []
    raw = block.encode()
    for off in range(0, len(raw), 16):
        chunk = raw[off:off + 16]
        hx = " ".join(chunk[i:i + 2].hex() for i in range(0, len(chunk), 2))
        text = "".join(chr(c) if 32 <= c < 127 else "." for c in chunk)
        xxd_lines.append(f"{off:08x}: {hx:<39}  {text}")
    add(f"xxd-pem-{label}", "\n".join(xxd_lines), body[0][:16],
        [line[51:] for line in xxd_lines[3:8]])
for maker in (lambda: "ghp_" + pick(ALNUM, 36), lambda: "AKIA" + pick(UPPER, 16),
              lambda: "xoxb-" + pick(string.digits, 12) + "-" + pick(ALNUM, 24)):
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
add("k8s-secret-jsonpath", f"kubectl get secret db -o jsonpath='{{.data.password}}'\n{encoded}",
    encoded)

# --- token kinds neither corpus had -----------------------------------------------------------
KINDS = {
    "heroku-api-key": lambda: "HRKU-" + pick(URLSAFE, 60),
    "mailchimp-key": lambda: pick(HEX, 32) + "-us" + str(R.randint(1, 20)),
    "square-token": lambda: "EAAA" + pick(URLSAFE, 60),
    "square-oauth-secret": lambda: "sq0csp-" + pick(URLSAFE, 43),
    "shopify-token": lambda: "shpat_" + pick(HEX, 32),
    "asana-pat": lambda: "2/" + pick(string.digits, 16) + "/" + pick(string.digits, 16)
    + ":" + pick(HEX, 32),
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
    "launchdarkly-key": lambda: "api-" + pick(HEX, 8) + "-" + pick(HEX, 4) + "-" + pick(HEX, 4)
    + "-" + pick(HEX, 4) + "-" + pick(HEX, 12),
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
    "npm-legacy": lambda: pick(HEX, 8) + "-" + pick(HEX, 4) + "-" + pick(HEX, 4) + "-"
    + pick(HEX, 4) + "-" + pick(HEX, 12),
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

BENIGN = r"""Chain INPUT (policy DROP 0 packets, 0 bytes)
-A INPUT -s 10.0.0.0/8 -p tcp -m tcp --dport 22 -m comment --comment "ssh from vpn" -j ACCEPT
-A f2b-sshd -s 203.0.113.7/32 -j REJECT --reject-with icmp-port-unreachable
-A KUBE-SVC-NPX46M4PTMTKRN6Y -m comment --comment "default/kubernetes:https" -j KUBE-SEP-X3P2623AGDH6CDF3
-A KUBE-SEP-X3P2623AGDH6CDF3 -p tcp -m tcp -j DNAT --to-destination 10.0.0.5:6443
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  /dev/null
9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  /etc/passwd
d41d8cd98f00b204e9800998ecf8427e  empty.txt
commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904
Merge: 1a2b3c4 5d6e7f8
sha256:4f5e7c2a1b9d8e3f6a0c7b2d5e8f1a4c7b0d3e6f9a2c5b8e1d4f7a0c3b6e9d2f
REPOSITORY   TAG       IMAGE ID       CREATED        SIZE
nginx        1.25      a8758716bb6a   2 weeks ago    187MB
CONTAINER ID   IMAGE          COMMAND                  STATUS          NAMES
3f4e8c1a2b9d   redis:7        "docker-entrypoint.s…"   Up 3 hours      cache
  uid: 6f1c2e3a-4b5d-4e6f-8a9b-0c1d2e3f4a5b
  resourceVersion: "184467"
  ownerReferences: replicaset api-7d9f8b6c4
    kubernetes.io/psp: eks.privileged
link/ether 52:54:00:12:34:56 brd ff:ff:ff:ff:ff:ff
inet6 fe80::5054:ff:fe12:3456/64 scope link
tcp   ESTAB  0  0  10.0.0.4:22  10.0.0.9:51514  users:(("sshd",pid=1201,fd=4))
Mar 12 10:15:00 vm-app-01 sshd[1201]: Accepted publickey for ops from 10.0.0.9 port 51514 ssh2: RSA SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s
Mar 12 10:15:02 vm-app-01 sshd[1201]: Failed password for invalid user admin from 203.0.113.7 port 4242 ssh2
Mar 12 10:16:00 vm-app-01 kernel: [12345.678] nf_conntrack: table full, dropping packet
PasswordAuthentication no
PermitRootLogin prohibit-password
password required pam_unix.so obscure sha512
#password_file /etc/app/secret.txt
  password: ${DB_PASSWORD}
  password: {{ vault_db_password }}
PGPASSWORD is not set
--password-stdin
Filesystem      Size  Used Avail Use% Mounted on
/dev/nvme0n1p1   50G   31G   17G  65% /
UUID=0a1b2c3d-4e5f-6789-abcd-ef0123456789 /boot ext4 defaults 0 2
-rw-r--r-- 1 root root 3106 Oct 15  2021 /etc/bash.bashrc
ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ops@laptop
ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 ops@bastion
Certificate fingerprint (SHA-256): 5E:FF:56:A2:AF:15:88:25:35:53:A6:F9:7A:5C:0D:C6:8F:8D:9C:6B:D9:B5:4E:21:D2:7C:C7:B1:B2:22:DB:A5
X509v3 Subject Key Identifier: 8F:1A:3B:5C:7D:9E:0F:21:43:65:87:A9:CB:ED:0F:12:34:56:78:9A
serial=04A1B2C3D4E5F60718293A4B5C6D7E8F
Version: 1.25.4-eks-0a21954
etcd-member  Healthy  {"health":"true","reason":""}
{"level":"info","ts":1710238500.123,"msg":"request","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"}
[2026-03-12T10:15:00Z] GET /api/v1/orders?page=2&sort=desc 200 12ms req_id=7c9e6679-7425-40de-944b-e07fc1f90ae7
tc qdisc add dev eth0 root netem delay 100ms 20ms distribution normal
ip route add 10.1.0.0/16 via 10.0.0.1 dev eth0 proto static metric 100
nf_conntrack_max = 262144
net.ipv4.tcp_rmem = 4096	131072	6291456
base64: invalid input
aGVsbG8gd29ybGQK
dGhpcyBpcyBqdXN0IGEgbG9nIGxpbmUgZnJvbSB0aGUgYXBwCg==
Y29uZmlnOiB7IHJlcGxpY2FzOiAzLCBpbWFnZTogbmdpbng6MS4yNSB9Cg==
6e67696e782e636f6e6620737973746178206973206f6b0a
00000000: 6e67 696e 7820 2d74 0a                   nginx -t.
pid 1201's current affinity list: 0-3
Name:         api-7d9f8b6c4-x2x9z
Events:  <none>
Status: active, Logging: on (low)
To                         Action      From
22/tcp                     ALLOW       Anywhere
"""

HERE = Path(__file__).parent
with (HERE / "secrets_new_kinds.jsonl").open("w") as handle:
    for row in ROWS:
        handle.write(json.dumps(row) + "\n")
(HERE / "secrets_benign.txt").write_text(BENIGN)
print(len(ROWS), "secrets,", len(BENIGN.splitlines()), "benign lines")
