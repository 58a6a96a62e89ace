"""Writes cmdline_decode_cases.jsonl: secrets typed on command lines in a form the detectors
of text do not read as typed (issue 33, cause 10: "a PEM body without its header, a key
through base64, fold or xxd, a JWT split across lines", ".netrc and pgpass lines"): encoded
and fed to a decoder (`base64 -d`, `xxd -r -p`, `printf '\\x..'`, `openssl base64 -d`,
`b64decode` in a script), split over a line continuation or over quotes, key material
without its header written to a key file, credential-file lines written by echo, printf, tee
or a here-document, and SQL on standard input that sets a password; and lines of the same
tools that hold none (base64 of plain text, hashes, public keys, certificates, shell rc
lines). Written and labelled before any rule for these forms: every third case of each kind
(`blind`: true) is never looked at while the rules are tuned. Keys and tokens are synthetic
(made for this corpus, used nowhere).

    python tests/data/secrets/make_cmdline_decode_corpus.py
"""

from __future__ import annotations

import base64

from make_cmdline_corpus import write_cases


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def hexed(text: str) -> str:
    return text.encode().hex()


def escaped(text: str) -> str:
    return "".join(f"\\x{byte:02x}" for byte in text.encode())


def b64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


GITHUB = "ghp_R8xQm2VtL9pZk4NwYc7HsJd3FbG6uAe1Tq0o"
SLACK = "xoxb-2814417305-5093118264-Zq3XkW9mPa7RtY2vBn8LcD4s"
STRIPE = "sk_live_51Hx7Ab2Cd3Ef4Gh5Ij6Kl7Mn8Op9Qr0St"
ANTHROPIC = "sk-ant-api03-Vb7Nq2Xr9Lm4Kp8Zt3Wy6Hc1Jd5Fg0Se-AbCdEfGh_IjKlMnOp"
JWT = (
    b64url('{"alg":"HS256","typ":"JWT"}')
    + "."
    + b64url('{"sub":"svc-deploy","role":"admin","iat":1765000000}')
    + ".Xq3mZ9vL2pT8kR4wN7cY1bH6dJ5fG0sA-uE_iO3xQ8w"
)
ED25519_BODY = "MC4CAQAwBQYDK2VwBCIEIM6EDapszbtgib2G+61FMp1pHt07SwdxZ8sNUOr1Mupj"
EC_BODY = [
    "MHcCAQEEIOKl9x90jBUsffe1rBdSCWrGyD0t2JkifRfFG8h2XyaJoAoGCCqGSM49",
    "AwEHoUQDQgAEBuRX2lhvxBNQzh8m++MZCllBXQRjcSzllH8kDRr70ef/CYsC8YFc",
    "XyL08qaKXGDrv4A9jsr3DWXL5nvBbN0Ikg==",
]
RSA_BODY = [
    "MIICeAIBADANBgkqhkiG9w0BAQEFAASCAmIwggJeAgEAAoGBAL5HcEthYFFyd4Fk",
    "vUE7wwl4LKD9e9Mzcf+VxXzod3OadSPW/Ou8NQpjyLVcSKwb+CL8yNTGWBz5TkWX",
    "CtGG2VDuQQcJrkswWEG8dSnGxuaobCb6ciyUjoM4AdV32Np2wKgYjKBpd4bdWQci",
    "cg1VVdPBYpesXGl+vpgmy7n9LCc7AgMBAAECgYEAkdw1arNkoEq87UWKBj2HjvS+",
    "UVK+3vGqy5/F2bBiEQ4wCZ8+Fn8ZsbM4Ij5xvu1Z04gvc1vwI5XAuHvGYUObxafO",
    "dvItykKcj2LgdW5RL2Gz60kGBZwUR8SmbyWoX0oyHz3zQa4xmlEYvRKMlPvXbrcs",
    "zt5rl9Ra4yvuxi8hIDECQQD2cXoimYDotsaxCutzH+wLKjd2aGdqfaDvYjKHvQjL",
    "AAzMCMQkJfFWRay+7jKVlS+ZLULZLH0lAyA77n8nmOy3AkEAxahmq83DcHQmHy1W",
    "al2u7YJHlffxKRPzzFEkhbEMVIlfI16XkAQI0gS3nSjtrCbzZI33bIQK4m1VK6Q9",
    "CT/dnQJAfjDBD3J2tbLRrtoekgaogVcOq0zul3LYs3se0K6VEA1ogBmFBdV/7GMk",
    "/2dM85c+ljq83iOPuSIOoWGQLqB5pQJBAKWrn9ryzZRtFiLdqmfe/CcBIqVVu6IV",
    "oiwn+ve/zTjyJ3cK6viAGTCHWat1ybiYsTsgLzmad1EQGOpKcApXqJUCQQC06/7+",
    "YhWp+SCb3BlVI4b0uArKDe2YEJWjX/s0aIbuL3p1TgDlxiGGtN7r/2zaEip9zVmX",
    "MO0vsTPXgWqDzWwj",
]
OPENSSH_BODY = [
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "QyNTUxOQAAACBQ3FSIYTPDfIHciyXLbJy87q4GSIopvkuKSBfRlk4P6QAAAJD4bXkN+G15",
    "DQAAAAtzc2gtZWQyNTUxOQAAACBQ3FSIYTPDfIHciyXLbJy87q4GSIopvkuKSBfRlk4P6Q",
    "AAAECUV2j44obYvz3pEIRJfqvWGuY+6C3OpHn+sqgqnfMUClDcVIhhM8N8gdyLJctsnLzu",
    "rgZIiim+S4pIF9GWTg/pAAAADHRlc3RAZXhhbXBsZQE=",
]
RSA_PEM = "\n".join(["-----BEGIN PRIVATE KEY-----", *RSA_BODY, "-----END PRIVATE KEY-----", ""])
OPENSSH_PEM = "\n".join(
    ["-----BEGIN OPENSSH PRIVATE KEY-----", *OPENSSH_BODY, "-----END OPENSSH PRIVATE KEY-----", ""]
)
WG_PRIVATE = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="
WG_PUBLIC = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="
CERT_BODY = [
    "MIIBgjCCASmgAwIBAgIUQjHFFPHFz2jPgmJ/87R3EFna61UwCgYIKoZIzj0EAwIw",
    "FzEVMBMGA1UEAwwMdGVzdC5leGFtcGxlMB4XDTI2MTIwNzIyMTE1OFoXDTI2MTIw",
    "ODIyMTE1OFowFzEVMBMGA1UEAwwMdGVzdC5leGFtcGxlMFkwEwYHKoZIzj0CAQYI",
    "KoZIzj0DAQcDQgAEj587NlIfx87tJBNOfv8iVkmxZDEON3ikRPdGR0cnPthNSGGL",
    "If2V2cExbtk6HPKDOJzKQEyB6dszfvBW7Nr4nqNTMFEwHQYDVR0OBBYEFEhJ58Mt",
    "vLYQMk+dnVIdiyY/WoCSMB8GA1UdIwQYMBaAFEhJ58MtvLYQMk+dnVIdiyY/WoCS",
    "MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDRwAwRAIgMFIjoxYW/vbooTBy",
    "CgiW7WLxUpL1dLgRypWKgZ7EuD0CID+ZmCuXjMS5bc6ZvQuO8NeufJyS+FRfBZ8y",
    "cwGW/Gyf",
]
SSH_PUBLIC = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFDcVIhhM8N8gdyLJctsnLzurgZIiim+S4pIF9GWTg/p test@example"
)
SHA256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

