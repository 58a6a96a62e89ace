# ruff: noqa: E501
"""Writes cmdline_blind4_cases.jsonl: a blind corpus of command lines (issue 33, cause 10: "of
new kinds at most 5%"), written without reading the redaction rules or the other corpora, to
measure the rules honestly. Every case is blind. True positives spread over twelve families
(the prefix of each `source`): databases, caches and queues (db), cloud and CI CLIs (cloud),
network and VPN gear (net), mail and LDAP (mail), backup tools and package registries (pkg),
vault and Kubernetes (k8s), interpreters and SQL (interp), HTTP bodies and headers (http),
environment assignments, here-documents and pipes into stdin readers (stdin), dynamic command
names and wrappers (wrap), user:pass@ URLs (url), and encoded or split secrets (enc). The
plain lines hold secret-sounding words, placeholders, hashes and UUIDs but nothing secret.
Values are synthetic; random-looking ones come from a seeded generator, so the file
regenerates byte for byte.

    python tests/data/secrets/make_cmdline_blind4_corpus.py
"""

from __future__ import annotations

import base64
import random
import string

from make_cmdline_corpus import write_cases

RNG = random.Random(20261207)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def tok(length: int, alphabet: str = ALNUM) -> str:
    """A random-looking token of `length` characters."""
    return "".join(RNG.choice(alphabet) for _ in range(length))


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def b64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


SECRETS: list[tuple[str, str, list[str]]] = []


def case(source: str, template: str, *secrets: str) -> None:
    """One true positive: `@@0`, `@@1`, ... in `template` are the secrets, all of which are
    pieces that must not survive."""
    text = template
    for index, secret in enumerate(secrets):
        text = text.replace(f"@@{index}", secret)
    assert "@@" not in text, source
    SECRETS.append((source, text, list(secrets)))


# Databases, caches and queues.
case(
    "db-redis-cli-a",
    "redis-cli -h cache-01.internal -p 6380 -a @@0 --no-auth-warning INFO",
    tok(32),
)
case(
    "db-redis-cli-user-pass",
    "redis-cli --user ops --pass 'Gr@nite-Falls-88' -h 10.4.1.9 ping",
    "Gr@nite-Falls-88",
)
case(
    "db-mongosh-p",
    "mongosh --host rs0/db1:27017 -u admin -p Xq7vNp2LrT9w --authenticationDatabase admin",
    "Xq7vNp2LrT9w",
)
case(
    "db-influx-token",
    "influx query 'from(bucket:\"m\") |> range(start:-1h)' --org acme --token @@0",
    tok(86, URLSAFE) + "==",
)
case(
    "db-influx1-password",
    "influx -host tsdb -username grafana -password 'hunter2-prod' -execute 'SHOW DATABASES'",
    "hunter2-prod",
)
case(
    "db-cqlsh-password-long",
    "cqlsh cass-2.dc1 9042 --username=cassandra --password=Mx4dr!ver22 -e 'DESCRIBE KEYSPACES'",
    "Mx4dr!ver22",
)
case(
    "db-rabbitmqadmin",
    "rabbitmqadmin -H mq.internal -u admin -p Bunny-Hop-2025 list queues",
    "Bunny-Hop-2025",
)
case("db-rabbitmqctl-add-user", "rabbitmqctl add_user billing @@0", tok(20))
case(
    "db-kafka-jaas",
    "kafka-console-consumer.sh --bootstrap-server k1:9093 --topic audit --consumer-property "
    "'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="svc-audit" password="@@0";\' --consumer-property security.protocol=SASL_SSL',
    tok(24),
)
case(
    "db-kafka-configs-scram",
    "kafka-configs --bootstrap-server k1:9092 --alter --add-config 'SCRAM-SHA-512=[password=Kafk4Scr@m!]' --entity-type users --entity-name app",
    "Kafk4Scr@m!",
)
case("db-mysqladmin", "mysqladmin -u root --password=ch33seburger status", "ch33seburger")
case(
    "db-clickhouse",
    "clickhouse-client --host ch1 --user default --password q8Zt3vLm0Rw --query 'SELECT 1'",
    "q8Zt3vLm0Rw",
)
case(
    "db-etcdctl-user",
    "etcdctl --endpoints=https://etcd1:2379 --user root:Etcd-R00t-pw get /registry --prefix --keys-only",
    "Etcd-R00t-pw",
)

