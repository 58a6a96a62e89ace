"""The general layer of command-line secrets (`redact_argv_general`, issue 33, cause 10:
"of new kinds at most 5%"): secrets of tools and shapes no per-tool rule names.

The corpus is tests/data/secrets/cmdline_general_cases.jsonl, made by
make_cmdline_general_corpus.py beside it and committed before any rule for its shapes: 58
secrets (options whose name says secret on tools no rule knows, dynamic and path command
names, `user:password` in any word, code given to python/node/perl/ruby/php/pwsh, SQL of
any client, request bodies, here-documents and here-strings, keys and verbs that name the
secret) and 22 lines of the same shapes that hold none (`--password-file`, `--token-url`,
`--auth-type`, `--secret-id`, `secret_id_ttl=`, `--passwd-length`, `"$OPS_PASSWORD"`,
placeholders). Its first run on main: 26 of 58 reached the log (dev 13 of 39, blind 13 of 19)
and 8 of 22 plain lines were changed. With the general layer: 0 of 58 and 0 of 22. The same
person wrote the corpus and the layer, so its blind part is weak evidence. FURTHER holds 50
more secrets of other shapes, written after the layer and before it was tuned on them: 3
leaked at first (`aws ssm put-parameter --value X --type SecureString`, a default after `||`
in node code, `printf 'DB_PASSWORD=%s' X`), 0 after; on main 12 of 50 leak. HARMLESS holds
184 plainly read-only investigator commands: main changes 7 of them (`docker run -p
8080:80`, `ssh -o PasswordAuthentication=no`, `--secret-id NAME`, ...), this layer none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.redact import Redactor
from test_gate_secrets_cmdline import exec_line, leaks, strings_of

ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data/secrets/cmdline_general_cases.jsonl")
    .read_text()
    .splitlines()
]
SECRETS = [row for row in ROWS if row["kind"] == "tp"]
BENIGN = [row for row in ROWS if row["kind"] == "fp"]


def shown(text: str) -> str:
    """`text` with each marker's kind and hash left out: what was replaced, not by which rule."""
    return re.sub(r"\[REDACTED:[\w-]+:[0-9a-f]{6}\]", "[REDACTED]", text)


def test_the_corpus_is_labelled_and_a_third_is_blind() -> None:
    assert len(SECRETS) >= 40 and len(BENIGN) >= 20
    assert all(piece and piece in row["text"] for row in SECRETS for piece in row["pieces"])
    assert sum(row["blind"] for row in SECRETS) * 3 >= len(SECRETS) - 2
    assert len({row["source"] for row in ROWS}) == len(ROWS)
    assert {row["written"] for row in ROWS} == {"before-general-rules"}


@pytest.mark.parametrize("row", SECRETS, ids=[row["source"] for row in SECRETS])
def test_a_secret_of_a_shape_no_rule_names_does_not_reach_the_log(row: dict[str, object]) -> None:
    redacted = Redactor().redact_command(str(row["text"]))
    assert not leaks(redacted, row["pieces"]), redacted  # type: ignore[arg-type]


def test_the_corpus_totals() -> None:
    redactor = Redactor()
    leaked = [
        row["source"]
        for row in SECRETS
        if leaks(redactor.redact_command(row["text"]), row["pieces"])
    ]
    changed = [
        row["source"] for row in BENIGN if redactor.redact_command(row["text"]) != row["text"]
    ]
    assert (len(leaked), len(changed)) == (0, 0), (leaked, changed)
    assert (len(SECRETS), len(BENIGN)) == (58, 22)


@pytest.mark.parametrize("row", BENIGN, ids=[row["source"] for row in BENIGN])
def test_a_line_of_the_same_shapes_without_a_secret_is_logged_as_typed(
    row: dict[str, object],
) -> None:
    assert Redactor().redact_command(str(row["text"])) == row["text"]