# (source, command line, the secret or the secrets it holds)
SECRETS: list[tuple[str, str, list[str]]] = [
    # encoded, fed to a decoder
    (
        "echo-b64-openssh-key",
        f"echo {b64(OPENSSH_PEM)} | base64 -d > ~/.ssh/id_ed25519",
        [b64(OPENSSH_PEM)],
    ),
    ("echo-b64-github", f"echo {b64(GITHUB)} | base64 --decode", [b64(GITHUB)]),
    (
        "herestring-b64-aws-line",
        "base64 --decode <<< '"
        + b64("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY9\n")
        + "' >> ~/.aws/credentials",
        [b64("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY9\n")],
    ),
    (
        "herestring-b64-dsn",
        f"base64 -d <<< {b64('postgres://app:Pg5ecretDsn@db1:5432/app')} > /run/dsn",
        [b64("postgres://app:Pg5ecretDsn@db1:5432/app")],
    ),
    ("xxd-herestring-github", f"xxd -r -p <<< {hexed(GITHUB)}", [hexed(GITHUB)]),
    (
        "echo-hex-xxd-slack",
        f"echo {hexed(SLACK)} | xxd -r -p > /etc/slack/token",
        [hexed(SLACK)],
    ),
    ("printf-hex-escapes-stripe", f"printf '{escaped(STRIPE)}' > key.txt", [escaped(STRIPE)]),
    (
        "echo-openssl-base64-d",
        f"echo {b64(SLACK)} | openssl base64 -d -A > token",
        [b64(SLACK)],
    ),
    (
        "openssl-enc-base64-herestring",
        f"openssl enc -base64 -d <<< '{b64('DB_PASSWORD=Enc0dedDbPw9')}'",
        [b64("DB_PASSWORD=Enc0dedDbPw9")],
    ),
    (
        "python-b64decode",
        f"python3 -c \"import base64; print(base64.b64decode('{b64(ANTHROPIC)}').decode())\"",
        [b64(ANTHROPIC)],
    ),
    (
        "python-fromhex",
        f"python3 -c \"print(bytes.fromhex('{hexed(GITHUB)}').decode())\" > tok",
        [hexed(GITHUB)],
    ),
    (
        "echo-n-b64-env-line",
        f"echo -n {b64('SMTP_PASSWORD=M4ilRelayPw')} | base64 -d >> .env",
        [b64("SMTP_PASSWORD=M4ilRelayPw")],
    ),
    (
        "b64-json-client-secret",
        "echo '"
        + b64('{"client_id":"app","client_secret":"Cl1entS3cretV4lue"}')
        + "' | base64 -d > oauth.json",
        [b64('{"client_id":"app","client_secret":"Cl1entS3cretV4lue"}')],
    ),
    (
        "herestring-b64-rsa-pem",
        f"base64 -d <<< '{b64(RSA_PEM)}' > /etc/ssl/private/app.key",
        [b64(RSA_PEM)],
    ),
    (
        "perl-decode-base64",
        f"perl -MMIME::Base64 -e 'print decode_base64(\"{b64(STRIPE)}\")'",
        [b64(STRIPE)],
    ),
    (
        "node-buffer-from-base64",
        f"node -e \"console.log(Buffer.from('{b64(GITHUB)}', 'base64').toString())\"",
        [b64(GITHUB)],
    ),
    (
        "echo-base32-decode",
        f"echo {base64.b32encode(GITHUB.encode()).decode()} | base32 -d",
        [base64.b32encode(GITHUB.encode()).decode()],
    ),
    (
        "printf-octal-escapes",
        "printf '" + "".join(f"\\{byte:03o}" for byte in SLACK.encode()) + "' | tee tok",
        ["".join(f"\\{byte:03o}" for byte in SLACK.encode())],
    ),
    (
        "echo-e-hex-escapes",
        f'echo -e "{escaped("redis://:R3disAuthPw@cache:6379")}" > url',
        [escaped("redis://:R3disAuthPw@cache:6379")],
    ),
    # split over a line continuation or over quotes
    (
        "jwt-backslash-newline",
        f'curl -H "Authorization: Bearer {JWT[:60]}\\\n{JWT[60:]}" https://api.local/v1',
        [JWT[:60], JWT[60:]],
    ),
    (
        "github-quote-concatenation",
        f"echo \"{GITHUB[:4]}\"'{GITHUB[4:]}' | gh auth login --with-token",
        [GITHUB[4:]],
    ),
    ("slack-quote-concatenation", f"echo '{SLACK[:16]}'\"{SLACK[16:]}\" > tok", [SLACK[16:]]),
    (
        "github-unquoted-continuation",
        f"git remote set-url origin https://github.com/acme/app.git && echo {GITHUB[:20]}\\\n"
        f"{GITHUB[20:]} > ~/.config/gh-token",
        [GITHUB[:20], GITHUB[20:]],
    ),
    (
        "anthropic-three-quotes",
        f"export X=\"{ANTHROPIC[:14]}\"'{ANTHROPIC[14:40]}'{ANTHROPIC[40:]}",
        [ANTHROPIC[14:40], ANTHROPIC[40:]],
    ),
    (
        "jwt-heredoc-two-lines",
        f"cat > /run/token <<EOF\n{JWT[:50]}\n{JWT[50:]}\nEOF",
        [JWT[:50], JWT[50:]],
    ),
    (
        "stripe-dollar-quote-split",
        f"echo $'{STRIPE[:8]}'\"{STRIPE[8:]}\" > stripe.key",
        [STRIPE[8:]],
    ),
    # key material without its header, written to a key file
    ("echo-ed25519-body-key-file", f"echo {ED25519_BODY} > private.key", [ED25519_BODY]),
    (
        "tee-ssh-key-herestring",
        f"tee ~/.ssh/id_ed25519 <<< '{''.join(OPENSSH_BODY)}'",
        ["".join(OPENSSH_BODY)],
    ),
    (
        "wg-private-key-process-substitution",
        f"wg set wg0 private-key <(echo {WG_PRIVATE})",
        [WG_PRIVATE],
    ),
    (
        "cat-heredoc-rsa-body",
        "cat > id_rsa <<EOF\n" + "\n".join(RSA_BODY) + "\nEOF",
        RSA_BODY[:13],
    ),
    (
        "echo-wg-privatekey-line",
        f"echo 'PrivateKey = {WG_PRIVATE}' | sudo tee -a /etc/wireguard/wg0.conf",
        [WG_PRIVATE],
    ),
    (
        "printf-ec-body-pem-file",
        "printf '%s\\n' " + " ".join(EC_BODY) + " > /etc/ssl/private/ec.pem",
        EC_BODY,
    ),
    (
        "echo-b64-der-key-decoded",
        f"echo {''.join(EC_BODY)} | base64 -d > ec.der",
        ["".join(EC_BODY)],
    ),
    ("wg-privatekey-echo-file", f"echo {WG_PRIVATE} > /etc/wireguard/private.key", [WG_PRIVATE]),
    # credential-file lines
    (
        "echo-pgpass",
        "echo 'db.internal:5432:app:app_user:Pgp4ssW0rd' >> ~/.pgpass",
        ["Pgp4ssW0rd"],
    ),
    ("echo-pgpass-wildcards", 'echo "*:*:*:postgres:Sup3rPgAll" > ~/.pgpass', ["Sup3rPgAll"]),
    (
        "printf-netrc-format",
        "printf 'machine api.heroku.com login me@x.io password %s\\n' Hr0kuN3trcPw >> ~/.netrc",
        ["Hr0kuN3trcPw"],
    ),
    (
        "echo-netrc-line",
        "echo 'machine nexus.local login deploy password N3xusDepl0y' >> ~/.netrc",
        ["N3xusDepl0y"],
    ),
    (
        "printf-my-cnf",
        "printf '[client]\\nuser=root\\npassword=MyCnfR00tPw\\n' > ~/.my.cnf",
        ["MyCnfR00tPw"],
    ),
    (
        "printf-pypirc",
        "printf '[testpypi]\\nusername = alice\\npassword = PyP1rcUpload\\n' > ~/.pypirc",
        ["PyP1rcUpload"],
    ),
    (
        "echo-npmrc-password",
        "echo '//npm.acme.local/:_password=bnBtUGFzc3dvcmQ5' >> ~/.npmrc",
        ["bnBtUGFzc3dvcmQ5"],
    ),
    (
        "heredoc-aws-credentials",
        "cat >> ~/.aws/credentials <<EOF\n[prod]\naws_access_key_id = AKIAZ7QX3MPLE4RT2YQ9\n"
        "aws_secret_access_key = Qm9v2Lx7Tb3Nc8Rz4Kd1Wp6Yh0Sf5Gj2Ae9Ui3Oe\nEOF",
        ["Qm9v2Lx7Tb3Nc8Rz4Kd1Wp6Yh0Sf5Gj2Ae9Ui3Oe"],
    ),
    (
        "tee-pgpass-pipe",
        "echo 'localhost:*:*:replicator:R3plic8Slot' | tee -a /var/lib/postgresql/.pgpass",
        ["R3plic8Slot"],
    ),
    (
        "heredoc-pgpass",
        "cat >> ~/.pgpass <<'EOF'\n10.0.0.7:5432:*:backup:B4ckupPgPw\nEOF",
        ["B4ckupPgPw"],
    ),
    (
        "heredoc-netrc-multiline",
        "cat > ~/.netrc <<EOF\nmachine ftp.acme.local\n  login mirror\n"
        "  password Ftp4cmeM1rror\nEOF",
        ["Ftp4cmeM1rror"],
    ),
    (
        "echo-pgpass-ipv6",
        "echo '[::1]:5432:app:app:L0opb4ckPw' >> /root/.pgpass",
        ["L0opb4ckPw"],
    ),
    (
        "tee-my-cnf-herestring",
        "tee /etc/mysql/debian.cnf <<< "
        "$'[client]\\nuser = debian-sys-maint\\npassword = D3bSysM4int'",
        ["D3bSysM4int"],
    ),
    (
        "printf-credentials-plain",
        "printf 'machine %s login %s password %s\\n' git.acme.local ci G1tC1Passw > ~/.netrc",
        ["G1tC1Passw"],
    ),
    # SQL on standard input
    (
        "psql-herestring-alter-user",
        "psql -h db1 -U postgres <<< \"ALTER USER app WITH PASSWORD 'Alt3rPgPw!'\"",
        ["Alt3rPgPw!"],
    ),
    (
        "echo-mysql-identified-by",
        "echo \"CREATE USER 'rep'@'%' IDENTIFIED BY 'Rep1Pass77';\" | mysql -uroot",
        ["Rep1Pass77"],
    ),
    (
        "sqlplus-heredoc-identified-unquoted",
        "sqlplus / as sysdba <<EOF\nALTER USER system IDENTIFIED BY Orcl3SysPw;\nEOF",
        ["Orcl3SysPw"],
    ),
    (
        "mysql-set-password-echo",
        "echo \"SET PASSWORD FOR 'bob'@'localhost' = PASSWORD('B0bSetPw4');\" | mysql",
        ["B0bSetPw4"],
    ),
    (
        "psql-heredoc-create-role",
        "psql <<'SQL'\nCREATE ROLE ci LOGIN PASSWORD 'C1RolePass';\nSQL",
        ["C1RolePass"],
    ),
    (
        "mariadb-herestring-grant",
        "mariadb <<< \"GRANT ALL ON *.* TO 'x'@'%' IDENTIFIED BY 'Gr4ntPass'\"",
        ["Gr4ntPass"],
    ),
    (
        "clickhouse-identified-with",
        "clickhouse-client <<< \"CREATE USER u IDENTIFIED WITH sha256_password BY 'Ch1ckPw99'\"",
        ["Ch1ckPw99"],
    ),
    (
        "sqlcmd-alter-login",
        "sqlcmd -S db1 -U sa <<< \"ALTER LOGIN app WITH PASSWORD = 'Mssq1LoginPw'\"",
        ["Mssq1LoginPw"],
    ),
    (
        "mysql-set-password-new-syntax",
        "mysql -uroot <<EOF\nSET PASSWORD FOR 'web'@'%' = 'W3bN3wPw';\nEOF",
        ["W3bN3wPw"],
    ),
    (
        "psql-pipe-printf-password",
        "printf \"ALTER ROLE replicator PASSWORD '%s';\\n\" R3pl1c4Pw | psql -U postgres",
        ["R3pl1c4Pw"],
    ),
]