# Cloud and CI command-line tools.
case(
    "cloud-aws-configure-set",
    "aws configure set aws_secret_access_key @@0 --profile deploy",
    tok(40, B64),
)
case(
    "cloud-az-login-sp",
    "az login --service-principal -u 5f1c9a2e-0b7d-4e3a-9c61-2d8f0a4b7e13 -p @@0 --tenant corp.onmicrosoft.com",
    tok(8) + "~" + tok(31, URLSAFE),
)
case(
    "cloud-terraform-var",
    "terraform apply -auto-approve -var 'db_password=Blue-Whale-1987' -var region=eu-west-1",
    "Blue-Whale-1987",
)
case("cloud-vercel-token", "vercel deploy --prod --token @@0", tok(24))
case("cloud-netlify-auth", "netlify deploy --dir=dist --prod --auth @@0", "nfp_" + tok(36))
case(
    "cloud-argocd-login",
    "argocd login argocd.corp.io --username admin --password 'Arg0-Ch4ngeMe' --grpc-web",
    "Arg0-Ch4ngeMe",
)
case(
    "cloud-helm-repo-add",
    "helm repo add internal https://charts.corp.io --username ci --password @@0",
    tok(40, HEX),
)
case("cloud-linode-token", "linode-cli --token @@0 linodes list", tok(64, HEX))
case(
    "cloud-glab-login",
    "glab auth login --hostname gitlab.corp.io --token @@0",
    "glpat-" + tok(20, URLSAFE),
)
case(
    "cloud-circleci-setup",
    "circleci setup --no-prompt --host https://circleci.com --token @@0",
    tok(40, HEX),
)
case("cloud-hcloud-context", "HCLOUD_TOKEN=@@0 hcloud server list", tok(64))

# Network and VPN gear, remote desktops and shares.
case(
    "net-snmpwalk-community", "snmpwalk -v2c -c n0c-R3ad0nly 10.0.0.1 1.3.6.1.2.1.1", "n0c-R3ad0nly"
)
case(
    "net-snmpget-v3",
    "snmpget -v3 -l authPriv -u monitor -a SHA -A 'AuthPhrase#91' -x AES -X PrivPhrase_72 sw1 sysUpTime.0",
    "AuthPhrase#91",
    "PrivPhrase_72",
)
case(
    "net-ipmitool-P",
    "ipmitool -I lanplus -H bmc-r12.oob -U ADMIN -P Qw3rtyBMC chassis power status",
    "Qw3rtyBMC",
)
case(
    "net-openconnect-pipe",
    "echo 'Vpn!Spring2026' | openconnect --user=jdoe --passwd-on-stdin vpn.corp.io",
    "Vpn!Spring2026",
)
case(
    "net-wg-set-key",
    "wg set wg0 private-key <(echo @@0) peer AbCdEfGh1234567890abcdefghijklmnopqrstuvwx= allowed-ips 10.8.0.0/24",
    tok(43, B64) + "=",
)
case(
    "net-sshpass",
    "sshpass -p 'tr0ub4dor&3' ssh -o StrictHostKeyChecking=no root@10.2.3.4 uptime",
    "tr0ub4dor&3",
)
case(
    "net-nmcli-wifi",
    "nmcli dev wifi connect CorpGuest password 'welcome to acme 2026'",
    "welcome to acme 2026",
)
case(
    "net-xfreerdp",
    "xfreerdp /v:ts01.corp.local /u:CORP\\\\svc_rdp /p:Rdp-Pa55-word /cert:ignore",
    "Rdp-Pa55-word",
)
case(
    "net-smbclient-pct",
    "smbclient //fs01/finance -U 'CORP\\jsmith%Autumn#Leaves7' -c 'ls'",
    "Autumn#Leaves7",
)
case(
    "net-rpcclient", "rpcclient -U administrator%Kx9pL2mQ 192.168.10.5 -c enumdomusers", "Kx9pL2mQ"
)
case("net-routeros-ssh", "ssh admin@rtr1 '/user set admin password=R0uter-Adm1n'", "R0uter-Adm1n")

