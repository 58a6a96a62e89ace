"""Writes cmdline_general_cases.jsonl: secrets typed on command lines in shapes no per-tool
rule names (issue 33, cause 10: "of new kinds at most 5%"): options of any tool whose name
says secret (long, single-dash, camelCase, snake_case, dotted properties), `user:password`
in any word, passwords in the code given to an interpreter (`python3 -c`, `node -e`,
`perl -e`, `ruby -e`, `php -r`, PowerShell), in SQL of any client, in request bodies
(`-d`, `--data-raw`, httpie's `key=value`), here-documents and here-strings, and tools
called through a variable or a path; then lines of the same shapes that hold none (option
names that point at a file, a URL, a name or a length; placeholders). Written and labelled
before any rule for these shapes: every third case of each kind (`blind`: true) is never
looked at while the rules are tuned. Values are synthetic.

    python tests/data/secrets/make_cmdline_general_corpus.py
"""

from __future__ import annotations

from make_cmdline_corpus import write_cases

# (source, command line, the secret or the secrets it holds)
SECRETS: list[tuple[str, str, list[str]]] = [
    # options whose name says secret, on tools no rule names
    (
        "argocd-password",
        "argocd login cd.example.com --username admin --password Arg0CdPw9",
        ["Arg0CdPw9"],
    ),
    ("firebase-token", "firebase deploy --only hosting --token FbDepl0yTok77", ["FbDepl0yTok77"]),
    ("netlify-auth", "netlify deploy --prod --auth NetlifyAuth9x", ["NetlifyAuth9x"]),
    (
        "kcadm-path-password",
        (
            "/opt/keycloak/bin/kcadm.sh config credentials --server http://kc:8080 --realm "
            "master --user admin --password KcAdmCli9"
        ),
        ["KcAdmCli9"],
    ),
    ("camel-apitoken", "acme-sync --apiToken AcmeT0k55x --dry-run", ["AcmeT0k55x"]),
    (
        "pwsh-style-apikey",
        (
            "nuget push pkg.1.0.nupkg -ApiKey NugetK3y9x -Source "
            "https://nuget.example.com/v3/index.json"
        ),
        ["NugetK3y9x"],
    ),
    (
        "gradle-camel-property",
        "gradle publish -Psigning.password=GradleS1gn9 -PossrhPassword=OssrhPw77",
        ["GradleS1gn9", "OssrhPw77"],
    ),
    (
        "client-secret-eq",
        "oauth2c https://id.example.com --client-id app --client-secret=Cl1entSecr3t",
        ["Cl1entSecr3t"],
    ),
    (
        "access-key-snake",
        "minio-client-x --access_key AKX --secret_access_key M1nioSecr3tKey",
        ["M1nioSecr3tKey"],
    ),
    (
        "private-key-inline",
        "signer --private-key 4f3c2b1a9e8d7c6b5a4f3e2d1c0b9a8f sign tx.json",
        ["4f3c2b1a9e8d7c6b5a4f3e2d1c0b9a8f"],
    ),
    (
        "cookie-option",
        "scraper --cookie 'sessionid=SessC00kie77x' https://shop.example.com",
        ["SessC00kie77x"],
    ),
    (
        "snmp-community-long",
        "check_snmp -H 10.0.0.1 --community Comm8nityX -o sysUpTime.0",
        ["Comm8nityX"],
    ),
    (
        "session-token-opt",
        "awscurl --session-token FQoGZXIvYXdzEBYaDFakeSessTok9 https://api",
        ["FQoGZXIvYXdzEBYaDFakeSessTok9"],
    ),
    ("dynamic-name-password", "$CLI --user ops --password DynCl1Pw9 status", ["DynCl1Pw9"]),
    (
        "dynamic-subst-token",
        '"$(which custom-deploy)" --token=Subst1tTok99 --env prod',
        ["Subst1tTok99"],
    ),
    (
        "auth-cred-user-pass",
        "sqlmap -u 'https://t.example.com/?id=1' --auth-type=Basic --auth-cred=admin:SqlM4pCred",
        ["SqlM4pCred"],
    ),
    (
        "jenkins-auth",
        "java -jar jenkins-cli.jar -s https://ci.example.com -auth admin:J3nkinsTok9 who-am-i",
        ["J3nkinsTok9"],
    ),
    # user:password in any word
    (
        "user-colon-pass-u",
        "evil-winrm -i 10.0.0.5 -u Administrator -p 'Ev1lW1nRm!'",
        ["Ev1lW1nRm!"],
    ),
    (
        "user-eq-colon",
        "httpx-cli --user=deploy:Httpx9Pass https://h.example.com/api",
        ["Httpx9Pass"],
    ),
    ("impacket-user-pass-host", "impacket-psexec 'CORP/admin:Imp4cketPw@10.0.0.5'", ["Imp4cketPw"]),
    ("govc-user-pass-host", "govc ls -u 'root:G0vcPass9@vc.example.com' /dc1/vm", ["G0vcPass9"]),
    ("httpie-a", "http -a alice:Ht7pieAuth GET https://api.example.com/me", ["Ht7pieAuth"]),
    (
        "ovftool-vi-url",
        "ovftool --noSSLVerify vi://root:0vfToolPw@esx1.example.com/vm1 /tmp/vm1.ova",
        ["0vfToolPw"],
    ),
    ("hydra-l-p", "hydra -l admin -p Hydr4Pass9 ssh://10.0.0.5", ["Hydr4Pass9"]),
    # code given to an interpreter
    (
        "python-psycopg2",
        (
            "python3 -c \"import psycopg2; psycopg2.connect(host='db', user='app', "
            "password='PyPg2Pw9')\""
        ),
        ["PyPg2Pw9"],
    ),
    (
        "python-pymysql-passwd",
        'python3 -c \'import pymysql; pymysql.connect(host="db", user="u", passwd="PyMyPw77")\'',
        ["PyMyPw77"],
    ),
    (
        "python-bcrypt",
        "python3 -c 'import bcrypt; print(bcrypt.hashpw(b\"Bcr7ptPw9\", bcrypt.gensalt()))'",
        ["Bcr7ptPw9"],
    ),
    (
        "node-object-key",
        "node -e \"const R=require('ioredis'); new R({host:'c', password:'N0deRedis5'}).ping()\"",
        ["N0deRedis5"],
    ),
    (
        "node-headers-token",
        'node -e \'fetch("https://api.example.com", {headers: {"X-Api-Token": "N0deHdrTok9"}})\'',
        ["N0deHdrTok9"],
    ),
    (
        "perl-dbi-positional",
        'perl -MDBI -e \'DBI->connect("dbi:Pg:dbname=app", "app", "PerlDb1Pw")\'',
        ["PerlDb1Pw"],
    ),
    (
        "ruby-kwarg",
        'ruby -e \'require "net/ssh"; Net::SSH.start("h", "u", password: "RbSsh4Pw9")\'',
        ["RbSsh4Pw9"],
    ),
    (
        "php-password-hash",
        "php -r 'echo password_hash(\"PhpH4shPw\", PASSWORD_DEFAULT);'",
        ["PhpH4shPw"],
    ),
    (
        "php-mysqli-positional",
        'php -r \'$c = new mysqli("db", "root", "PhpMys9li"); echo $c->ping();\'',
        ["PhpMys9li"],
    ),
    (
        "pwsh-securestring",
        (
            "pwsh -c \"$p = ConvertTo-SecureString 'PwshS3cure9' -AsPlainText -Force; "
            'Connect-X -Credential $p"'
        ),
        ["PwshS3cure9"],
    ),
    ("yq-set-password", "yq -i '.db.password = \"YqS3tPw99\"' values.yaml", ["YqS3tPw99"]),
    ("jq-arg-secret", "jq -n --arg api_token JqArgT0k9 '{token: $api_token}'", ["JqArgT0k9"]),
    # SQL of any client
    (
        "mysql-set-password-for",
        "mysql -uroot -e \"SET PASSWORD FOR 'app'@'%' = 'SetPwF0r9'\"",
        ["SetPwF0r9"],
    ),
    (
        "cqlsh-create-role",
        "cqlsh db1 -e \"CREATE ROLE ops WITH PASSWORD = 'CqlR0le9x' AND LOGIN = true\"",
        ["CqlR0le9x"],
    ),
    (
        "influxql-create-user",
        "influx -execute \"CREATE USER adm WITH PASSWORD 'Infl8xQl9' WITH ALL PRIVILEGES\"",
        ["Infl8xQl9"],
    ),
    (
        "usql-create-login",
        "usql mssql://sa@db -c \"CREATE LOGIN app WITH PASSWORD = 'UsqlL0gin9'\"",
        ["UsqlL0gin9"],
    ),
    # request bodies
    (
        "curl-form-body",
        "curl -s -d 'username=admin&password=F0rmPw77&remember=1' https://h.example.com/login",
        ["F0rmPw77"],
    ),
    (
        "curl-json-camel",
        (
            "curl -H 'Content-Type: application/json' --data-raw "
            '\'{"apiKey":"DataRawK3y55"}\' https://h.example.com/v1'
        ),
        ["DataRawK3y55"],
    ),
    (
        "curl-client-secret-d",
        (
            "curl -X POST https://id.example.com/token -d grant_type=client_credentials -d "
            "client_id=abc -d client_secret=CliS3c9xyz"
        ),
        ["CliS3c9xyz"],
    ),
    (
        "httpie-body-pairs",
        "http POST https://h.example.com/login username=bob password=Ht7pBody9",
        ["Ht7pBody9"],
    ),
    (
        "wget-post-data",
        "wget -qO- --post-data 'user=a&passwd=WgetP0st8' https://h.example.com/auth",
        ["WgetP0st8"],
    ),
    (
        "ansible-json-extra-vars",
        'ansible-playbook site.yml -e \'{"db_password": "AnsJs0nPw9"}\'',
        ["AnsJs0nPw9"],
    ),
    (
        "kafka-jaas",
        "kafka-topics --bootstrap-server k:9093 --command-config /dev/stdin --list <<< "
        "'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
        'required username="u" password="KafkaJ4as9";\'',
        ["KafkaJ4as9"],
    ),
    # here-documents and here-strings
    (
        "heredoc-identified-by",
        "mysql -u root <<'SQL'\nALTER USER 'root'@'localhost' IDENTIFIED BY 'HereD0cPw1';\nSQL",
        ["HereD0cPw1"],
    ),
    (
        "herestring-psql-role",
        "psql -U postgres <<< \"ALTER ROLE app PASSWORD 'PsqlHs9Pw'\"",
        ["PsqlHs9Pw"],
    ),
    (
        "heredoc-python-token",
        (
            "python3 - <<'PY'\nimport requests\nrequests.get('https://api', "
            "headers={'Authorization': 'token PyHd0cTok9x'})\nPY"
        ),
        ["PyHd0cTok9x"],
    ),
    # subcommands and keys that name the secret
    ("neo4j-initial-password", "neo4j-admin dbms set-initial-password Ne04jInit9", ["Ne04jInit9"]),
    ("dotnet-user-secrets", 'dotnet user-secrets set "Db:Password" "D0tnetUs9"', ["D0tnetUs9"]),
    ("git-config-smtppass", "git config --global sendemail.smtppass G1tSmtpPw9", ["G1tSmtpPw9"]),
    (
        "helm-set-camel",
        "helm install pg bitnami/postgresql --set auth.postgresPassword=H3lmPgPw9",
        ["H3lmPgPw9"],
    ),
    (
        "kubectl-from-literal",
        "kubectl create secret generic db --from-literal=password=KubeL1t9x",
        ["KubeL1t9x"],
    ),
    (
        "nmap-script-args",
        (
            "nmap -p 80 --script http-brute --script-args "
            "'http.username=admin,http.password=NmapArg9x' h"
        ),
        ["NmapArg9x"],
    ),
    (
        "expdp-user-pass",
        "expdp system/Expdp9Pw@ORCL schemas=hr directory=DP dumpfile=hr.dmp",
        ["Expdp9Pw"],
    ),
    (
        "dig-tsig",
        "dig -y hmac-sha256:xfer-key:VHNpZ1NlY3JldDEyMw== @ns1.example.com example.com AXFR",
        ["VHNpZ1NlY3JldDEyMw=="],
    ),
]