EXACT = [
    ("$TOOL --password DynPw123", "$TOOL --password [REDACTED]"),
    ('"$(command -v mysql)" -pMyDyn99', '"$(command -v mysql)" -p[REDACTED]'),
    ("/opt/x/bin/tool --token OptTok99", "/opt/x/bin/tool --token [REDACTED]"),
    ("s3cmd --secret_key X9sEcret ls", "s3cmd --secret_key [REDACTED] ls"),
    ("influx -password Infl8xPw", "influx -password [REDACTED]"),
    ("acme-sync --apiToken AcmeT0k55x --dry-run", "acme-sync --apiToken [REDACTED] --dry-run"),
    ("nuget push p.nupkg -ApiKey NugetK3y9x", "nuget push p.nupkg -ApiKey [REDACTED]"),
    ("gradle publish -PossrhPassword=OssrhPw77", "gradle publish -PossrhPassword=[REDACTED]"),
    (
        "tool --client-secret=Cl1entSecr3t --client-id app",
        "tool --client-secret=[REDACTED] --client-id app",
    ),
    (
        (
            "tool --password-file /run/pw --token-url https://id/token --auth-type basic "
            "--secret-name db --token-ttl 3600 --passwd-length 24"
        ),
        (
            "tool --password-file /run/pw --token-url https://id/token --auth-type basic "
            "--secret-name db --token-ttl 3600 --passwd-length 24"
        ),
    ),
    ("tool --key 4f3c2b1a9e8d7c6b5a4f3e2d1c0b9a8f", "tool --key [REDACTED]"),
    ("tool --key logs/app.log", "tool --key logs/app.log"),
    ("tool -u deploy:Dep1oyPw https://h", "tool -u deploy:[REDACTED] https://h"),
    ("tool --user=deploy:Dep1oyPw https://h", "tool --user=deploy:[REDACTED] https://h"),
    ("docker run -u 1000:1000 -p 8080:80 nginx", "docker run -u 1000:1000 -p 8080:80 nginx"),
    (
        "impacket-psexec 'CORP/admin:Imp4cketPw@10.0.0.5'",
        "impacket-psexec 'CORP/admin:[REDACTED]@10.0.0.5'",
    ),
    (
        "evil-winrm -i 10.0.0.5 -u Administrator -p 'Ev1lW1nRm!'",
        "evil-winrm -i 10.0.0.5 -u Administrator -p '[REDACTED]'",
    ),
    ("journalctl -u nginx -p err", "journalctl -u nginx -p err"),
    (
        "python3 -c \"connect(password='PyPw1234')\"",
        "python3 -c \"connect(password='[REDACTED]')\"",
    ),
    (
        "node -e \"db.connect({password: 'NodePw99'})\"",
        "node -e \"db.connect({password: '[REDACTED]'})\"",
    ),
    ("perl -e 'my $pass = \"PerlPw77\"; print 1'", "perl -e 'my $pass = \"[REDACTED]\"; print 1'"),
    ("ruby -e 'Conn.new(password: \"RubyPw55\")'", "ruby -e 'Conn.new(password: \"[REDACTED]\")'"),
    (
        'php -r \'$c = new mysqli("db", "root", "PhpMys9li");\'',
        'php -r \'$c = new mysqli("db", "root", "[REDACTED]");\'',
    ),
    (
        "python3 -c 'import bcrypt; print(bcrypt.hashpw(b\"Bcr7ptPw9\", bcrypt.gensalt()))'",
        "python3 -c 'import bcrypt; print(bcrypt.hashpw(b\"[REDACTED]\", bcrypt.gensalt()))'",
    ),
    (
        "psql -c \"ALTER USER u PASSWORD 'PgAlt3r'\"",
        "psql -c \"ALTER USER u PASSWORD '[REDACTED]'\"",
    ),
    (
        "mysql -uroot -e \"SET PASSWORD FOR 'app'@'%' = 'SetPwF0r9'\"",
        "mysql -uroot -e \"SET PASSWORD FOR 'app'@'%' = '[REDACTED]'\"",
    ),
    (
        "curl -s -d 'username=admin&password=F0rmPw77&remember=1' https://h/login",
        "curl -s -d 'username=admin&password=[REDACTED]&remember=1' https://h/login",
    ),
    (
        'curl --data-raw \'{"apiKey":"DataRawK3y55"}\' https://h/v1',
        'curl --data-raw \'{"apiKey":"[REDACTED]"}\' https://h/v1',
    ),
    (
        "mysql -u root <<'SQL'\nALTER USER 'root'@'localhost' IDENTIFIED BY 'HereD0cPw1';\nSQL",
        "mysql -u root <<'SQL'\nALTER USER 'root'@'localhost' IDENTIFIED BY '[REDACTED]';\nSQL",
    ),
    (
        "psql <<< \"ALTER ROLE app PASSWORD 'PsqlHs9Pw'\"",
        "psql <<< \"ALTER ROLE app PASSWORD '[REDACTED]'\"",
    ),
    (
        "git config --global sendemail.smtppass G1tSmtpPw9",
        "git config --global sendemail.smtppass [REDACTED]",
    ),
    ("git config --global credential.helper store", "git config --global credential.helper store"),
    (
        "neo4j-admin dbms set-initial-password Ne04jInit9",
        "neo4j-admin dbms set-initial-password [REDACTED]",
    ),
    (
        "jq -n --arg api_token JqArgT0k9 '{token: $api_token}'",
        "jq -n --arg api_token [REDACTED] '{token: $api_token}'",
    ),
    (
        "aws ssm put-parameter --name /app/db/password --value SsmVal9xyz --type SecureString",
        "aws ssm put-parameter --name /app/db/password --value [REDACTED] --type SecureString",
    ),
    (
        "printf 'DB_PASSWORD=%s\\n' Pr1ntfEnvPw >> .env",
        "printf 'DB_PASSWORD=%s\\n' [REDACTED] >> .env",
    ),
    ("export TOKEN_URL=https://auth.corp/token", "export TOKEN_URL=https://auth.corp/token"),
    (
        "cat <<'EOF' > app.env.example\nDB_PASSWORD=<password>\nAPI_TOKEN=${API_TOKEN}\nEOF",
        "cat <<'EOF' > app.env.example\nDB_PASSWORD=<password>\nAPI_TOKEN=${API_TOKEN}\nEOF",
    ),
    (
        '$CLI --user ops --password "$OPS_PASSWORD" status',
        '$CLI --user ops --password "$OPS_PASSWORD" status',
    ),
    ("ansible-playbook --ask-pass site.yml", "ansible-playbook --ask-pass site.yml"),
    (
        "mysql -e \"SELECT user FROM mysql.user WHERE password_expired = 'Y'\"",
        "mysql -e \"SELECT user FROM mysql.user WHERE password_expired = 'Y'\"",
    ),
    (
        "python3 -c 'import secrets; print(secrets.token_hex(16))'",
        "python3 -c 'import secrets; print(secrets.token_hex(16))'",
    ),
]