# Mail and LDAP.
case(
    "mail-ldapsearch-w",
    "ldapsearch -x -H ldaps://dc1.corp.local -D 'cn=svc-ldap,ou=svc,dc=corp,dc=local' -w 'Ld@p-B1nd!' -b dc=corp,dc=local '(sAMAccountName=jdoe)'",
    "Ld@p-B1nd!",
)
case(
    "mail-ldapmodify-w",
    "ldapmodify -H ldap://ldap1 -D cn=admin,dc=example,dc=org -w @@0 -f change.ldif",
    tok(16),
)
case(
    "mail-ldappasswd-s",
    "ldappasswd -H ldap://ldap1 -D cn=admin,dc=example,dc=org -W -s 'NewUserPw!2026' uid=alice,ou=people,dc=example,dc=org",
    "NewUserPw!2026",
)
case(
    "mail-ldapwhoami-bindpw",
    "ldapwhoami -H ldap://ldap1 -x -D uid=bob,ou=people,dc=ex,dc=org -w swordfish42",
    "swordfish42",
)
case(
    "mail-swaks-auth",
    "swaks --to ops@corp.io --server smtp.corp.io:587 --tls --auth LOGIN --auth-user alerts@corp.io --auth-password 'M4il-Alerts-Pw'",
    "M4il-Alerts-Pw",
)
case(
    "mail-sendemail-xp",
    "sendemail -f noreply@corp.io -t ops@corp.io -s smtp.gmail.com:587 -xu noreply@corp.io -xp 'abcd efgh ijkl mnop' -u test -m hi",
    "abcd efgh ijkl mnop",
)
case(
    "mail-curl-smtp",
    "curl --ssl-reqd --url smtps://smtp.office365.com:465 --user 'reports@corp.io:Rep0rts-2026!' --mail-from reports@corp.io --mail-rcpt cfo@corp.io -T mail.txt",
    "Rep0rts-2026!",
)
case(
    "mail-mailx-smtp-auth",
    "mailx -S smtp=smtp://mx1:587 -S smtp-auth=login -S smtp-auth-user=cron -S smtp-auth-password=Cr0nMa1l -s report ops@corp.io < r.txt",
    "Cr0nMa1l",
)
case("mail-doveadm-pw", "doveadm pw -s SHA512-CRYPT -p 'mailbox-pass-77'", "mailbox-pass-77")
case(
    "mail-sendgrid-key",
    "curl -X POST https://api.sendgrid.com/v3/mail/send -H 'Authorization: Bearer @@0' -H 'Content-Type: application/json' -d @mail.json",
    "SG." + tok(22, URLSAFE) + "." + tok(43, URLSAFE),
)

# Backup tools and package registries.
case(
    "pkg-restic-env",
    "RESTIC_PASSWORD='backup horse staple' restic -r s3:s3.amazonaws.com/acme-bak snapshots",
    "backup horse staple",
)
case(
    "pkg-borg-passphrase", "BORG_PASSPHRASE=@@0 borg create ::'{hostname}-{now}' /etc /srv", tok(28)
)
case(
    "pkg-rclone-create",
    "rclone config create wasabi s3 provider Wasabi access_key_id WSB3Q7EXAMPLEKEYID secret_access_key @@0",
    tok(40, B64),
)
case("pkg-mc-alias", "mc alias set minio http://minio:9000 minioadmin @@0", tok(32))
case("pkg-docker-login-p", "docker login registry.corp.io -u deploy -p @@0", tok(36, URLSAFE))
case(
    "pkg-nuget-push",
    "dotnet nuget push bin/Release/App.1.2.0.nupkg --api-key @@0 --source https://api.nuget.org/v3/index.json",
    "oy2" + tok(43).lower(),
)
case(
    "pkg-mvn-deploy",
    "mvn -B deploy -DrepositoryId=nexus -Dnexus.password=N3xus-Dep!oy -Dnexus.user=ci",
    "N3xus-Dep!oy",
)
case(
    "pkg-gradle-prop",
    "./gradlew publish -PsonatypePassword=@@0 -PsonatypeUsername=acme",
    tok(44, B64),
)
case(
    "pkg-composer-basic",
    "composer config --global http-basic.repo.packagist.com acme @@0",
    tok(40, HEX),
)
case("pkg-yarn-npmauth", "yarn config set npmAuthToken @@0", "npm_" + tok(36))
case(
    "pkg-gem-host-api-key",
    "GEM_HOST_API_KEY=@@0 gem push pkg/acme-1.0.gem --otp 123456",
    "rubygems_" + tok(48, HEX),
)

