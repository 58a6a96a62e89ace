"""Writes cmdline_cases.jsonl: secrets typed on command lines (issue 33, cause 10, the red
team's second round: 11 of 23 command lines reached the log), and read-only command lines
that hold none. Written and labelled before the command-line rules were: every third case of
each kind (`blind`: true) is never looked at while the rules are tuned.

    python tests/data/secrets/make_cmdline_corpus.py
"""

from __future__ import annotations

import json
from pathlib import Path

# (source, command line, the secret or the secrets it holds)
SECRETS: list[tuple[str, str, list[str]]] = [
    ("htpasswd-bc", "htpasswd -bc /srv/auth/users carol Tr0ub4dor3", ["Tr0ub4dor3"]),
    (
        "htpasswd-Bb-cost",
        "htpasswd -Bb -C 12 /etc/apache2/.htpasswd dave 'blue horse 77'",
        ["blue horse 77"],
    ),
    ("htpasswd-nbB", "htpasswd -nbB admin 'Adm1n pw'", ["Adm1n pw"]),
    ("chpasswd-printf", "printf 'svc_backup:Wint3r2024\\n' | sudo chpasswd", ["Wint3r2024"]),
    ("chpasswd-herestring", "chpasswd <<< 'deploy:Qz8!mkLp'", ["Qz8!mkLp"]),
    ("passwd-stdin-twice", "echo -e 'Pa55word1\\nPa55word1' | passwd alice", ["Pa55word1"]),
    ("passwd-stdin-flag", "echo 'Str0ngRoot' | passwd --stdin root", ["Str0ngRoot"]),
    (
        "openssl-enc-k-quoted",
        "openssl enc -d -aes-256-cbc -pbkdf2 -in backup.enc -out backup.tar -k 'corr3ct-h0rse'",
        ["corr3ct-h0rse"],
    ),
    ("openssl-passwd", "useradd -m -p \"$(openssl passwd -6 'N3wUs3r!')\" newuser", ["N3wUs3r!"]),
    (
        "openssl-pkcs12-pass",
        "openssl pkcs12 -export -in c.pem -inkey k.pem -out c.p12 -password pass:P12export7",
        ["P12export7"],
    ),
    ("sudo-S-echo", "echo Mellon99 | sudo -S systemctl restart nginx", ["Mellon99"]),
    ("sudo-S-herestring", "sudo -S apt-get update <<< 'S3udoPw'", ["S3udoPw"]),
    ("sudo-S-printf-user", "printf '%s\\n' 'Tr4in-Pw' | sudo -S -u deploy ls /srv", ["Tr4in-Pw"]),
    (
        "aws-configure-session-token",
        "aws configure set aws_session_token IQoJb3JpZ2luX2VjEOr8wEaCXVzLWVhc3QtMSJHMEUCIQD",
        ["IQoJb3JpZ2luX2VjEOr8wEaCXVzLWVhc3QtMSJHMEUCIQD"],
    ),
    (
        "aws-configure-profile-secret",
        "aws configure set default.aws_secret_access_key 9drTJvcXLB89b7Pn2zKXqgkE5vPQ2j6Ar",
        ["9drTJvcXLB89b7Pn2zKXqgkE5vPQ2j6Ar"],
    ),
    (
        "aws-configure-profile-flag",
        "aws configure set aws_secret_access_key Zq81mPp0e7Lw --profile staging",
        ["Zq81mPp0e7Lw"],
    ),
    (
        "mysql-p-attached",
        "mysql -h db1 -u report -pR3portRead! analytics -e 'select 1'",
        ["R3portRead!"],
    ),
    (
        "mysqldump-password-quoted",
        "mysqldump --password='dump pw 9' --all-databases > all.sql",
        ["dump pw 9"],
    ),
    ("mysqladmin-password-subcommand", "mysqladmin -uroot password 'N3wR00tPw'", ["N3wR00tPw"]),
    ("sshpass-quoted", "sshpass -p 'Ubuntu#2023' ssh admin@10.0.0.5 uptime", ["Ubuntu#2023"]),
    (
        "curl-user-long",
        "curl --user ops:Gr4fana_adm https://grafana.local/api/health",
        ["Gr4fana_adm"],
    ),
    (
        "wget-http-password",
        "wget --http-password=Nex7us! --http-user=admin https://nexus.local/repo/x.jar",
        ["Nex7us!"],
    ),
    (
        "wget-ftp-password-spaced",
        "wget --ftp-password 'anon2pw' ftp://mirror.local/pub/file",
        ["anon2pw"],
    ),
    ("psql-conninfo", 'psql "host=db.local dbname=app user=app password=Pgs3cret9"', ["Pgs3cret9"]),
    ("psql-alter-user", "psql -c \"ALTER USER app WITH PASSWORD 'Alt3rPw'\"", ["Alt3rPw"]),
    (
        "mysql-create-user",
        "mysql -e \"CREATE USER 'rep'@'%' IDENTIFIED BY 'Cr3ateUs'\"",
        ["Cr3ateUs"],
    ),
    ("redis-config-requirepass", "redis-cli CONFIG SET requirepass R3qPass", ["R3qPass"]),
    ("redis-auth", "redis-cli -h cache AUTH default Au7hRedis", ["Au7hRedis"]),
    (
        "smbclient-domain-user",
        "smbclient //fs01/share -U 'CORP\\jsmith%Autumn#21' -c ls",
        ["Autumn#21"],
    ),
    (
        "vault-login-legacy-token",
        "vault login s.Xy7Qw9ErTy12UiOp34AsDfGh",
        ["s.Xy7Qw9ErTy12UiOp34AsDfGh"],
    ),
    (
        "vault-login-userpass",
        "vault login -method=userpass username=ops password=V4ultOps!",
        ["V4ultOps!"],
    ),
    ("vault-kv-put-pass", "vault kv put secret/app db_pass=Kv2Pass!", ["Kv2Pass!"]),
    (
        "gh-with-token-echo",
        "echo 'not_a_known_shape_token_91x' | gh auth login --with-token",
        ["not_a_known_shape_token_91x"],
    ),
    (
        "docker-password-stdin",
        "echo 'Gh0stKey' | docker login --password-stdin -u bot reg",
        ["Gh0stKey"],
    ),
    (
        "podman-password-stdin",
        "echo -n 'QuayRob0t' | podman login --password-stdin quay.io",
        ["QuayRob0t"],
    ),
    ("docker-secret-create", "printf 'Sw4rmPw' | docker secret create db_pw -", ["Sw4rmPw"]),
    ("sshpass-env", "SSHPASS='Ss7pass!' sshpass -e ssh root@h uptime", ["Ss7pass!"]),
    (
        "cryptsetup-herestring",
        "cryptsetup luksOpen /dev/sdb1 data <<< 'luksPhrase77'",
        ["luksPhrase77"],
    ),
    ("rabbitmq-add-user", "rabbitmqctl add_user monitor Rabb1tMon", ["Rabb1tMon"]),
    ("rabbitmq-change-password", "rabbitmqctl change_password guest N0tGuest!", ["N0tGuest!"]),
    ("mosquitto-P", "mosquitto_pub -h mq -u iot -P Mq77pass -t t -m hi", ["Mq77pass"]),
    ("sqlcmd-P", "sqlcmd -S db01 -U sa -P 'SqlSa#2019' -Q 'select 1'", ["SqlSa#2019"]),
    (
        "ipmitool-P",
        "ipmitool -I lanplus -H 10.0.0.9 -U ADMIN -P Ipm1Adm1n chassis status",
        ["Ipm1Adm1n"],
    ),
    (
        "snmp-v3-A-X",
        "snmpwalk -v3 -u mon -l authPriv -a SHA -A Snmp4uthPw -x AES -X Snmp9rivPw 10.2.0.1",
        ["Snmp4uthPw", "Snmp9rivPw"],
    ),
    ("snmp-community", "snmpget -v2c -c s3cr3tcomm 10.1.1.1 sysDescr.0", ["s3cr3tcomm"]),
    (
        "mc-alias-set",
        "mc alias set minio http://minio:9000 minioadmin M1n10S3cretKey",
        ["M1n10S3cretKey"],
    ),
    (
        "nmcli-wifi-password",
        "nmcli dev wifi connect HomeNet password 'wifi pass 1'",
        ["wifi pass 1"],
    ),
    ("wpa-passphrase", "wpa_passphrase HomeNet Wlan2Secret > /etc/wpa.conf", ["Wlan2Secret"]),
    ("ftp-heredoc-user", "ftp -n ftp.corp <<EOF\nuser bob Ftp9Pass\nls\nbye\nEOF", ["Ftp9Pass"]),
    ("lftp-u", "lftp -u backup,Lftp7pw sftp://bk.corp -e 'ls; bye'", ["Lftp7pw"]),
    (
        "ssh-keygen-change",
        "ssh-keygen -p -P 0ldPhrase -N N3wPhrase -f ~/.ssh/id_ed25519",
        ["0ldPhrase", "N3wPhrase"],
    ),
    ("ssh-keygen-new", "ssh-keygen -t ed25519 -N 'k3y phrase' -f k", ["k3y phrase"]),
    ("xfreerdp-p", "xfreerdp /u:admin /p:Rdp#Pass1 /v:10.0.0.3", ["Rdp#Pass1"]),
    ("rdesktop-p", "rdesktop -u admin -p RdPw22 host", ["RdPw22"]),
    ("sqlplus-userpass", "sqlplus system/Orac1ePw@ORCL", ["Orac1ePw"]),
    ("sqlplus-silent-quoted", "sqlplus -s 'scott/Tig3r@//db:1521/XE' @q.sql", ["Tig3r"]),
    (
        "curl-oauth2-bearer",
        "curl --oauth2-bearer 'fakeBearerTok77x' https://api.corp/v1",
        ["fakeBearerTok77x"],
    ),
    ("bw-unlock", "bw unlock 'Bitw4rdMaster'", ["Bitw4rdMaster"]),
    ("usermod-p", "usermod -p 'HashOrPw' bob", ["HashOrPw"]),
    (
        "ldappasswd-s",
        "ldappasswd -x -D cn=admin,dc=corp -w AdmPw4x -s NewUs3rPw uid=bob",
        ["AdmPw4x", "NewUs3rPw"],
    ),
    (
        "expect-send",
        "expect -c 'spawn ssh host; expect password:; send \"Exp3ctPw\\r\"; interact'",
        ["Exp3ctPw"],
    ),
    ("sudo-wrapped-htpasswd", "sudo htpasswd -b /etc/nginx/.htpasswd erin Er1nPass", ["Er1nPass"]),
    (
        "ssh-remote-mysql",
        "ssh db1 'mysql -uroot -pRem0teRoot -e \"show databases\"'",
        ["Rem0teRoot"],
    ),
    ("bash-c-chpasswd", "bash -c \"echo 'frank:Fr4nkPw' | chpasswd\"", ["Fr4nkPw"]),
    (
        "export-token-var",
        "export NOMAD_TOKEN=4f1c9e2a-77b0-4d1e-9e3b-2c5a1f0d8e6b",
        ["4f1c9e2a-77b0-4d1e-9e3b-2c5a1f0d8e6b"],
    ),
    ("env-key-var", "env CONSUL_HTTP_TOKEN=cnsl-8812-aa ./deploy.sh", ["cnsl-8812-aa"]),
    ("smbpasswd-stdin", "(echo 'SmbPw1'; echo 'SmbPw1') | smbpasswd -s -a alice", ["SmbPw1"]),
    ("rclone-obscure", "rclone obscure 'Rcl0nePlain'", ["Rcl0nePlain"]),
    (
        "zabbix-get-psk",
        'curl -X POST -d \'{"user":"Admin","password":"Zbx9pw"}\' https://zbx/api',
        ["Zbx9pw"],
    ),
    ("pgbouncer-psql-env", "PGPASSWORD=$'Ansi\\x43pw' psql -h db -U app", ["Ansi\\x43pw"]),
]