EXACT += [
    # a third round, written after the layer: tools that read a secret from standard input by
    # an option's name, samba's user%password, Oracle's unquoted IDENTIFIED BY and 14 more
    # shapes; `ab -A user:pass` and `security ... -w PASS` leaked at first (table entries)
    (
        "echo 'Arg0Stdin9' | argocd login cd.example.com --username admin --password-stdin",
        "echo '[REDACTED]' | argocd login cd.example.com --username admin --password-stdin",
    ),
    (
        "printf '%s' 'Tok3nStd1n' | custom-cli auth --token-stdin",
        "printf '%s' '[REDACTED]' | custom-cli auth --token-stdin",
    ),
    (
        "smbmap -H 10.0.0.5 -U 'CORP\\admin%Smbm4pPw'",
        "smbmap -H 10.0.0.5 -U 'CORP\\admin%[REDACTED]'",
    ),
    (
        "wmic -U 'CORP/admin%Wm1cPass' //10.0.0.5 'select * from Win32_OS'",
        "wmic -U 'CORP/admin%[REDACTED]' //10.0.0.5 'select * from Win32_OS'",
    ),
    (
        "sqlplus / as sysdba <<'SQL'\nALTER USER app IDENTIFIED BY Or4cleNew9;\nSQL",
        "sqlplus / as sysdba <<'SQL'\nALTER USER app IDENTIFIED BY [REDACTED];\nSQL",
    ),
    (
        "sqlcmd -S db -Q \"ALTER LOGIN sa WITH PASSWORD = 'SqlL0gin9x'\"",
        "sqlcmd -S db -Q \"ALTER LOGIN sa WITH PASSWORD = '[REDACTED]'\"",
    ),
    (
        'curl --data-urlencode "password=Urlenc0dePw" https://h/login',
        'curl --data-urlencode "password=[REDACTED]" https://h/login',
    ),
    (
        "kubectl set env deploy/api DB_PASSWORD=KubeEnvPw9",
        "kubectl set env deploy/api DB_PASSWORD=[REDACTED]",
    ),
    ("doppler secrets set API_KEY DopplerV4l9", "doppler secrets set API_KEY [REDACTED]"),
    (
        "docker build --build-arg NPM_TOKEN=BuildArgTok9 .",
        "docker build --build-arg NPM_TOKEN=[REDACTED] .",
    ),
    (
        "op item create --category login --title db password=0nePassw9",
        "op item create --category login --title db password=[REDACTED]",
    ),
    ("curl 'https://h/api?apikey=QueryK3y99x&q=1'", "curl 'https://h/api?apikey=[REDACTED]&q=1'"),
    (
        (
            'pwsh -c "Invoke-RestMethod -Uri https://h -Headers '
            "@{Authorization='Bearer PwshB3arer99'}\""
        ),
        "pwsh -c \"Invoke-RestMethod -Uri https://h -Headers @{Authorization='[REDACTED]'}\"",
    ),
    ("osql -S db -U sa -P OsqlPw99x -Q 'select 1'", "osql -S db -U sa -P [REDACTED] -Q 'select 1'"),
    ("enum4linux -u admin -p 'Enum4Pw!9' 10.0.0.5", "enum4linux -u admin -p '[REDACTED]' 10.0.0.5"),
    (
        "iwctl --passphrase 'Iwd Wifi 9pass' station wlan0 connect Home",
        "iwctl --passphrase '[REDACTED]' station wlan0 connect Home",
    ),
    (
        "mount -t cifs //fs/share /mnt -o username=bob,password=M0untCifs9,vers=3.0",
        "mount -t cifs //fs/share /mnt -o username=bob,password=[REDACTED],vers=3.0",
    ),
    ("export TF_VAR_db_password=TfV4rPw99", "export TF_VAR_db_password=[REDACTED]"),
    ("ab -n 10 -A admin:AbAuthPw9 https://h/", "ab -n 10 -A admin:[REDACTED] https://h/"),
    (
        "security add-generic-password -a me -s svc -w MacKeych9",
        "security add-generic-password -a me -s svc -w [REDACTED]",
    ),
]