# Vault and Kubernetes.
case("k8s-vault-login-token", "vault login -method=token @@0", "hvs." + tok(24))
case(
    "k8s-vault-kv-put",
    "vault kv put secret/app/db username=app password='Summer2026!db'",
    "Summer2026!db",
)
case(
    "k8s-vault-write-userpass",
    "vault write auth/userpass/users/ci password=@@0 policies=ci",
    tok(18),
)
case(
    "k8s-kubectl-from-literal",
    "kubectl -n prod create secret generic db-creds --from-literal=username=app --from-literal=password='p0stgr3s-Pr0d'",
    "p0stgr3s-Pr0d",
)
case(
    "k8s-kubectl-docker-registry",
    "kubectl create secret docker-registry regcred --docker-server=ghcr.io --docker-username=ci --docker-password=@@0",
    "ghp_" + tok(36),
)
case(
    "k8s-kubectl-token-flag",
    "kubectl --server https://10.0.0.10:6443 --token=@@0 get pods -A",
    "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9."
    + b64url('{"iss":"kubernetes/serviceaccount","sub":"system:serviceaccount:ops:ci"}')
    + "."
    + tok(86, URLSAFE),
)
case(
    "k8s-helm-set-password",
    "helm upgrade --install pg bitnami/postgresql --set auth.postgresPassword=Pg-Helm-Pw-9 --set auth.database=app",
    "Pg-Helm-Pw-9",
)
case(
    "k8s-kubectl-set-credentials",
    "kubectl config set-credentials admin --username=admin --password=Kub3-Adm!n",
    "Kub3-Adm!n",
)
case(
    "k8s-consul-token",
    "consul kv get -token=@@0 config/app",
    "-".join((tok(8, HEX), tok(4, HEX), tok(4, HEX), tok(4, HEX), tok(12, HEX))),
)
case(
    "k8s-nomad-token",
    "nomad job status -address=https://nomad:4646 -token @@0",
    tok(8, HEX) + "-" + tok(4, HEX) + "-" + tok(4, HEX) + "-" + tok(4, HEX) + "-" + tok(12, HEX),
)
case(
    "k8s-kubectl-patch-data",
    'kubectl patch secret api -p \'{"stringData":{"API_KEY":"@@0"}}\'',
    tok(32),
)

# Interpreters and SQL.
case(
    "interp-python-pymysql",
    "python3 -c \"import pymysql; c = pymysql.connect(host='db', user='app', password='Py-Mysql-77'); print(c.get_server_info())\"",
    "Py-Mysql-77",
)
case(
    "interp-node-pg",
    "node -e \"const {Client}=require('pg'); new Client({user:'app', password:'n0de-PG-secret', host:'db'}).connect()\"",
    "n0de-PG-secret",
)
case(
    "interp-perl-dbi",
    'perl -MDBI -e \'DBI->connect("dbi:mysql:app;host=db", "root", "PerlR00t#1") or die\'',
    "PerlR00t#1",
)
case(
    "interp-ruby-redis",
    'ruby -e \'require "redis"; p Redis.new(host: "cache", password: "rb-Redis-443").ping\'',
    "rb-Redis-443",
)
case(
    "interp-php-pdo",
    'php -r \'$db = new PDO("mysql:host=db;dbname=shop", "shop", "Sh0p-PDO-pass"); echo $db->query("select 1")->fetchColumn();\'',
    "Sh0p-PDO-pass",
)
case(
    "interp-psql-alter-user",
    "psql -U postgres -c \"ALTER USER reporting WITH PASSWORD 'Rep0rting-2026';\"",
    "Rep0rting-2026",
)
case(
    "interp-mysql-create-user",
    "mysql -uroot -e \"CREATE USER 'etl'@'%' IDENTIFIED BY 'Etl_Loader#55'; GRANT SELECT ON *.* TO 'etl'@'%';\"",
    "Etl_Loader#55",
)
case(
    "interp-sqlplus-userpass",
    "sqlplus -s system/Or4cle_Sys@//ora1:1521/ORCLPDB1 @check.sql",
    "Or4cle_Sys",
)
case(
    "interp-python-requests-bearer",
    'python3 -c \'import requests; print(requests.get("https://api.corp.io/v1/me", headers={"Authorization": "Bearer @@0"}).json())\'',
    tok(40, URLSAFE),
)
case(
    "interp-python-boto3",
    "python -c \"import boto3; boto3.client('s3', aws_access_key_id='AKIA2XQ7EXAMPLEKEY4Z', aws_secret_access_key='@@0').list_buckets()\"",
    tok(40, B64),
)
case(
    "interp-sqlcmd-alter-login",
    "sqlcmd -S mssql1 -E -Q \"ALTER LOGIN sa WITH PASSWORD = 'Mssql!Sa2026'\"",
    "Mssql!Sa2026",
)