BENIGN: list[tuple[str, str]] = [
    ("password-file-opt", "restic -r /srv/repo --password-file /root/.restic-pw snapshots"),
    (
        "token-url-opt",
        (
            "oauth2c https://id.example.com --token-url https://id.example.com/oauth/token "
            "--client-id app"
        ),
    ),
    ("auth-type-opt", "sqlmap -u 'https://t.example.com/?id=1' --auth-type=Basic --batch"),
    ("secret-name-opt", "aws secretsmanager describe-secret --secret-id prod/db --query Name"),
    (
        "token-ttl-pairs",
        "vault write auth/approle/role/ci secret_id_ttl=10m token_ttl=20m token_max_ttl=30m",
    ),
    (
        "gcloud-secret-name",
        "gcloud secrets versions access latest --secret=db-password --project acme",
    ),
    ("key-file-opt", "gcloud auth activate-service-account --key-file=/etc/gcp/sa.json"),
    (
        "get-login-password",
        (
            "aws ecr get-login-password --region eu-west-1 | docker login --username AWS "
            "--password-stdin 123456789012.dkr.ecr.eu-west-1.amazonaws.com"
        ),
    ),
    ("kubectl-get-secrets", "kubectl get secrets -n kube-system -o name"),
    ("jsonpath-password", "kubectl get secret db -o jsonpath='{.data.password}'"),
    ("git-credential-helper", "git config --global credential.helper store"),
    ("python-secrets-module", "python3 -c 'import secrets; print(secrets.token_hex(16))'"),
    ("node-env-check", "node -e \"console.log(process.env.API_TOKEN ? 'set' : 'unset')\""),
    (
        "sql-password-expired",
        "mysql -e \"SELECT user, host FROM mysql.user WHERE password_expired = 'Y'\"",
    ),
    ("ldapsearch-attr", "ldapsearch -x -LLL -b dc=corp '(uid=bob)' userPassword"),
    ("journalctl-priority", "journalctl -u nginx -p err --since today"),
    ("curl-env-token", 'curl -H "Authorization: Bearer $TOKEN" https://api.example.com/v1/me'),
    ("dynamic-password-var", '$CLI --user ops --password "$OPS_PASSWORD" status'),
    ("grep-token", "grep -rn 'api_token' src/ --include=*.py"),
    ("password-length", "pwgen --passwd-length 24 --secure 1"),
    (
        "heredoc-placeholder",
        "cat <<'EOF' > app.env.example\nDB_PASSWORD=<password>\nAPI_TOKEN=${API_TOKEN}\nEOF",
    ),
    ("sshd-grep", "sshd -T | grep -i passwordauthentication"),
]


def main() -> None:
    write_cases("cmdline_general_cases.jsonl", SECRETS, BENIGN, {"written": "before-general-rules"})


if __name__ == "__main__":
    main()