@pytest.mark.parametrize(("line", "logged"), EXACT, ids=[line[:40] for line, _ in EXACT])
def test_what_is_replaced_and_what_is_left(line: str, logged: str) -> None:
    assert shown(Redactor().redact_command(line)) == logged


FURTHER = [
    "mycli -h db -u root --password=MyCl1Pw9x",
    "pgcli postgresql://app:PgCl1Pw@db:5432/app",
    "./scripts/deploy.sh --db-pass Depl0yPw7",
    "~/bin/backup-tool -secretKey Bkp5ecretKey99",
    "${HOME}/go/bin/tool --AUTH_TOKEN=GoT00lTok3n",
    "terraform apply -var 'admin_password=TfAdm1nPw' -auto-approve",
    'packer build -var "ssh_password=Pack3rPw9" t.pkr.hcl',
    "docker run -d -e POSTGRES_PASSWORD=D0ckPgPw9 postgres:16",
    "docker run --env=REDIS_PASSWORD=Red1sEnvPw redis",
    'podman run -e "API_KEY=PodmanK3y99" app',
    'python -c "import redis; redis.Redis(host=\'c\', password=\\"PyRed1sPw\\").ping()"',
    'python3 -c \'from ftplib import FTP; f=FTP("h"); f.login("u", "FtpL0gin9")\'',
    "python3 -c \"import smtplib; s=smtplib.SMTP('m'); s.login('u@x.com', 'SmtpL0gin9')\"",
    'node -e \'const c = new Client({ user: "u", password: process.env.X || "N0deDefPw9" })\'',
    'ruby -e \'Mysql2::Client.new(host: "db", username: "u", password: "RbMy2Pw9")\'',
    'php -r \'$pdo = new PDO("mysql:host=db;dbname=x", "u", "PdoPw99x");\'',
    "psql -h db -c \"CREATE USER reporter WITH ENCRYPTED PASSWORD 'Rep0rterPw'\"",
    "mysql -e \"GRANT ALL ON *.* TO 'x'@'%' IDENTIFIED BY 'Gr4ntPw9'\"",
    "sqlite3 app.db \"UPDATE users SET password='Sq1itePw9' WHERE id=1\"",
    'mongosh --eval \'db.createUser({user: "app", pwd: "M0ngoEvalPw", roles: []})\'',
    (
        "curl -X POST https://h/api/login -H 'Content-Type: application/json' -d "
        '\'{"user":"a","pass":"CurlJs0nPw"}\''
    ),
    "curl -F 'password=F0rmFPw9' https://h/upload",
    'curl "https://api.example.com/v2/data?access_token=QsAccTok9xyz&page=2"',
    "http --auth admin:Htt9AuthPw https://h",
    "wget --header='X-Api-Key: WgetHdrK3y9' https://h/x",
    "git clone https://deploy:GitDepl0yPw@git.example.com/org/repo.git",
    "rsync -av src/ rsync://backup:Rsync9Pw@nas/share/",
    "xfreerdp /v:h /u:admin /p:Rdp9Passw",
    "sshpass -p 'S5hpassPw' scp f h:/tmp",
    "kubectl create secret generic api --from-literal=API_TOKEN=KubeTok3n99",
    (
        "kubectl create secret docker-registry reg --docker-server=r "
        "--docker-username=u --docker-password=KDock3rPw"
    ),
    "helm upgrade app ./chart --set-string db.password=H3lmStrPw",
    "gh secret set DEPLOY_KEY --body 'GhB0dySecret9'",
    "az keyvault secret set --vault-name kv --name db-pw --value AzKvVal9x",
    "aws ssm put-parameter --name /app/db/password --value SsmVal9xyz --type SecureString",
    "vault kv put secret/app api_key=VaultK3y99",
    "echo 'machine api.example.com login bot password NetrcL1ne9' >> ~/.netrc",
    "printf 'DB_PASSWORD=%s\\n' Pr1ntfEnvPw >> .env",
    'cat <<EOF > config.json\n{"database": {"password": "Hered0cJs0n"}}',
    "openssl s_client -connect h:443 -pass pass:SclientPw9",
    "crackmapexec smb 10.0.0.0/24 -u admin -p 'CmeP4ss!'",
    "ibmcloud login -a cloud.ibm.com -u ops@x.com -p IbmCl0udPw",
    "nuclei -u https://h -H 'Cookie: session=Nucle1Sess9'",
    "java -Dspring.datasource.password=Spr1ngDsPw -jar app.jar",
    'dotnet run --ConnectionStrings:Default="Server=db;User Id=sa;Password=D0tnetCs9;"',
    "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY",
    'ansible-playbook site.yml --extra-vars "vault_pass=AnsV4ultPw"',
    "tool --passphrase 'correct horse battery staple'",
    'mosh --ssh="sshpass -p M0shPw99 ssh" h',
    "znc --password ZncPassw9",
]
"""Secrets of more shapes, written after the layer: each line holds one, the word of it
ending in a digit and mixing letters (`MyCl1Pw9x`), or a key."""