# HTTP bodies, headers and query strings.
case(
    "http-curl-json-password",
    'curl -s -X POST https://auth.corp.io/api/login -H \'Content-Type: application/json\' -d \'{"username":"ops","password":"Js0n-Log1n-Pw"}\'',
    "Js0n-Log1n-Pw",
)
case(
    "http-curl-form",
    "curl -s https://app.corp.io/session --data 'user=jdoe&passwd=mango-tango-91&remember=1'",
    "mango-tango-91",
)
case("http-curl-x-api-key", "curl -H 'X-API-Key: @@0' https://api.vendor.io/v2/items", tok(32, HEX))
case(
    "http-curl-token-header",
    'curl -H "Authorization: Token @@0" https://netbox.corp.io/api/dcim/devices/',
    tok(40, HEX),
)
case(
    "http-wget-post-data",
    "wget -qO- --post-data 'grant_type=client_credentials&client_id=inv&client_secret=@@0' https://idp.corp.io/oauth/token",
    tok(34, URLSAFE),
)
case(
    "http-httpie-json",
    "http POST https://api.corp.io/login username=ops password='Http!e-pass'",
    "Http!e-pass",
)
case("http-httpie-header", "http GET :8080/admin Authorization:'Bearer @@0'", tok(48, URLSAFE))
case(
    "http-curl-query-apikey",
    "curl 'https://maps.vendor.com/api/geocode?address=Berlin&apikey=@@0'",
    tok(39, URLSAFE),
)
case(
    "http-curl-form-field",
    "curl -F 'file=@report.pdf' -F 'token=@@0' https://upload.corp.io/api",
    tok(30),
)
case(
    "http-wget-private-token",
    "wget --header='PRIVATE-TOKEN: @@0' https://gitlab.corp.io/api/v4/projects",
    "glpat-" + tok(20, URLSAFE),
)
case(
    "http-curl-urlencode",
    "curl https://hooks.corp.io/x --data-urlencode 'secret=open sesame 42'",
    "open sesame 42",
)

# Environment assignments, here-documents, here-strings and pipes into stdin readers.
case("stdin-db-pass-env", "DB_PASS=Zebra-Crossing-12 ./bin/migrate up", "Zebra-Crossing-12")
case("stdin-export-stripe", "export PAYMENTS_SECRET=@@0", "rk_prod_" + tok(24))
case(
    "stdin-env-mysql-pwd",
    "env MYSQL_PWD='my$ql-env-pw' mysql -u app -h db -e 'select 1'",
    "my$ql-env-pw",
)
case(
    "stdin-heredoc-psql",
    "psql -U postgres <<'SQL'\nCREATE ROLE grafana LOGIN PASSWORD 'Gr4fana-RO';\nSQL",
    "Gr4fana-RO",
)
case(
    "stdin-herestring-mysql",
    "mysql -u root <<< \"SET PASSWORD FOR 'app'@'%' = 'Here-Str1ng-Pw';\"",
    "Here-Str1ng-Pw",
)
case(
    "stdin-docker-password-stdin",
    "echo @@0 | docker login ghcr.io -u acme-bot --password-stdin",
    tok(40, URLSAFE),
)
case("stdin-sudo-S", "printf '%s\\n' 'Sud0-Pr1nt' | sudo -S systemctl restart nginx", "Sud0-Pr1nt")
case("stdin-chpasswd", "echo 'deploy:Ch4ngeMe-Now' | chpasswd", "Ch4ngeMe-Now")
case(
    "stdin-netrc-printf",
    "printf 'machine api.corp.io login ci password %s\\n' @@0 >> ~/.netrc",
    tok(26),
)
case("stdin-pgpass-append", "echo 'db.corp.io:5432:*:report:Pgp4ss-Rep' >> ~/.pgpass", "Pgp4ss-Rep")
case(
    "stdin-heredoc-env-file",
    "cat > .env <<EOF\nAPP_ENV=prod\nSESSION_SECRET=@@0\nEOF",
    tok(48, HEX),
)
case(
    "stdin-openssl-pass",
    "openssl enc -aes-256-cbc -pbkdf2 -in db.sql -out db.sql.enc -pass pass:Ench1lada-Key",
    "Ench1lada-Key",
)
case(
    "stdin-gpg-passphrase",
    "gpg --batch --pinentry-mode loopback --passphrase 'gpg phrase of mine' -d backup.tar.gpg",
    "gpg phrase of mine",
)
case("stdin-htpasswd-b", "htpasswd -b /etc/nginx/.htpasswd admin 'Ng1nx-Basic'", "Ng1nx-Basic")

