# ruff: noqa: E501
"""Write tests/data/secrets/blind_cases.jsonl: secrets of kinds and shapes the redaction rules
were not written from (issue 33, cause 10, "of new kinds at most 5%"), in the output of the
commands that show them (config files, connection URLs, credential stores, encodings), plus
ordinary output that must come through unchanged.

The corpus was written before the rules were read; its first run is recorded in
docs/gate.md. Values are synthetic (seeded random), never real credentials.

Each line: {"source", "kind": "tp"|"fp", "text", "secret", "pieces"}; a case leaks when any of
its pieces is still in the redacted text.

    python tests/data/secrets/make_blind_corpus.py
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import string
import subprocess
from pathlib import Path

OUT = Path(__file__).resolve().parent / "blind_cases.jsonl"
RNG = random.Random(3333)
ALNUM = string.ascii_letters + string.digits
LOWER_HEX = "0123456789abcdef"


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def password(n: int = 14) -> str:
    return rand(n - 3) + RNG.choice("!#%*") + rand(2, string.digits)


def b64(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return base64.b64encode(data).decode()


ROWS: list[dict[str, object]] = []


def tp(source: str, text: str, secret: str, pieces: list[str] | None = None) -> None:
    ROWS.append(
        {
            "source": source,
            "kind": "tp",
            "text": text,
            "secret": secret,
            "pieces": pieces or [secret],
        }
    )


def fp(source: str, text: str) -> None:
    ROWS.append({"source": source, "kind": "fp", "text": text, "secret": "", "pieces": []})


def vendor_tokens() -> None:
    shapes = {
        "linear": "lin_api_" + rand(40),
        "postman": "PMAK-" + rand(24, LOWER_HEX) + "-" + rand(34, LOWER_HEX),
        "grafana-cloud": "glc_" + rand(80),
        "grafana-sa": "glsa_" + rand(32) + "_" + rand(8, LOWER_HEX),
        "databricks": "dapi" + rand(32, LOWER_HEX),
        "atlassian": "ATATT3xFfGF0" + rand(180, ALNUM + "-_") + "=" + rand(8, LOWER_HEX.upper()),
        "newrelic": "NRAK-" + rand(27, string.ascii_uppercase + string.digits),
        "sentry-user": "sntryu_" + rand(64, LOWER_HEX),
        "pulumi": "pul-" + rand(40, LOWER_HEX),
        "terraform-cloud": rand(14) + ".atlasv1." + rand(67),
        "flyio": "fo1_" + rand(43, ALNUM + "_-"),
        "supabase": "sbp_" + rand(40, LOWER_HEX),
        "shopify": "shpat_" + rand(32, LOWER_HEX),
        "notion": "ntn_" + rand(46),
        "figma": "figd_" + rand(40, ALNUM + "_-"),
        "tailscale": "tskey-auth-" + rand(12) + "CNTRL-" + rand(32),
        "buildkite": "bkua_" + rand(40, LOWER_HEX),
        "replicate": "r8_" + rand(37),
        "groq": "gsk_" + rand(52),
        "perplexity": "pplx-" + rand(48),
        "xai": "xai-" + rand(80),
        "langsmith": "lsv2_pt_" + rand(32, LOWER_HEX) + "_" + rand(10, LOWER_HEX),
        "sonarqube": "squ_" + rand(40, LOWER_HEX),
        "octopus": "API-" + rand(26, string.ascii_uppercase + string.digits),
        "mailgun": "key-" + rand(32, LOWER_HEX),
        "infracost": "ico-" + rand(32),
    }
    for kind, token in shapes.items():
        contexts = [
            f"TOKEN {token}",
            f"Using credentials {token} for the upload",
            f"  api_token: {token}",
            f"{kind.upper().replace('-', '_')}_KEY={token}",
        ]
        tp(f"vendor-{kind}", contexts[len(ROWS) % len(contexts)], token)


def cloud_keys() -> None:
    tencent_id, tencent_key = "AKID" + rand(32), rand(32)
    tp("tencent", f"SecretId: {tencent_id}\nSecretKey: {tencent_key}", tencent_key)
    scw = (
        rand(8, LOWER_HEX)
        + "-"
        + "-".join(rand(4, LOWER_HEX) for _ in range(3))
        + "-"
        + rand(12, LOWER_HEX)
    )
    tp(
        "scaleway",
        f'[profiles.default]\naccess_key = "SCW{rand(17, string.ascii_uppercase)}"\nsecret_key = "{scw}"',
        scw,
    )
    hcloud = rand(64)
    tp("hetzner", f'[[contexts]]\n  name = "prod"\n  token = "{hcloud}"', hcloud)
    linode = rand(64, LOWER_HEX)
    tp(
        "linode-cli",
        f"[DEFAULT]\ndefault-user = ops\n\n[ops]\ntoken = {linode}\nregion = eu-central",
        linode,
    )
    session = "IQoJb3JpZ2luX2VjE" + rand(300, ALNUM + "/+") + "=="
    secret = rand(40, ALNUM + "/+")
    tp(
        "aws-sts-json",
        json.dumps(
            {
                "Credentials": {
                    "AccessKeyId": "ASIA" + rand(16, string.ascii_uppercase + string.digits),
                    "SecretAccessKey": secret,
                    "SessionToken": session,
                    "Expiration": "2026-12-07T18:00:00Z",
                }
            },
            indent=4,
        ),
        secret,
        [secret, session[:60]],
    )
    ya29 = "ya29.a0" + rand(150, ALNUM + "-_")
    tp("gcloud-print-access-token", ya29, ya29)
    key_body = "\\n".join(rand(64, ALNUM + "/+") for _ in range(6))
    tp(
        "gcp-service-account-json",
        '{"type": "service_account", "project_id": "ops-prod", "private_key_id": "'
        + rand(40, LOWER_HEX)
        + '", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + key_body
        + '\\n-----END PRIVATE KEY-----\\n", "client_email": "ci@ops-prod.iam.gserviceaccount.com"}',
        key_body.split("\\n")[2],
    )
    cloudinary = rand(27, ALNUM + "_-")
    tp(
        "cloudinary-url",
        f"CLOUDINARY_URL=cloudinary://{rand(15, string.digits)}:{cloudinary}@ops-media",
        cloudinary,
    )
    oci = rand(44, ALNUM + "/+")
    tp(
        "oci-auth-token",
        f"[DEFAULT]\nuser=ocid1.user.oc1..{rand(20).lower()}\nauth_token={oci}",
        oci,
    )


def config_formats() -> None:
    pw = [password() for _ in range(30)]
    tp("ini-mycnf", f"[client]\nuser=backup\npassword={pw[0]}\nhost=db1", pw[0])
    tp("ini-spaces", f"[database]\nhost = 10.0.0.5\npasswd = {pw[1]}\n", pw[1])
    tp("toml-nested", f'[server.db]\nuser = "app"\ndb_password = "{pw[2]}"', pw[2])
    tp("toml-inline", f'database = {{ user = "app", password = "{pw[3]}", port = 5432 }}', pw[3])
    tp(
        "yaml-nested",
        f"production:\n  adapter: postgresql\n  username: rails\n  password: {pw[4]}\n",
        pw[4],
    )
    tp("yaml-quoted", f"smtp:\n  auth:\n    user: alerts\n    pass: '{pw[5]}'", pw[5])
    tp(
        "yaml-list-env",
        f"env:\n  - name: POSTGRES_PASSWORD\n    value: {pw[6]}\n  - name: LOG_LEVEL\n    value: info",
        pw[6],
    )
    tp("dotenv-export", f'export SMTP_PASSWORD="{pw[7]}"', pw[7])
    skb = rand(128, LOWER_HEX)
    tp("dotenv-secret-key-base", f"SECRET_KEY_BASE={skb}", skb)
    app_key = "base64:" + b64(rand(32))
    tp("laravel-app-key", f"APP_NAME=Shop\nAPP_KEY={app_key}\nAPP_DEBUG=false", app_key[7:])
    django = rand(50, ALNUM + "!@#%^*(-_=+)")
    tp("django-settings", f"SECRET_KEY = '{django}'\nDEBUG = False", django)
    tp("json-client-secret", json.dumps({"client_id": "ops-portal", "client_secret": pw[8]}), pw[8])
    tp("json-nested-pw", json.dumps({"db": {"user": "app", "pwd": pw[9]}}, indent=2), pw[9])
    tp(
        "docker-inspect-env",
        json.dumps({"Env": [f"MARIADB_ROOT_PASSWORD={pw[10]}", "TZ=UTC"]}, indent=2),
        pw[10],
    )
    tp(
        "xml-maven",
        f"<server>\n  <id>nexus</id>\n  <username>deploy</username>\n  <password>{pw[11]}</password>\n</server>",
        pw[11],
    )
    tp("xml-attr", f'<add key="SmtpPassword" value="{pw[12]}" />', pw[12])
    tp(
        "xml-connstr",
        f'<add name="Main" connectionString="Server=db;Database=shop;User Id=sa;Password={pw[13]};" />',
        pw[13],
    )
    tp("php-define", f"define( 'DB_PASSWORD', '{pw[14]}' );", pw[14])
    tp(
        "java-properties",
        f"spring.datasource.url=jdbc:mysql://db/shop\nspring.datasource.password={pw[15]}",
        pw[15],
    )
    tp("gradle-properties", f"signing.keyId=24875D73\nsigning.password={pw[16]}", pw[16])
    tp("wpa-supplicant", f'network={{\n    ssid="office"\n    psk="{pw[17]}"\n}}', pw[17])
    tp("chap-secrets", f'# client server secret IP\n"vpnuser" * "{pw[18]}" *', pw[18])
    tp("cifs-credentials", f"username=backup\npassword={pw[19]}\ndomain=CORP", pw[19])
    tp(
        "mount-options",
        f"//nas/share on /mnt/nas type cifs (rw,relatime,vers=3.0,username=backup,password={pw[20]},uid=0)",
        pw[20],
    )
    tp(
        "ps-cmdline",
        f"root  812  0.0  1.2 java -jar app.jar --spring.datasource.password={pw[21]} --server.port=8080",
        pw[21],
    )
    s3_key = rand(40, ALNUM + "/+")
    access = "AKIA" + rand(16, string.ascii_uppercase + string.digits)
    tp("s3cfg", f"[default]\naccess_key = {access}\nsecret_key = {s3_key}", s3_key)
    tp("pypirc", f"[pypi]\nusername = __token__\npassword = {pw[23]}", pw[23])
    wg = b64(rand(32))
    tp(
        "wireguard",
        f"[Interface]\nAddress = 10.8.0.1/24\nPrivateKey = {wg}\nListenPort = 51820",
        wg,
    )
    tfc = rand(30)
    tp("terraformrc", f'credentials "app.terraform.io" {{\n  token = "{tfc}"\n}}', tfc)
    npm_auth = b64(f"deploy:{pw[25]}")
    tp("npmrc-auth", f"registry=https://npm.corp/\n_auth={npm_auth}\nalways-auth=true", npm_auth)
    shadow = "$6$" + rand(16, ALNUM + "./") + "$" + rand(86, ALNUM + "./")
    tp("etc-shadow", f"root:{shadow}:19700:0:99999:7:::", shadow)
    sha = b64(rand(20))
    tp("htpasswd-plain-sha", f"admin:{{SHA}}{sha}", sha)


def connection_urls() -> None:
    pw = [password() for _ in range(8)]
    tp("amqp-url", f"BROKER_URL=amqp://celery:{pw[0]}@rabbit:5672//", pw[0])
    tp("redis-url-nouser", f"Connecting to redis://:{pw[1]}@cache:6379/0", pw[1])
    tp(
        "mongodb-srv",
        f"mongodb+srv://app:{pw[2]}@cluster0.ab1cd.mongodb.net/shop?retryWrites=true",
        pw[2],
    )
    tp("jdbc-params", f"jdbc:postgresql://db:5432/shop?user=app&password={pw[3]}&ssl=true", pw[3])
    tp("url-encoded-pw", f"postgresql://app:{pw[4]}%40x@db/shop", pw[4])
    tp("git-credentials", f"https://deploy:{pw[5]}@git.corp.example/ops/infra.git", pw[5])
    tp("ldap-bind", f"ldapsearch -x -D cn=admin,dc=corp -w{pw[6]} -b dc=corp", pw[6])
    tp("smtp-url", f"EMAIL_URL=smtp+tls://alerts@corp.example:{pw[7]}@smtp.corp.example:587", pw[7])


def credential_files() -> None:
    pw = [password() for _ in range(5)]
    tp("pgpass-wildcards", f"*:*:*:replicator:{pw[0]}", pw[0])
    tp("pgpass-ipv6", f"[::1]:5432:shop:app:{pw[1]}", pw[1])
    tp("netrc-default", f"default login anonymous password {pw[2]}", pw[2])
    tp("netrc-tabs", f"machine\tftp.corp.example\n\tlogin\tops\n\tpassword\t{pw[3]}", pw[3])
    k8s_pw = password()
    k8s_json = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "data": {"db-pass": b64(k8s_pw), "user": b64("app")},
        },
        indent=2,
    )
    tp("k8s-secret-json", k8s_json, b64(k8s_pw))
    tok = rand(40)
    tp(
        "k8s-jsonpath-decoded",
        f"$ kubectl get secret api -o jsonpath='{{.data.token}}' | base64 -d\n{tok}",
        tok,
    )


def pem_variants() -> None:
    body = [rand(64, ALNUM + "/+") for _ in range(12)]
    tp(
        "pem-crlf",
        "-----BEGIN RSA PRIVATE KEY-----\r\n"
        + "\r\n".join(body[:8])
        + "\r\n-----END RSA PRIVATE KEY-----\r\n",
        body[4],
    )
    tp(
        "pem-yaml-indented",
        "tls:\n  key: |\n    -----BEGIN EC PRIVATE KEY-----\n    "
        + "\n    ".join(body[:3])
        + "\n    -----END EC PRIVATE KEY-----",
        body[1],
    )
    ovpn = [rand(32, LOWER_HEX) for _ in range(16)]
    tp(
        "openvpn-static",
        "-----BEGIN OpenVPN Static key V1-----\n"
        + "\n".join(ovpn)
        + "\n-----END OpenVPN Static key V1-----",
        ovpn[4],
    )
    tp(
        "pem-escaped-oneline",
        "ssl_key=-----BEGIN PRIVATE KEY-----\\n"
        + "\\n".join(body[5:9])
        + "\\n-----END PRIVATE KEY-----",
        body[6],
    )
    tp("pem-truncated-head", "\n".join(body[2:9]) + "\n-----END PRIVATE KEY-----", body[5])


def jwt(payload: dict[str, object]) -> str:
    head = base64.urlsafe_b64encode(b'{"alg":"RS256","typ":"JWT"}').rstrip(b"=").decode()
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    return f"{head}.{body}.{rand(86, ALNUM + '-_')}"


def jwts_and_encodings() -> None:
    token = jwt({"sub": "svc-ops", "iat": 1765000000, "scope": "admin"})
    head, body, sig = token.split(".")
    tp("jwt-split-dots", f"token:\n{head}.\n{body}.\n{sig}", sig, [body, sig])
    tp("jwt-json-escaped", json.dumps({"id_token": token}), sig)
    token2 = jwt({"sub": "robot", "aud": "vault"})
    tp(
        "jwt-wrapped-76",
        "\n".join(token2[i : i + 76] for i in range(0, len(token2), 76)),
        token2.split(".")[2],
        [token2[76:152]],
    )
    linear = "lin_api_" + rand(40)
    enc = b64(f"LINEAR_API_KEY={linear}\n")
    tp("base64-of-env", enc, linear, [enc])
    enc_hex = binascii.hexlify(f"password={password()}".encode()).decode()
    tp("hex-of-assignment", enc_hex, enc_hex, [enc_hex])
    groq = "gsk_" + rand(52)
    dump = subprocess.run(
        ["xxd"], input=groq.encode(), capture_output=True, check=True
    ).stdout.decode()
    tp(
        "xxd-vendor-token",
        dump,
        groq,
        [line.split("  ")[0].split(": ")[1] for line in dump.splitlines()][:2],
    )
    pem = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + "\n".join(rand(70, ALNUM + "/+") for _ in range(5))
        + "\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    enc_pem = b64(pem)
    folded = "\n".join(enc_pem[i : i + 76] for i in range(0, len(enc_pem), 76))
    tp("base64-of-pem", folded, enc_pem[76:152], [enc_pem[76:152], enc_pem[152:228]])
    pplx = "pplx-" + rand(48)
    tp(
        "fold-w16",
        "\n".join(pplx[i : i + 16] for i in range(0, len(pplx), 16)),
        pplx,
        [pplx[16:32], pplx[32:48]],
    )
    secret = password(20)
    od = subprocess.run(
        ["od", "-An", "-tx1"],
        input=f"DB_PASSWORD={secret}\n".encode(),
        capture_output=True,
        check=True,
    ).stdout.decode()
    tp("od-hex", od, secret, [od.splitlines()[1].strip()])
    b32 = base64.b32encode(f"api_key={rand(30)}".encode()).decode()
    tp("base32-of-assignment", b32, b32, [b32])


def benign() -> None:
    fp("iptables", "-A INPUT -p tcp -m tcp --dport 22 -m conntrack --ctstate NEW -j ACCEPT")
    fp("sha256sum", f"{rand(64, LOWER_HEX)}  /usr/bin/python3")
    fp("docker-images", f"nginx  1.27  sha256:{rand(12, LOWER_HEX)}  3 weeks ago  188MB")
    fp(
        "git-log",
        f"commit {rand(40, LOWER_HEX)}\nAuthor: Ops <ops@corp.example>\n\n    fix rate limit",
    )
    fp(
        "ip-a",
        "2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP\n    link/ether 52:54:00:12:34:56 brd ff:ff:ff:ff:ff:ff",
    )
    fp("sshd-config", "PasswordAuthentication no\nPermitRootLogin prohibit-password")
    fp(
        "uuid",
        f"Request {rand(8, LOWER_HEX)}-{rand(4, LOWER_HEX)}-{rand(4, LOWER_HEX)}-{rand(4, LOWER_HEX)}-{rand(12, LOWER_HEX)} completed in 12 ms",
    )
    fp("k8s-configmap", 'data:\n  LOG_LEVEL: info\n  WORKERS: "4"')
    fp(
        "journal",
        "Dec 07 16:00:01 web1 CRON[2211]: pam_unix(cron:session): session opened for user root(uid=0)",
    )
    fp("password-policy", "minlen = 12\npassword_expiry_days = 90\npassword_min_age = 1")


def main() -> None:
    vendor_tokens()
    cloud_keys()
    config_formats()
    connection_urls()
    credential_files()
    pem_variants()
    jwts_and_encodings()
    benign()
    OUT.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    print(
        f"{OUT}: {sum(r['kind'] == 'tp' for r in ROWS)} secrets, {sum(r['kind'] == 'fp' for r in ROWS)} benign"
    )


if __name__ == "__main__":
    main()