def secret_of(line: str) -> str:
    if "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY" in line:
        return "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY"
    if "correct horse" in line:
        return "correct horse battery staple"
    found = re.findall(
        r"[A-Za-z0-9!]*[A-Z][A-Za-z0-9!]*[0-9][A-Za-z0-9!]*|[A-Za-z0-9]*[0-9][A-Za-z0-9]*[A-Z][A-Za-z0-9]*",
        line,
    )
    candidates = [word for word in found if re.search("[a-z]", word) and len(word) >= 6]
    return max(candidates, key=len)


@pytest.mark.parametrize("line", FURTHER, ids=[line[:40] for line in FURTHER])
def test_a_secret_of_a_further_shape_does_not_reach_the_log(line: str) -> None:
    secret = secret_of(line)
    assert secret in line
    assert secret not in Redactor().redact_command(line)


HARMLESS = [
    "ip -s link",
    "ss -tanp",
    "ss -tulpn | grep 5432",
    "kubectl get secrets",
    "kubectl get secrets -A -o wide",
    "kubectl describe secret db-credentials -n prod",
    "kubectl get secret tls-cert -o jsonpath='{.metadata.annotations}'",
    "kubectl auth can-i get secrets --as system:serviceaccount:default:app",
    "kubectl get serviceaccount default -o yaml",
    "kubectl create token app --dry-run=client",
    "grep -r password /etc",
    "grep -rn 'password' /etc/nginx/",
    "grep -i token /var/log/app.log | tail -n 50",
    "grep -c 'authentication failure' /var/log/auth.log",
    "grep -E 'session (opened|closed)' /var/log/auth.log",
    "git log --author=alice --since=2.weeks",
    "git log --grep=token --oneline",
    "git config --get credential.helper",
    "git config --list --show-origin",
    "git credential-cache exit",
    "journalctl -u sshd --since today",
    "journalctl -u nginx -p err -n 100",
    "journalctl -u vault -p warning --no-pager",
    "journalctl _COMM=sudo --since -1h",
    "ssh-keygen -lf ~/.ssh/id_ed25519.pub",
    "ssh-keygen -F github.com",
    "ssh-add -l",
    "ssh -o PasswordAuthentication=no -o BatchMode=yes host uptime",
    "sshd -T | grep -i passwordauthentication",
    "cat /etc/ssh/sshd_config | grep -i pubkey",
    "openssl x509 -in /etc/ssl/certs/server.pem -noout -dates",
    "openssl s_client -connect example.com:443 -servername example.com </dev/null",
    "openssl rsa -in key.pem -check -noout -passin file:/root/pass.txt",
    "openssl rand -hex 32",
    "openssl passwd -help",
    "vault status",
    "vault token lookup",
    "vault token capabilities secret/data/app",
    "vault kv get -field=username secret/app",
    "vault read -format=json auth/token/lookup-self",
    "aws sts get-caller-identity",
    "aws secretsmanager list-secrets --max-results 10",
    "aws secretsmanager describe-secret --secret-id prod/db",
    "aws ssm get-parameter --name /app/db/password --query Parameter.Name",
    "aws iam list-access-keys --user-name deploy",
    "aws kms describe-key --key-id alias/app",
    (
        "aws ecr get-login-password --region eu-west-1 | docker login --username AWS "
        "--password-stdin 111111111111.dkr.ecr.eu-west-1.amazonaws.com"
    ),
    "gcloud secrets list --project acme",
    "gcloud secrets versions list db-password",
    "gcloud auth list",
    "gcloud auth print-identity-token --audiences=https://svc.example.com",
    "az keyvault secret list --vault-name kv-prod",
    "az keyvault secret show --vault-name kv-prod --name db-password --query id",
    "docker secret ls",
    "docker secret inspect db_password",
    "docker login registry.example.com",
    "docker ps --filter name=vault",
    "docker inspect --format '{{.Config.User}}' app",
    "docker run --rm -u 1000:1000 -p 8080:80 nginx:1.27",
    "docker exec -u postgres:postgres db psql -c 'select 1'",
    "podman run -u root:root --rm alpine id",
    "ps -u postgres -p 1234",
    "ps aux | grep -i token",
    "pgrep -u root -l sshd",
    "top -b -n 1 -u www-data",
    "lsof -u nginx -p 812",
    "strace -f -p 4242 -e trace=connect",
    "tcpdump -i eth0 -nn port 443 -c 20",
    "curl -sS https://api.example.com/health",
    'curl -sI -u "$API_USER:$API_PASS" https://api.example.com/',
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com/v1/me',
    'curl --oauth2-bearer "$(cat /run/token)" https://api.example.com',
    "curl -s https://id.example.com/.well-known/openid-configuration | jq .token_endpoint",
    "wget -qO- https://example.com/robots.txt",
    "dig +short example.com",
    "dig -t TXT _acme-challenge.example.com",
    "nslookup secrets.example.com",
    "redis-cli -h cache INFO keyspace",
    "redis-cli CONFIG GET requirepass",
    "psql -h db -U app -d app -c 'select count(*) from sessions'",
    'psql -c "select usename, passwd is not null from pg_shadow"',
    "mysql -u report -p -e 'show databases'",
    'mysql -e "SELECT user, host, password_expired FROM mysql.user"',
    "mongosh --eval 'db.getUsers()'",
    "ldapsearch -x -LLL -b dc=corp '(uid=alice)' cn mail",
    "getent passwd alice",
    "getent shadow alice | cut -d: -f1,3",
    "passwd -S alice",
    "chage -l alice",
    "id alice",
    "last -n 20",
    "lastlog -u alice",
    "faillock --user alice",
    "loginctl list-sessions",
    "loginctl show-session 3 -p Name",
    "who -a",
    "w",
    "sudo -l",
    "sudo -u postgres psql -c '\\du'",
    "systemctl status vault-agent",
    "systemctl cat sshd | grep -i auth",
    "cat /etc/pam.d/common-auth",
    "ls -la /etc/ssl/private",
    "stat -c '%a %U' /etc/shadow",
    "find / -name '*.pem' -newer /etc/hostname 2>/dev/null",
    "find /home -name authorized_keys -exec wc -l {} +",
    "awk -F: '$2 == \"\" {print $1}' /etc/shadow",
    "env | grep -i proxy",
    "printenv | grep -c TOKEN",
    "echo $SSH_AUTH_SOCK",
    "helm get values app --all | grep -i password",
    "helm list -A",
    "terraform state list | grep secret",
    "terraform output -json | jq 'keys'",
    "ansible all -m ping -i hosts --ask-pass",
    "ansible-vault view --vault-password-file ~/.vault_pass group_vars/all/vault.yml",
    "restic -r /srv/repo --password-file /root/.restic snapshots",
    "borg list --last 5 /srv/borg",
    "nmap -p 22,443 --script ssl-cert example.com",
    "iptables -S | grep -i drop",
    "nft list ruleset",
    "tc -s qdisc show dev eth0",
    "sysctl net.ipv4.ip_forward",
    "cat /proc/sys/kernel/random/entropy_avail",
    "python3 -c 'import secrets; print(secrets.token_urlsafe(8))'",
    "python3 -c \"import keyring; print(keyring.get_password('svc', 'alice') is not None)\"",
    "node -e \"console.log(Object.keys(process.env).filter(k => k.includes('TOKEN')))\"",
    "jq '.auth.type' config.json",
    "yq '.spec.template.spec.containers[].env[].name' deploy.yaml",
    'date -u +"%Y-%m-%dT%H:%M:%SZ"',
    "crontab -u alice -l",
    "rsync -avn --password-file=/etc/rsync.pass src/ rsync://backup@nas/share/",
    "tar -tzf backup.tar.gz | grep -i secret",
    "zgrep -h 'Accepted publickey' /var/log/auth.log.*.gz | wc -l",
    "certbot certificates",
    "step certificate inspect cert.pem --short",
    "keytool -list -v -keystore /etc/ssl/cacerts.jks -storepass:file /root/ks.pass",
    "cryptsetup status data",
    "gpg --list-secret-keys --keyid-format long",
    "pass ls",
    "ansible-playbook --ask-pass site.yml",
    "ansible-playbook site.yml --ask-become-pass -i hosts",
    "pg_dump --no-password -h db app",
    "aws sts assume-role --role-arn arn:aws:iam::1:role/x --role-session-name ops",
    "az storage blob list --account-name acct -c logs --auth-mode login",
    "aws s3api get-object --bucket b --key logs/2024/01/app.log out.log",
    "sort --key 2 data.txt",
    "gpg --default-key 3AA5C34371567BD2 --list-sigs",
    "helm upgrade app ./chart --set image.tag=1.2.3 --set replicaCount=3",
    "git -c user.name=bot -c user.email=bot@example.com commit --dry-run",
    "curl --cookie-jar /tmp/cj https://example.com",
    "curl -b cookies.txt https://example.com",
    "openssl dgst -sha256 -sign key.pem -out sig.bin data",
    "aws s3 presign s3://bucket/key --expires-in 600",
    "kubectl logs -p web-7d9f -n prod",
    "tmux attach-session -t work",
    "screen -S session1 -d -m top",
    "vault token create -policy=ro -ttl=1h -display-name=ci",
    "gh auth status --show-token=false",
    "gh auth token | wc -c",
    "pwgen -s 24 1",
    "head -c 32 /dev/urandom | base64",
    "keepassxc-cli ls db.kdbx --key-file k.key --no-password",
    "systemd-creds list",
    "step crypto jwt inspect --insecure < token.jwt",
    'jwt decode "$JWT"',
    "ldapwhoami -x -H ldap://dc -D cn=reader,dc=corp -y /root/ldap.pw",
    "mysql --login-path=reporting -e 'select 1'",
    "psql \"host=db dbname=app user=app sslmode=require\" -c 'select 1'",
    "cat ~/.pgpass | wc -l",
    "chmod 600 ~/.netrc",
    "python3 -c \"import hashlib; print(hashlib.sha256(b'hello').hexdigest())\"",
    (
        "node -e \"const crypto = require('crypto'); "
        "console.log(crypto.randomBytes(16).toString('hex'))\""
    ),
    'sqlite3 app.db "SELECT id, email FROM users WHERE password IS NULL"',
    "mysql -e \"SELECT COUNT(*) FROM users WHERE password = ''\"",
    "journalctl -t sudo --grep 'authentication failure'",
    "grep -rn 'password:' roles/*/defaults/main.yml",
    "kubectl get secret db -o go-template='{{.data.password | base64decode | len}}'",
    "ssh -i ~/.ssh/deploy_key -p 2222 deploy@host uptime",
    "docker run -p 127.0.0.1:53:53/udp -e TZ=UTC dns",
    "iperf3 -c host -u -p 5201 -b 10M",
    "nc -u -p 5353 -l 5353",
    "mkdir -p /tmp/x && cd /tmp/x",
    "rsync -u -p src/ dst/",
]
"""Plainly read-only commands an investigator runs, many with words that say secret."""