# Read-only command lines without a secret: what they log must be exactly what was typed.
BENIGN: list[tuple[str, str]] = [
    ("grep-password-etc", "grep -r password /etc"),
    ("grep-PasswordAuthentication", "grep -rn 'PasswordAuthentication' /etc/ssh"),
    ("openssl-x509-text", "openssl x509 -in cert -noout -text"),
    ("openssl-s-client", "openssl s_client -connect example.com:443 -servername example.com"),
    ("aws-s3-ls", "aws s3 ls"),
    ("aws-configure-list", "aws configure list"),
    ("aws-configure-get", "aws configure get region"),
    ("htpasswd-verify", "htpasswd -v /etc/nginx/.htpasswd alice"),
    ("htpasswd-delete", "htpasswd -D /etc/nginx/.htpasswd alice"),
    ("mysql-p-prompt", "mysql -u report -p analytics"),
    ("mysql-p-e", "mysql -h db -u app -p -e 'show tables'"),
    ("psql-select", "psql -h db -U app -d app -c 'select count(*) from users'"),
    ("redis-info", "redis-cli -h cache INFO keyspace"),
    ("curl-u-prompt", "curl -u admin https://grafana/api/health"),
    ("kubectl-get-secret", "kubectl get secret db -o yaml"),
    ("vault-login-oidc", "vault login -method=oidc"),
    ("vault-status", "vault status"),
    ("export-path", "export PATH=/usr/local/bin:$PATH"),
    ("echo-to-tee", "echo hello | sudo tee /tmp/x"),
    ("echo-cut", "echo 'alice:x:1001' | cut -d: -f1"),
    ("cat-passwd-cut", "cat /etc/passwd | cut -d: -f1,7"),
    ("git-clone-public", "git clone https://github.com/org/repo.git"),
    ("docker-login-prompt", "docker login harbor.corp"),
    ("docker-login-stdin-file", "docker login -u robot --password-stdin harbor.corp < pw.txt"),
    ("sshpass-file", "sshpass -f /root/.pw ssh host uptime"),
    ("smbclient-list", "smbclient -L //fs01 -U jsmith"),
    ("ldapsearch-anon", "ldapsearch -x -H ldap://dc -b dc=corp '(uid=bob)'"),
    ("openssl-pass-file", "openssl enc -d -aes-256-cbc -in f -out g -pass file:/root/key.txt"),
    ("openssl-rand", "openssl rand -hex 16"),
    ("ssh-keygen-fingerprint", "ssh-keygen -l -f ~/.ssh/id_ed25519.pub"),
    ("getent-passwd", "getent passwd alice"),
    ("passwd-status", "passwd -S alice"),
    ("journalctl-failed-password", "journalctl -u sshd | grep 'Failed password'"),
    ("env-grep-proxy", "env | grep -i proxy"),
    ("sudo-l", "sudo -l"),
    ("sudo-systemctl-status", "sudo systemctl status nginx"),
    ("aws-sts", "aws sts get-caller-identity"),
    ("kubectl-config-view", "kubectl config view --minify"),
    ("rabbitmq-list-users", "rabbitmqctl list_users"),
    ("ipmitool-pw-file", "ipmitool -I lanplus -H 10.0.0.9 -U ADMIN -f /root/ipmi.pw sensor"),
    ("sudo-S-dynamic", 'echo "$SUDO_PW" | sudo -S true'),
    ("chpasswd-from-file", "chpasswd < /root/new-passwords"),
    ("mc-alias-list", "mc alias list"),
    ("nmcli-list", "nmcli dev wifi list"),
    ("ssh-keygen-N-empty", "ssh-keygen -t ed25519 -N '' -f /tmp/k"),
]