# Dynamic command names and wrappers.
case("wrap-dollar-bin-token", "$BIN --token @@0 sync", tok(32))
case("wrap-which-mysql", "\"$(which mysql)\" -uroot -pWh1chMy -e 'show databases'", "Wh1chMy")
case("wrap-vendor-bin-apikey", "./vendor/bin/deployer --api-key @@0 deploy prod", tok(40, HEX))
case(
    "wrap-sudo-u-psql",
    "sudo -u postgres psql -c \"CREATE USER metabase PASSWORD 'Met4base!'\"",
    "Met4base!",
)
case("wrap-timeout-redis", "timeout 5 redis-cli -a T1meout-Redis ping", "T1meout-Redis")
case(
    "wrap-ssh-mysql",
    "ssh db1.corp.io 'mysql -uroot -pSsh-Remote-9 -e \"show processlist\"'",
    "Ssh-Remote-9",
)
case(
    "wrap-docker-exec",
    "docker exec -it pg psql 'postgresql://postgres:D0cker-Ex3c@localhost/app' -c '\\dt'",
    "D0cker-Ex3c",
)
case(
    "wrap-kubectl-exec-sh",
    "kubectl exec -n prod deploy/api -- sh -c 'curl -s -H \"Authorization: Bearer @@0\" localhost:8080/admin/stats'",
    tok(44, URLSAFE),
)
case("wrap-env-i", "env -i PATH=/usr/bin:/bin API_TOKEN=@@0 ./run-report.sh", tok(36))
case(
    "wrap-nohup-worker",
    "nohup ./worker --queue-password 'Qu3ue-W0rker' > worker.log 2>&1 &",
    "Qu3ue-W0rker",
)
case("wrap-xargs", "cat hosts.txt | xargs -I{} sshpass -p 'X4rgs-Pass' ssh {} uptime", "X4rgs-Pass")
case("wrap-abs-path-tool", "/opt/acme/bin/acmectl login --secret @@0", tok(24, HEX))

# user:pass@ URLs.
case(
    "url-postgres",
    "pg_dump 'postgres://app:Pg-Url-Pass-1@db.corp.io:5432/app?sslmode=require' -Fc -f app.dump",
    "Pg-Url-Pass-1",
)
case(
    "url-mongodb-srv",
    "mongodump --uri 'mongodb+srv://backup:@@0@cluster0.ab1cd.mongodb.net/prod' --out /bak",
    tok(16),
)
case(
    "url-amqp",
    "celery -A tasks worker -b amqp://worker:Amqp-W0rker@rabbit:5672/vhost",
    "Amqp-W0rker",
)
case(
    "url-git-clone-token",
    "git clone https://oauth2:@@0@gitlab.corp.io/infra/ansible.git",
    "glpat-" + tok(20, URLSAFE),
)
case(
    "url-redis-empty-user",
    "redis-cli -u redis://:R3dis-Url-Pw@cache:6379/0 keys 'session:*'",
    "R3dis-Url-Pw",
)
case("url-ftp-wget", "wget ftp://backup:Ftp-B4ckup@ftp.corp.io/db/latest.sql.gz", "Ftp-B4ckup")
case(
    "url-pip-index",
    "pip install --index-url https://__token__:@@0@pypi.corp.io/simple acme-sdk",
    tok(32),
)
case(
    "url-git-remote-set",
    "git remote set-url origin https://ci-bot:@@0@github.com/acme/infra.git",
    "github_pat_" + tok(22) + "_" + tok(59),
)
case(
    "url-mysql-uri", "mysqlsh --uri root:'Sh3ll-Mysql'@db1:3306 --sql -e 'select 1'", "Sh3ll-Mysql"
)
case("url-http-basic-curl", "curl http://admin:Swit5h-Web@10.0.0.2/cgi-bin/status", "Swit5h-Web")

# Encoded and split secrets.
case(
    "enc-basic-header",
    "curl -H 'Authorization: Basic @@0' https://jenkins.corp.io/api/json",
    b64("jenkins:Jenk1ns-Api-Tok"),
)
case(
    "enc-base64-decode-pipe",
    "echo @@0 | base64 -d | docker login -u ci --password-stdin reg.corp.io",
    b64("B64-Reg-Pass-22\n"),
)
case("enc-hex-xxd", "echo @@0 | xxd -r -p | sudo -S true", b"Hex-Sud0-Pw".hex())
case(
    "enc-k8s-secret-data",
    'kubectl patch secret db -p \'{"data":{"password":"@@0"}}\'',
    b64("K8s-Data-Pw-5"),
)
case(
    "enc-jwt-split",
    'TOKEN=@@0\\\n@@1; curl -H "Authorization: Bearer $TOKEN" https://api.corp.io/x',
    "eyJhbGciOiJIUzI1NiJ9." + b64url('{"sub":"svc-ci","scope":"admin"}'),
    tok(43, URLSAFE),
)
case(
    "enc-smtp-auth-plain",
    "printf 'AUTH PLAIN %s\\r\\n' @@0 | openssl s_client -connect smtp.corp.io:465 -quiet",
    b64("\0mailer\0Smtp-Pl4in-Pw"),
)
case(
    "enc-printf-hex-escapes",
    "printf '\\x50\\x34\\x73\\x73\\x2d\\x48\\x65\\x78' | cryptsetup open /dev/sdb1 vault --key-file=-",
    "\\x50\\x34\\x73\\x73\\x2d\\x48\\x65\\x78",
)
case("enc-wireguard-privkey", "echo '@@0' > /etc/wireguard/private.key", tok(43, B64) + "=")
case(
    "enc-pem-body",
    "echo '@@0' | base64 -d > /tmp/id.der",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + tok(64, B64),
)
case("enc-base64-env", "export DB_PASSWORD_B64=@@0", b64("Base64-Env-Pass"))