BENIGN: list[tuple[str, str]] = [
    ("b64-plain-text", f"echo {b64('hello world from the gate, nothing here')} | base64 -d"),
    ("base64-d-file", "base64 -d secret.b64 > secret.bin"),
    ("base64-encode-file", "base64 -w0 /etc/hostname"),
    ("xxd-file", "xxd /bin/ls | head -20"),
    ("xxd-r-file", "xxd -r -p dump.hex > out.bin"),
    ("sha256-check", f'echo "{SHA256}  release.tar.gz" | sha256sum -c'),
    ("git-show-sha", "git show 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a --stat"),
    ("authorized-keys", f"echo '{SSH_PUBLIC}' >> ~/.ssh/authorized_keys"),
    ("ssh-keygen-pub", "ssh-keygen -y -f ~/.ssh/id_ed25519 > ~/.ssh/id_ed25519.pub"),
    (
        "cert-der-inspect",
        f"echo {''.join(CERT_BODY)} | base64 -d | openssl x509 -inform der -noout -text",
    ),
    (
        "cert-heredoc",
        "cat > ca.crt <<EOF\n-----BEGIN CERTIFICATE-----\n"
        + "\n".join(CERT_BODY)
        + "\n-----END CERTIFICATE-----\nEOF",
    ),
    ("bashrc-path", "echo 'export PATH=$HOME/bin:$PATH' >> ~/.bashrc"),
    ("bashrc-alias", "echo 'alias ll=\"ls -la\"' >> ~/.bashrc"),
    ("printf-color-escapes", "printf '\\x1b[31mred\\x1b[0m\\n'"),
    ("netrc-no-password", "printf 'machine example.com login anonymous\\n' >> ~/.netrc"),
    ("psql-select-shadow", 'psql <<< "SELECT usename, passwd IS NOT NULL FROM pg_shadow"'),
    ("mysql-select-users", 'echo "SELECT user, host FROM mysql.user;" | mysql -uroot'),
    ("sqlplus-heredoc-select", "sqlplus / as sysdba <<EOF\nSELECT username FROM dba_users;\nEOF"),
    ("echo-variable-key", 'echo "$WG_KEY" > private.key'),
    ("wg-genkey-pipe", "wg genkey | tee privatekey | wg pubkey > publickey"),
    ("wg-private-key-file", "wg set wg0 private-key /etc/wireguard/private.key"),
    ("wg-peer-public-key", f"wg set wg0 peer {WG_PUBLIC} allowed-ips 10.0.0.2/32"),
    ("ssh-config-herestring", "tee -a ~/.ssh/config <<< 'Host bastion'"),
    ("continuation-plain", 'echo "line one" \\\n  "line two" > notes.txt'),
    ("python-b64encode", "python3 -c \"import base64; print(base64.b64encode(b'hello'))\""),
    ("xxd-hex-plain-text", f"xxd -r -p <<< {hexed('Hello, world! Nothing to see here.')}"),
    ("jwt-header-only", "echo '" + b64url('{"alg":"none","typ":"JWT"}') + "' | base64 -d"),
    ("openssl-base64-file", "openssl base64 -d -in cert.b64 -out cert.der"),
    ("docker-digest", f"docker pull nginx@sha256:{SHA256}"),
    ("sshd-config-tee", "echo 'PubkeyAuthentication yes' | sudo tee -a /etc/ssh/sshd_config"),
    ("psql-password-null", 'psql <<< "ALTER ROLE app PASSWORD NULL"'),
    ("quote-concatenation-plain", 'echo "release-"\'2024.11.3\'"-final" > VERSION'),
]


def main() -> None:
    write_cases("cmdline_decode_cases.jsonl", SECRETS, BENIGN, {"written": "before-decode-rules"})


if __name__ == "__main__":
    main()