def write_cases(
    name: str,
    secrets: list[tuple[str, str, list[str]]],
    benign: list[tuple[str, str]],
    extra: dict[str, object] | None = None,
    blind: bool | None = None,
) -> None:
    """Write `name` beside this script: the secrets (true positives, whose first piece is the
    secret) then the plain lines, every third of each kind blind unless `blind` says for all;
    `extra` fields in every row."""
    rows: list[dict[str, object]] = []
    for index, (source, text, pieces) in enumerate(secrets):
        assert all(piece in text or piece.replace("\\", "\\\\") in text for piece in pieces), source
        rows.append(
            {
                "source": source,
                "kind": "tp",
                "text": text,
                "secret": pieces[0],
                "pieces": pieces,
                "field": "command",
                **(extra or {}),
                "blind": index % 3 == 2 if blind is None else blind,
            }
        )
    for index, (source, text) in enumerate(benign):
        rows.append(
            {
                "source": source,
                "kind": "fp",
                "text": text,
                "secret": "",
                "field": "command",
                **(extra or {}),
                "blind": index % 3 == 2 if blind is None else blind,
            }
        )
    out = Path(__file__).with_name(name)
    out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"{len(secrets)} secrets, {len(benign)} benign lines -> {out}")


def main() -> None:
    write_cases("cmdline_cases.jsonl", SECRETS, BENIGN)


if __name__ == "__main__":
    main()