def test_common_read_only_commands_are_logged_as_typed() -> None:
    redactor = Redactor()
    assert len(HARMLESS) >= 100
    changed = [line for line in HARMLESS if redactor.redact_command(line) != line]
    assert changed == []


def test_no_secret_of_the_corpus_reaches_any_field_of_the_audit_log(tmp_path: Path) -> None:
    # Each line through the gate, refused: its command, parts, reason and intent logged.
    from agentledger.runner.shell_gate import Gate, Policy

    log = tmp_path / "shell_audit.jsonl"
    gate = Gate(Policy(deny=["re:."]), log)
    lines = [str(row["text"]) for row in SECRETS] + FURTHER
    for line in lines:
        assert gate.run(line).denied
    raw = log.read_text()
    events = [json.loads(text) for text in raw.splitlines()]
    assert len(events) == len(lines)
    logged = "\n".join(text for event in events for text in strings_of(event))
    pieces = [piece for row in SECRETS for piece in row["pieces"]]
    pieces += [secret_of(line) for line in FURTHER]
    assert [piece for piece in pieces if piece in logged or piece in raw] == []


def test_exec_of_an_unknown_tool_logs_its_secrets_redacted(tmp_path: Path) -> None:
    # Run for real through `agentledger exec`: a tool called through a variable, a password
    # in interpreter code and in SQL of a here-string; the output echoes the long one.
    line = (
        "TOOL=echo; $TOOL --api-token Unkn0wnTok9x; "
        "python3 -c \"conn = dict(password='Interp9Pw'); print(len(conn))\"; "
        "cat <<< \"ALTER ROLE app PASSWORD 'HereStr9Pw'\" >/dev/null"
    )
    result, raw = exec_line(tmp_path, line)
    assert raw.strip(), result.stderr
    for secret in ("Unkn0wnTok9x", "Interp9Pw", "HereStr9Pw"):
        assert secret not in raw
    assert raw.count("[REDACTED:") >= 3


@pytest.mark.parametrize(
    "filler",
    ["PASSWORD FOR ", "-u a -p ", "connect('a', 'b', ", "--password ", "set x "],
)
def test_a_secret_after_thousands_of_look_alike_words_is_found(filler: str) -> None:
    # Look-alikes of every shape the layer reads, then a secret: read whole, and the
    # secret found (each look-alike is read once, not against all before it).
    line = "tool " + filler * 5000 + " --api-token L0ngL1neTok"
    assert "L0ngL1neTok" not in Redactor().redact_command(line)