BENIGN: list[tuple[str, str]] = [
    (
        "fp-password-file",
        "mysql --defaults-extra-file=/etc/mysql/debian.cnf -e 'show slave status\\G'",
    ),
    ("fp-password-file-flag", "rabbitmqadmin --password-file /run/s list queues"),
    (
        "fp-kubectl-get-secret",
        "kubectl get secret db -n prod -o jsonpath='{.metadata.creationTimestamp}'",
    ),
    ("fp-grep-token", "grep -i token app.log | tail -n 50"),
    ("fp-auth-type-basic", "curl --auth-type basic -I https://intranet.corp.io/health"),
    ("fp-vault-kv-get", "vault kv get secret/app"),
    ("fp-vault-kv-metadata", "vault kv metadata get -mount=secret app/db"),
    ("fp-db-pass-placeholder", "mysql -u app -p\"$DB_PASS\" -h db -e 'select 1'"),
    (
        "fp-token-brace-placeholder",
        'curl -H "Authorization: Bearer ${TOKEN}" https://api.corp.io/v1/me',
    ),
    ("fp-redis-env-placeholder", 'redis-cli -a "$REDIS_PASSWORD" --no-auth-warning ping'),
    (
        "fp-cmdsubst-secret-file",
        'docker login -u ci --password "$(cat /run/secrets/registry)" reg.corp.io',
    ),
    (
        "fp-password-stdin-file",
        "docker login ghcr.io -u acme-bot --password-stdin < /run/secrets/ghcr",
    ),
    (
        "fp-ldapsearch-y",
        "ldapsearch -x -H ldap://ldap1 -D cn=reader,dc=ex,dc=org -y /etc/ldap.secret -b dc=ex,dc=org uid=bob",
    ),
    ("fp-ipmitool-f", "ipmitool -I lanplus -H bmc-r12.oob -U ADMIN -f /root/.ipmi_pass sdr list"),
    ("fp-ipmitool-E", 'IPMI_PASSWORD="$BMC_PW" ipmitool -I lanplus -H bmc1 -U admin -E sel list'),
    ("fp-snmpwalk-var", 'snmpwalk -v2c -c "$SNMP_COMMUNITY" sw1 ifDescr'),
    ("fp-git-sha", "git show 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 --stat"),
    ("fp-git-range", "git log --oneline a1b2c3d..9f8e7d6 -- src/"),
    (
        "fp-docker-digest",
        "docker pull nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
    ),
    (
        "fp-sha256sum-check",
        "echo 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  empty.txt' | sha256sum -c",
    ),
    (
        "fp-uuid-curl",
        "curl -s https://api.corp.io/v1/orders/3b241101-e2bb-4255-8caf-4136c566a962 | jq .status",
    ),
    ("fp-uuid-blkid", "mount UUID=6f1c2e3a-9b8d-4c7e-a1f0-2d3b4c5e6f70 /mnt/data"),
    ("fp-kubectl-pod-hash", "kubectl get pods -l pod-template-hash=7d9f8c6b5d -o wide"),
    (
        "fp-journal-failed-password",
        "journalctl -u ssh --since today | grep 'Failed password' | wc -l",
    ),
    ("fp-git-log-grep-password", "git log --all --grep='password' --oneline"),
    ("fp-passwd-status", "passwd --status deploy"),
    ("fp-chage", "chage -l deploy"),
    (
        "fp-ssh-pubkey",
        "echo 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKq3x9zYb2Wc8v1mN4pQ7rT0uV5sE6fG8hJ2kL3mN4oP jdoe@laptop' >> ~/.ssh/authorized_keys",
    ),
    ("fp-ssh-keygen-l", "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub"),
    (
        "fp-openssl-fingerprint",
        "openssl x509 -in /etc/ssl/certs/web.pem -noout -fingerprint -sha256",
    ),
    ("fp-openssl-rand", "openssl rand -hex 32 > /run/keys/session.key"),
    ("fp-terraform-var-file", "terraform plan -var-file=prod.tfvars -var region=eu-west-1"),
    (
        "fp-helm-set-tag",
        "helm upgrade --install api ./chart --set image.tag=1.14.2 --set replicaCount=3",
    ),
    (
        "fp-kubectl-from-file",
        "kubectl create secret generic db-creds --from-file=password=./pw.txt --dry-run=client -o yaml",
    ),
    ("fp-kubectl-from-env-file", "kubectl create secret generic app-env --from-env-file=.env.prod"),
    (
        "fp-kafka-command-config",
        "kafka-topics --bootstrap-server k1:9092 --command-config /etc/kafka/client.properties --list",
    ),
    (
        "fp-mongosh-prompt",
        "mongosh 'mongodb://db1:27017/app' --username app --authenticationDatabase admin",
    ),
    (
        "fp-psql-conninfo",
        "psql 'host=db.corp.io user=report dbname=app sslmode=require' -c 'select count(*) from orders'",
    ),
    ("fp-curl-u-prompt", "curl -u admin https://grafana.corp.io/api/health"),
    (
        "fp-docker-run-env-names",
        "docker run --rm -e DB_PASS -e API_TOKEN --env-file .env acme/api:2.3",
    ),
    ("fp-git-credential-helper", "git config --global credential.helper 'cache --timeout=3600'"),
    ("fp-aws-sts", "aws sts get-caller-identity --profile deploy"),
    ("fp-aws-configure-get", "aws configure get region --profile deploy"),
    ("fp-gh-auth-status", "gh auth status --hostname github.com"),
    ("fp-pgpass-count", "wc -l ~/.pgpass ~/.netrc"),
    ("fp-restic-password-file", "restic -r /srv/restic --password-file /etc/restic/pw check"),
    ("fp-borg-passcommand", "BORG_PASSCOMMAND='cat /root/.borg-pass' borg list /bak::"),
    ("fp-export-min-length", "export PASSWORD_MIN_LENGTH=12 TOKEN_TTL_SECONDS=3600"),
    ("fp-env-grep-keys", "env | grep -c -E 'KEY|SECRET|TOKEN'"),
    ("fp-openconnect-no-pw", "openconnect --user=jdoe --authgroup=Employees vpn.corp.io"),
    ("fp-wg-show", "wg show wg0 latest-handshakes"),
    ("fp-wg-genkey", "umask 077 && wg genkey | tee privatekey | wg pubkey > publickey"),
    ("fp-vault-token-lookup", "vault token lookup -format=json | jq .data.ttl"),
    (
        "fp-heredoc-no-secret",
        "psql -U postgres <<'SQL'\nSELECT usename, valuntil FROM pg_user;\nSQL",
    ),
    ("fp-herestring-no-secret", 'grep -c password_hash <<< "$(cat /etc/app/config.yml)"'),
    ("fp-ldap-filter", "ldapsearch -x -H ldap://dc1 -b dc=corp,dc=local '(userPassword=*)' dn"),
    (
        "fp-sha1-etag",
        "curl -H 'If-None-Match: \"5d41402abc4b2a76b9719d911017c592\"' https://cdn.corp.io/app.js -I",
    ),
    ("fp-systemd-unit-hash", "systemctl status app@4f9a8b7c.service"),
    ("fp-python-getenv", "python3 -c \"import os; print(len(os.environ.get('API_KEY', '')))\""),
    (
        "fp-psql-password-column",
        'psql -c "SELECT id, password_changed_at FROM users WHERE id = 42"',
    ),
    ("fp-dollar-bin-help", "$BIN --token-file /run/secrets/tok sync --dry-run"),
    ("fp-sudo-l", "sudo -l -U deploy"),
    ("fp-ssh-remote-ls", "ssh db1.corp.io 'ls -l /etc/mysql/conf.d'"),
    ("fp-base64-public", "echo 'aGVsbG8gd29ybGQ=' | base64 -d | wc -c"),
    ("fp-git-clone-plain", "git clone https://github.com/acme/infra.git --depth 1"),
    ("fp-url-user-only", "psql postgres://report@db.corp.io:5432/app -c 'select 1'"),
]


def main() -> None:
    write_cases(
        "cmdline_blind4_cases.jsonl",
        SECRETS,
        BENIGN,
        {"written": "before-blind4-rules"},
        blind=True,
    )


if __name__ == "__main__":
    main()
