# ruff: noqa: E501
"""Writes cmdline_blind5_cases.jsonl: secrets an ops agent's commands and their output carry,
written from knowledge of the tools and formats only, before reading the redaction rules or
the other corpora (issue 33, cause 10: "of new kinds at most 5%").

Each row: `source` (family prefix before the first `-`), `kind` (`tp` holds a secret, `fp`
is a plain line that must be logged as typed), `text`, `secret` (= `pieces[0]`), `pieces`
(every piece that must not reach the log: the secret as it appears in the text, encoded or
split when it is), `field` (`command`: logged as a command line, `Redactor.redact_command`;
`output`: logged as output, `Redactor.redact`), `written`, `blind`.

Placeholders: `<PASSWORD>`, `${VAR}`, `$VAR`, `$(cat FILE)`, masks (`****`), `<sensitive>`
and file names are no secret, and neither are hashes of files, commit SHAs, image digests,
UUIDs with no secret-naming key, public keys, certificates, fingerprints, signatures and
base64 of plain text: changing them is over-redaction. Well-known default passwords
(`changeme`, `admin`) are ambiguous and left out of both sides. A UUID or hex string that a
key names as a secret (`secret-key=`, `secret_id=`, `GenieKey`, `CONSUL_HTTP_TOKEN=`) is one.

    python tests/data/secrets/make_cmdline_blind5_corpus.py
"""

from __future__ import annotations

import base64
import gzip
import json
import random
import string
import urllib.parse
import uuid
from pathlib import Path

R = random.Random(20261208)
ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
ROWS: list[dict[str, object]] = []


def rnd(alphabet: str, n: int) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


def pw(n: int = 18) -> str:
    """A password as people pick them when a generator is not at hand: letters, digits and
    a few symbols that need no quoting in single quotes."""
    core = rnd(ALNUM, n - 3)
    return core[:5] + R.choice("!#%^*-_.") + core[5:] + R.choice("!#%-_") + rnd(string.digits, 1)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def uid() -> str:
    return str(uuid.UUID(int=R.getrandbits(128), version=4))


def jwt(payload: dict[str, object]) -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    head = part({"alg": "RS256", "kid": rnd(URLSAFE, 43), "typ": "JWT"})
    sig = base64.urlsafe_b64encode(R.randbytes(256)).decode().rstrip("=")
    return f"{head}.{part(payload)}.{sig}"


def pem_body(
    n: int, prefix: bytes = b"0\x82\x04\xbd\x02\x01\x000\r\x06\t*\x86H\x86\xf7\r\x01\x01\x01"
) -> str:
    return b64(prefix + R.randbytes(n))


def lines64(text: str, width: int = 64) -> list[str]:
    return [text[i : i + width] for i in range(0, len(text), width)]


def tp(source: str, text: str, *pieces: str, field: str = "command") -> None:
    assert pieces and all(p in text for p in pieces), source
    ROWS.append(
        {
            "source": source,
            "kind": "tp",
            "text": text,
            "secret": pieces[0],
            "pieces": list(pieces),
            "field": field,
            "written": "before-blind5-rules",
            "blind": True,
        }
    )


def fp(source: str, text: str, field: str = "command") -> None:
    ROWS.append(
        {
            "source": f"fp-{source}",
            "kind": "fp",
            "text": text,
            "secret": "",
            "pieces": [],
            "field": field,
            "written": "before-blind5-rules",
            "blind": True,
        }
    )


def out(source: str, text: str, *pieces: str) -> None:
    tp(source, text, *pieces, field="output")


# --- uri: connection URIs of many schemes ------------------------------------------------
p = pw()
tp(
    "uri-celery-amqp",
    f"celery -A shop inspect ping --broker amqp://orders:{p}@rabbit-01.internal:5672//",
    p,
)
p = pw(22)
tp(
    "uri-mongosh-srv",
    f'mongosh "mongodb+srv://reporting:{p}@cluster0.ab1cd.mongodb.net/analytics?retryWrites=true&w=majority"',
    p,
)
p = rnd(ALNUM, 32)
tp("uri-redis-cli-u", f"redis-cli -u redis://default:{p}@cache.internal:6379/0 PING", p)
p = rnd(ALNUM, 40)
tp(
    "uri-rediss-nouser",
    f"redis-cli --tls -u rediss://:{p}@cache-tls.internal:6380 INFO replication",
    p,
)
p = pw()
tp("uri-smbclient-U", f"smbclient //fs01.corp.example/finance -U 'CORP\\svc_backup%{p}' -c 'ls'", p)
p = pw()
tp("uri-curl-sftp", f"curl -sS --list-only sftp://deploy:{p}@files.example.net/upload/", p)
p = pw()
tp("uri-lftp-u", f"lftp -u ftpuser,{p} ftp.example.org -e 'cls -l; bye'", p)
p = pw()
tp("uri-mysqlsh", f"mysqlsh mysql://root:{p}@10.0.3.4:3306 --sql -e 'SHOW PROCESSLIST'", p)
p = pw(24)
tp("uri-nats-sub", f"nats sub -s nats://svc-orders:{p}@nats.internal:4222 'orders.>'", p)
p = pw()
tp(
    "uri-git-clone-basic",
    f"git clone https://deploy-bot:{p}@git.example.org/ops/infra.git /tmp/infra",
    p,
)
p = pw()
tp(
    "uri-http-proxy-env",
    f"https_proxy=http://proxyuser:{p}@proxy.corp.example:3128 curl -sI https://pypi.org/simple/",
    p,
)
p = pw()
tp(
    "uri-etcdctl-user",
    f"etcdctl --endpoints=https://10.0.0.11:2379 --user root:{p} get / --prefix --keys-only",
    p,
)
p = pw()
tp(
    "uri-amqps-rabbitmqadmin",
    f"rabbitmqadmin --host=rabbit-01 --username=monitor --password={p} list queues",
    p,
)
p = pw()
tp(
    "uri-ldaps-url",
    f"ldapwhoami -H 'ldaps://dc01.corp.example' -x -D 'CN=svc ldap,OU=Service,DC=corp,DC=example' -w '{p}'",
    p,
)
p = pw()
tp(
    "uri-kafka-jaas",
    'kafka-topics --bootstrap-server kafka-1:9093 --list --command-config /dev/stdin <<< \'security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" password="'
    + p
    + "\";'",
    p,
)
p = pw()
out(
    "uri-heroku-config",
    f"=== shop-prod Config Vars\nDATABASE_URL: postgres://u7f3k2:{p}@ec2-52-1-2-3.compute-1.amazonaws.com:5432/d8a1b2\nNODE_ENV:     production",
    p,
)
p = pw()
tp(
    "uri-cypher-shell",
    f"cypher-shell -a neo4j://graph.internal:7687 -u neo4j -p '{p}' 'MATCH (n) RETURN count(n)'",
    p,
)
p = pw()
tp(
    "uri-svn-checkout",
    f"svn checkout --non-interactive --username deploy --password '{p}' https://svn.example.com/repo/trunk",
    p,
)

# --- cloud: cloud CLIs ----------------------------------------------------------------------
p = rnd(ALNUM, 3) + "8Q~" + rnd(ALNUM + "~._-", 34)
tp("cloud-az-login-sp", f"az login --service-principal -u {uid()} -p '{p}' --tenant {uid()}", p)
p = b64(R.randbytes(64))
tp(
    "cloud-az-storage-key",
    f"az storage blob list --account-name stshoplogs --account-key {p} -c logs -o table",
    p,
)
p = b64(R.randbytes(64))
tp(
    "cloud-az-connstr",
    f'az storage container list --connection-string "DefaultEndpointsProtocol=https;AccountName=stshoplogs;AccountKey={p};EndpointSuffix=core.windows.net"',
    p,
)
p = urllib.parse.quote(b64(R.randbytes(32)), safe="")
tp(
    "cloud-azcopy-sas",
    f"azcopy list 'https://stshoplogs.blob.core.windows.net/backups?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-12-31T00:00:00Z&st=2026-12-01T00:00:00Z&spr=https&sig={p}'",
    p,
)
p = "ya29.a0" + rnd(URLSAFE, 150)
tp(
    "cloud-gcloud-ya29",
    f'curl -H "Authorization: Bearer {p}" https://storage.googleapis.com/storage/v1/b/shop-backups/o',
    p,
)
p = "dop_v1_" + rnd(HEX, 64)
tp("cloud-doctl-init", f"doctl auth init --context ops --access-token {p}", p)
p = rnd(HEX, 64)
tp("cloud-linode-env", f"LINODE_CLI_TOKEN={p} linode-cli linodes list --text", p)
p = pw(20)
out(
    "cloud-oci-config",
    f"[DEFAULT]\nuser=ocid1.user.oc1..aaaaaaaa{rnd(LOWER, 52)}\nfingerprint=3c:91:7a:22:0b:5e:41:aa:09:c2:77:18:de:f0:6b:11\nkey_file=/root/.oci/oci_api_key.pem\npass_phrase={p}\ntenancy=ocid1.tenancy.oc1..aaaaaaaa{rnd(LOWER, 52)}\nregion=eu-frankfurt-1",
    p,
)
p = rnd(ALNUM, 64)
tp("cloud-hcloud-env", f"HCLOUD_TOKEN={p} hcloud server list -o columns=name,status,ipv4", p)
p = uid()
tp(
    "cloud-scw-init",
    f"scw init access-key=SCW{rnd(UPPER, 17)} secret-key={p} organization-id={uid()} send-telemetry=false",
    p,
)
p = rnd(ALNUM + "/+", 40)
tp("cloud-aws-configure-set", f"aws configure set aws_secret_access_key {p} --profile ops", p)
p = "FwoGZXIvYXdzE" + rnd(ALNUM + "/+", 300)
tp(
    "cloud-aws-session-env",
    f"AWS_ACCESS_KEY_ID=ASIA{rnd(UPPER, 16)} AWS_SECRET_ACCESS_KEY={rnd(ALNUM + '/+', 40)} AWS_SESSION_TOKEN={p} aws s3 ls s3://shop-backups/",
    p,
)
p = rnd(ALNUM, 30)
tp(
    "cloud-aliyun-configure",
    f"aliyun configure set --profile ops --mode AK --region cn-hangzhou --access-key-id LTAI5t{rnd(ALNUM, 18)} --access-key-secret {p}",
    p,
)
p = rnd(UPPER, 36)
tp("cloud-vultr-env", f"VULTR_API_KEY={p} vultr-cli instance list", p)
p = rnd(URLSAFE, 44)
tp("cloud-ibmcloud-apikey", f"ibmcloud login --apikey {p} -r eu-de -g ops", p)
p = pw()
tp(
    "cloud-cf-login",
    f"cf login -a https://api.sys.example.com -u ops@example.com -p '{p}' -o shop -s prod",
    p,
)
p = pw()
tp(
    "cloud-openstack-pass",
    f"openstack --os-auth-url https://keystone.example.com:5000/v3 --os-username ops --os-password '{p}' --os-project-name shop server list",
    p,
)
p = uid()
tp("cloud-heroku-env", f"HEROKU_API_KEY={p} heroku ps -a shop-prod", p)
p = rnd(ALNUM + "/+", 40)
out(
    "cloud-aws-credentials-file",
    f"[default]\naws_access_key_id = AKIA{rnd(UPPER, 16)}\naws_secret_access_key = {p}\n\n[ops]\nregion = eu-west-1",
    p,
)
p = "dop_v1_" + rnd(HEX, 64)
out("cloud-doctl-config", f"access-token: {p}\ncontext: default\noutput: text", p)

# --- ci: CI/CD tokens ---------------------------------------------------------------------
p = "glpat-" + rnd(URLSAFE, 20)
tp(
    "ci-gitlab-remote-url",
    f"git remote set-url origin https://oauth2:{p}@gitlab.example.com/shop/api.git",
    p,
)
p = "glpat-" + rnd(URLSAFE, 20)
tp(
    "ci-gitlab-private-token",
    f'curl -s --header "PRIVATE-TOKEN: {p}" "https://gitlab.example.com/api/v4/projects?per_page=100"',
    p,
)
p = "glptt-" + rnd(HEX, 40)
tp(
    "ci-gitlab-trigger",
    f"curl -X POST -F token={p} -F ref=main https://gitlab.example.com/api/v4/projects/42/trigger/pipeline",
    p,
)
p = "GR1348941" + rnd(URLSAFE, 20)
tp(
    "ci-gitlab-runner-register",
    f"gitlab-runner register --non-interactive --url https://gitlab.example.com --registration-token {p} --executor docker --docker-image alpine:3.19",
    p,
)
p = "11" + rnd(HEX, 32)
tp(
    "ci-jenkins-curl-u",
    f"curl -X POST -u ops:{p} https://jenkins.example.com/job/deploy-api/buildWithParameters?ENV=prod",
    p,
)
p = "11" + rnd(HEX, 32)
tp(
    "ci-jenkins-cli-auth",
    f"java -jar jenkins-cli.jar -s https://jenkins.example.com/ -auth admin:{p} list-jobs",
    p,
)
p = "CCIPAT_" + rnd(ALNUM, 22) + "_" + rnd(HEX, 40)
tp("ci-circleci-header", f'curl -s -H "Circle-Token: {p}" https://circleci.com/api/v2/me', p)
p = rnd(HEX, 40)
tp("ci-circleci-setup", f"circleci setup --no-prompt --host https://circleci.com --token {p}", p)
p = "bkua_" + rnd(HEX, 40)
tp(
    "ci-buildkite-bearer",
    f'curl -s -H "Authorization: Bearer {p}" "https://api.buildkite.com/v2/organizations/shop/builds?state=failed"',
    p,
)
p = rnd(HEX, 50)
tp("ci-buildkite-agent-token", f"buildkite-agent start --token {p} --tags queue=deploy", p)
p = "ghp_" + rnd(ALNUM, 36)
tp("ci-gh-with-token", f"gh auth login --with-token <<< {p}", p)
p = "ghs_" + rnd(ALNUM, 36)
tp("ci-github-app-clone", f"git clone https://x-access-token:{p}@github.com/shop/deploy.git", p)
p = "github_pat_11" + rnd(UPPER, 20) + "_" + rnd(ALNUM, 59)
tp("ci-github-fine-pat", f'curl -H "Authorization: token {p}" https://api.github.com/user/repos', p)
p = rnd(ALNUM, 32)
tp(
    "ci-drone-env",
    f"DRONE_SERVER=https://drone.example.com DRONE_TOKEN={p} drone build ls shop/api",
    p,
)
p = rnd("abcdefghijklmnopqrstuvwxyz234567", 52)
tp("ci-azdo-pat-clone", f"git clone https://build:{p}@dev.azure.com/shop/platform/_git/infra", p)
p = "ATBB" + rnd(ALNUM, 28) + rnd(HEX.upper(), 8)
tp(
    "ci-bitbucket-app-pass",
    f"curl -s -u ops-bot:{p} https://api.bitbucket.org/2.0/repositories/shop",
    p,
)
p = pw()
tp(
    "ci-argocd-login",
    f"argocd login argocd.example.com --username admin --password '{p}' --grpc-web",
    p,
)
p = "glrt-" + rnd(URLSAFE, 20)
out(
    "ci-runner-config-toml",
    f'concurrent = 4\n\n[[runners]]\n  name = "build-01"\n  url = "https://gitlab.example.com/"\n  token = "{p}"\n  executor = "docker"',
    p,
)

# --- pkg: package registries ----------------------------------------------------------------
p = "npm_" + rnd(ALNUM, 36)
tp("pkg-npm-config-set", f"npm config set //registry.npmjs.org/:_authToken {p}", p)
p = "ghp_" + rnd(ALNUM, 36)
out(
    "pkg-npmrc-cat",
    f"@shop:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken={p}\nalways-auth=true",
    p,
)
p = b64(f"ci:{pw()}".encode())
tp("pkg-npmrc-auth-b64", f'echo "//registry.example.com/:_auth={p}" >> ~/.npmrc', p)
p = "pypi-AgEIcHlwaS5vcmc" + rnd(URLSAFE, 160)
tp("pkg-twine-upload", f"twine upload -u __token__ -p {p} dist/*", p)
p = "pypi-AgEIcHlwaS5vcmc" + rnd(URLSAFE, 160)
out(
    "pkg-pypirc-cat",
    f"[distutils]\nindex-servers = pypi\n\n[pypi]\n  username = __token__\n  password = {p}",
    p,
)
p = pw()
tp(
    "pkg-pip-index-url",
    f"pip install --index-url https://ci:{p}@pypi.internal.example.com/simple/ shop-common==2.4.1",
    p,
)
p = rnd("abcdefghijklmnopqrstuvwxyz234567", 52)
tp(
    "pkg-dotnet-nuget-source",
    f"dotnet nuget add source https://pkgs.dev.azure.com/shop/_packaging/feed/nuget/v3/index.json -n feed -u build -p {p} --store-password-in-clear-text",
    p,
)
p = "oy2" + rnd("abcdefghijklmnopqrstuvwxyz234567", 43)
tp(
    "pkg-nuget-push",
    f"nuget push Shop.Core.2.4.1.nupkg -ApiKey {p} -Source https://api.nuget.org/v3/index.json",
    p,
)
p = "rubygems_" + rnd(HEX, 48)
tp("pkg-gem-push-env", f"GEM_HOST_API_KEY={p} gem push shop-client-1.3.0.gem", p)
p = "rubygems_" + rnd(HEX, 48)
out("pkg-gem-credentials", f"---\n:rubygems_api_key: {p}", p)
p = b64(f"robot$ci:{pw()}".encode())
out(
    "pkg-docker-config",
    '{\n\t"auths": {\n\t\t"harbor.example.com": {\n\t\t\t"auth": "' + p + '"\n\t\t}\n\t}\n}',
    p,
)
p = pw()
tp("pkg-docker-login-p", f"docker login -u 'robot$ci' -p '{p}' harbor.example.com", p)
p = "ghp_" + rnd(ALNUM, 36)
tp("pkg-docker-login-echo", f"echo {p} | docker login ghcr.io -u shop-bot --password-stdin", p)
p = pw()
tp("pkg-composer-http-basic", f"composer config --global http-basic.repo.example.com ci {p}", p)
p = "cio" + rnd(ALNUM, 32)
tp("pkg-cargo-login", f"cargo login {p}", p)
p = pw()
tp("pkg-poetry-http-basic", f"poetry config http-basic.private ci '{p}'", p)
p = pw()
tp(
    "pkg-helm-repo-add",
    f"helm repo add private https://charts.example.com --username ci --password '{p}'",
    p,
)
p = pw()
tp("pkg-gradle-prop", f"./gradlew publish -PmavenUser=ci -PmavenPassword={p}", p)
p = "AKCp8" + rnd(ALNUM, 68)
tp(
    "pkg-artifactory-apikey",
    f'curl -H "X-JFrog-Art-Api: {p}" https://art.example.com/artifactory/api/repositories',
    p,
)
p = pw()
out(
    "pkg-maven-settings",
    f"<settings>\n  <servers>\n    <server>\n      <id>releases</id>\n      <username>deployer</username>\n      <password>{p}</password>\n    </server>\n  </servers>\n</settings>",
    p,
)

# --- k8s: Kubernetes -------------------------------------------------------------------------
p = pw()
tp(
    "k8s-secret-from-literal",
    f"kubectl -n shop create secret generic db-creds --from-literal=username=app --from-literal=password='{p}'",
    p,
)
p = "ghp_" + rnd(ALNUM, 36)
tp(
    "k8s-secret-docker-registry",
    f"kubectl create secret docker-registry regcred --docker-server=ghcr.io --docker-username=shop-bot --docker-password={p}",
    p,
)
p = b64(pw().encode())
out(
    "k8s-get-secret-yaml",
    f"apiVersion: v1\ndata:\n  password: {p}\n  username: YXBw\nkind: Secret\nmetadata:\n  name: db-creds\n  namespace: shop\ntype: Opaque",
    p,
)
tok = jwt(
    {
        "iss": "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": "shop",
        "sub": "system:serviceaccount:shop:deployer",
    }
)
p = b64(tok.encode())
out("k8s-jsonpath-token-b64", p, p)
p = jwt(
    {
        "aud": ["https://kubernetes.default.svc"],
        "exp": 1796000000,
        "sub": "system:serviceaccount:ci:runner",
    }
)
tp("k8s-kubectl-token-flag", f"kubectl --server https://10.0.0.1:6443 --token={p} get pods -A", p)
p = jwt({"sub": "system:serviceaccount:ci:deployer", "iss": "kubernetes/serviceaccount"})
tp("k8s-set-credentials", f"kubectl config set-credentials ci-deployer --token={p}", p)
p = b64(
    b"-----BEGIN RSA PRIVATE KEY-----\n"
    + "\n".join(lines64(pem_body(600))).encode()
    + b"\n-----END RSA PRIVATE KEY-----\n"
)
out(
    "k8s-config-view-raw",
    f"users:\n- name: kubernetes-admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM4akNDQWRxZ0F3SUJBZ0lJ\n    client-key-data: {p}",
    p,
)
p = pw()
tp(
    "k8s-helm-set-password",
    f"helm upgrade --install shop-db bitnami/postgresql -n shop --set auth.postgresPassword='{p}' --set auth.database=shop",
    p,
)
p = b64(("sk_live_" + rnd(ALNUM, 24)).encode())
tp(
    "k8s-patch-secret-data",
    f'kubectl -n shop patch secret payments -p \'{{"data":{{"STRIPE_KEY":"{p}"}}}}\'',
    p,
)
p = rnd(LOWER, 6) + "." + rnd(LOWER, 16)
tp(
    "k8s-kubeadm-join",
    f"kubeadm join 10.0.0.1:6443 --token {p} --discovery-token-ca-cert-hash sha256:{rnd(HEX, 64)}",
    p,
)
p = rnd(HEX, 64)
tp(
    "k8s-kubeadm-cert-key",
    f"kubeadm join 10.0.0.1:6443 --control-plane --certificate-key {p} --token {rnd(LOWER, 6)}.{rnd(LOWER, 16)} --discovery-token-unsafe-skip-ca-verification",
    p,
)
p = b64(pw().encode())
p2 = b64(("AKIA" + rnd(UPPER, 16)).encode())
out(
    "k8s-get-secret-json",
    '{\n    "apiVersion": "v1",\n    "data": {\n        "AWS_SECRET_ACCESS_KEY": "'
    + p
    + '",\n        "AWS_ACCESS_KEY_ID": "'
    + p2
    + '"\n    },\n    "kind": "Secret"\n}',
    p,
)
p = rnd(ALNUM, 32)
out(
    "k8s-describe-pod-env",
    f"    Environment:\n      LOG_LEVEL:       info\n      API_TOKEN:       {p}\n      DB_HOST:         shop-db.shop.svc\n    Mounts:\n      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-7x2kq (ro)",
    p,
)
p = pw()
out(
    "k8s-stringdata-yaml",
    f'apiVersion: v1\nkind: Secret\nmetadata:\n  name: smtp\nstringData:\n  SMTP_PASSWORD: "{p}"\n  SMTP_USER: mailer',
    p,
)

# --- db: database CLIs and connection strings ---------------------------------------------
p = pw()
tp(
    "db-sqlplus-ezconnect",
    f"sqlplus -s system/{p}@//db01.example.com:1521/ORCLPDB1 @/tmp/report.sql",
    p,
)
p = pw()
tp("db-sqlplus-tns", f'echo "select status from v\\$instance;" | sqlplus -s scott/{p}@PROD', p)
p = pw()
tp(
    "db-sqlcmd-P",
    f"sqlcmd -S tcp:sql01.corp.example,1433 -U sa -P '{p}' -Q \"SELECT @@VERSION\"",
    p,
)
p = pw()
tp("db-bcp-P", f"bcp dbo.Orders out /tmp/orders.dat -S sql01 -d shop -U etl -P {p} -c", p)
p = pw()
tp(
    "db-influx1-password",
    f"influx -host influx01 -username admin -password '{p}' -execute 'SHOW DATABASES'",
    p,
)
p = b64(R.randbytes(64)).replace("+", "-").replace("/", "_")
tp(
    "db-influx2-token",
    f"influx query --org shop --token {p} 'from(bucket:\"metrics\") |> range(start: -5m) |> limit(n: 5)'",
    p,
)
p = pw()
tp(
    "db-jdbc-postgres-query",
    f'java -cp shop-tools.jar shop.tools.Migrate --url "jdbc:postgresql://db01:5432/shop?user=app&password={p}&ssl=true"',
    p,
)
p = pw()
tp(
    "db-jdbc-sqlserver",
    f'flyway -url="jdbc:sqlserver://sql01:1433;databaseName=shop;user=sa;password={p};encrypt=true" info',
    p,
)
p = pw()
tp("db-jdbc-oracle-thin", f"liquibase --url=jdbc:oracle:thin:scott/{p}@db01:1521:ORCL status", p)
p = pw()
tp("db-odbc-isql-dsn", f'isql -v -k "DSN=warehouse;UID=report;PWD={{{p}}};"', p)
p = pw()
tp(
    "db-pyodbc-connstr",
    "python3 -c \"import pyodbc; c = pyodbc.connect('DRIVER={ODBC Driver 18 for SQL Server};SERVER=sql01;DATABASE=shop;UID=sa;PWD="
    + p
    + ";TrustServerCertificate=yes'); print(c.execute('select 1').fetchone())\"",
    p,
)
p = pw()
tp(
    "db-mongosh-p",
    f"mongosh --host mongo01 -u admin -p '{p}' --authenticationDatabase admin --eval 'db.serverStatus().connections'",
    p,
)
p = pw()
tp(
    "db-mongodump-uri",
    f'mongodump --uri="mongodb://backup:{p}@mongo01:27017/?authSource=admin" --archive=/backup/mongo.gz --gzip',
    p,
)
p = pw()
tp("db-cqlsh-p", f"cqlsh cass01 -u cassandra -p '{p}' -e 'DESCRIBE KEYSPACES'", p)
p = pw()
tp("db-pgpassword-dump", f"PGPASSWORD='{p}' pg_dump -h db01 -U app -Fc shop > /backup/shop.dump", p)
p = pw()
tp(
    "db-mysql-pwd-env",
    f"MYSQL_PWD='{p}' mysqldump -h db01 -u backup --single-transaction --all-databases | gzip > /backup/all.sql.gz",
    p,
)
p = pw()
tp("db-vsql-w", f"vsql -h vertica01 -U dbadmin -w '{p}' -c 'select version()'", p)
p = pw()
tp(
    "db-snowsql-env",
    f"SNOWSQL_PWD='{p}' snowsql -a xy12345.eu-central-1 -u etl -q 'select current_version()'",
    p,
)
p = pw()
tp(
    "db-redis-user-pass",
    f"redis-cli -h cache01 --user app --pass '{p}' --no-auth-warning DBSIZE",
    p,
)
p = pw()
tp("db-db2-connect", f"db2 connect to SHOPDB user db2inst1 using '{p}'", p)
p = pw()
tp("db-hdbsql-p", f"hdbsql -n hana01:30015 -u SYSTEM -p '{p}' 'select * from dummy'", p)
p = pw()
tp(
    "db-libpq-keyvalue",
    f'psql "host=db01 port=5432 dbname=shop user=app password={p} sslmode=require" -c "select now()"',
    p,
)
p = pw()
tp(
    "db-clickhouse-password",
    f"clickhouse-client --host ch01 --user default --password '{p}' --query 'SELECT version()'",
    p,
)
p = pw()
tp("db-mysql-attached-p", f"mysql -h db01 -u root -p'{p}' -e 'SHOW SLAVE STATUS\\G'", p)

# --- http: auth in headers, cookies, query strings ----------------------------------------
p = rnd(HEX, 32)
tp(
    "http-query-api-key",
    f"curl -s 'https://api.weather.example.com/v1/forecast?city=Berlin&api_key={p}&units=metric'",
    p,
)
p = "EAAB" + rnd(ALNUM, 180)
tp(
    "http-query-access-token",
    f'curl -s "https://graph.facebook.com/v18.0/me/accounts?access_token={p}"',
    p,
)
p = rnd(ALNUM, 40)
tp("http-header-x-api-key", f'curl -s -H "X-API-Key: {p}" https://api.example.net/v2/status', p)
p = (
    b64(json.dumps({"_fresh": True, "user_id": "42"}).encode()).rstrip("=")
    + "."
    + rnd(URLSAFE, 6)
    + "."
    + rnd(URLSAFE, 27)
)
tp(
    "http-cookie-session",
    f'curl -s -b "session={p}; csrftoken=abc" https://admin.example.com/dashboard',
    p,
)
p = rnd(HEX.upper(), 32)
tp(
    "http-cookie-jsessionid",
    f"curl -s -H 'Cookie: JSESSIONID={p}' https://app.example.com/manager/html",
    p,
)
p = b64(f"admin:{pw()}".encode())
tp(
    "http-basic-header",
    f'curl -s -H "Authorization: Basic {p}" https://grafana.example.com/api/datasources',
    p,
)
p = rnd(HEX, 40)
tp(
    "http-token-header",
    f'curl -s -H "Authorization: Token {p}" -H "Accept: application/json" https://netbox.example.com/api/dcim/devices/',
    p,
)
p = rnd(ALNUM, 48)
tp(
    "http-wget-bearer",
    f'wget -qO- --header="Authorization: Bearer {p}" https://api.example.com/v1/exports/latest',
    p,
)
p = rnd(ALNUM, 48)
tp("http-httpie-header", f"http GET https://api.example.com/items Authorization:'Bearer {p}'", p)
p = pw()
tp("http-httpie-auth", f"http -a admin:'{p}' GET https://registry.example.com/v2/_catalog", p)
p = rnd(URLSAFE, 43)
tp("http-oauth2-bearer", f"curl -s --oauth2-bearer {p} https://api.example.com/v1/me", p)
p = rnd(HEX, 64)
tp(
    "http-s3-presigned",
    f"curl -s -o /tmp/report.csv 'https://shop-exports.s3.eu-west-1.amazonaws.com/report.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA{rnd(UPPER, 16)}%2F20261207%2Feu-west-1%2Fs3%2Faws4_request&X-Amz-Date=20261207T230000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={p}'",
    p,
)
p = rnd(ALNUM, 40)
tp(
    "http-client-secret-form",
    f"curl -s -d 'grant_type=client_credentials&client_id=shop-backend&client_secret={p}' https://auth.example.com/oauth/token",
    p,
)
p = pw()
tp(
    "http-json-login",
    f'curl -s -X POST https://app.example.com/api/login -H \'Content-Type: application/json\' -d \'{{"username":"admin","password":"{p}"}}\'',
    p,
)
p = rnd(ALNUM, 40)
tp("http-curl-empty-user", f"curl -s -u :{p} https://api.example.com/v1/health", p)
p, p2 = rnd(URLSAFE, 64), rnd(URLSAFE, 64)
out(
    "http-token-response",
    f'{{"access_token":"{p}","token_type":"Bearer","expires_in":3600,"refresh_token":"{p2}","scope":"read write"}}',
    p,
    p2,
)
p = rnd(URLSAFE, 48)
out(
    "http-set-cookie",
    f"HTTP/2 302\nlocation: /home\nset-cookie: sid={p}; Path=/; Secure; HttpOnly; SameSite=Lax\ncontent-length: 0",
    p,
)
p = b64(f"ops:{pw()}".encode())
out(
    "http-curl-verbose",
    f"* Connected to api.example.com (203.0.113.10) port 443\n> GET /v1/status HTTP/2\n> Host: api.example.com\n> Authorization: Basic {p}\n> User-Agent: curl/8.5.0\n> Accept: */*",
    p,
)
p = rnd(URLSAFE, 32)
tp(
    "http-query-token",
    f"curl -s 'https://monitor.example.com/api/push/{rnd(ALNUM, 10)}?status=up&msg=OK&token={p}'",
    p,
)

# --- key: private keys and certificates, odd encodings ------------------------------------
p = pem_body(900)
tp(
    "key-headerless-pem-echo",
    f"echo '{p}' | base64 -d > /tmp/key.der && openssl pkey -inform DER -in /tmp/key.der -noout -text",
    p,
)
body = lines64(pem_body(1190))
out(
    "key-sa-json",
    '{\n  "type": "service_account",\n  "project_id": "shop-prod",\n  "private_key_id": "'
    + rnd(HEX, 40)
    + '",\n  "private_key": "-----BEGIN PRIVATE KEY-----\\n'
    + "\\n".join(body)
    + '\\n-----END PRIVATE KEY-----\\n",\n  "client_email": "deployer@shop-prod.iam.gserviceaccount.com"\n}',
    body[3],
    body[10],
)
body = lines64(
    b64(b"openssh-key-v1\x00\x00\x00\x00\x04none\x00\x00\x00\x04none" + R.randbytes(350)), 70
)
out(
    "key-openssh-cat",
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    + "\n".join(body)
    + "\n-----END OPENSSH PRIVATE KEY-----",
    body[1],
    body[3],
)
p = b64(b"\x00\x00\x00 " + R.randbytes(32))
out(
    "key-putty-ppk",
    f"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@shop\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI{rnd(B64, 43)}\nPrivate-Lines: 1\n{p}\nPrivate-MAC: {rnd(HEX, 64)}",
    p,
)
p = "AGE-SECRET-KEY-1" + rnd("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)
out(
    "key-age-keyfile",
    f"# created: 2026-11-02T10:11:12Z\n# public key: age1{rnd('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}\n{p}",
    p,
)
body = lines64(b64(b"\x95\x03\x98\x04" + R.randbytes(900)), 64)
out(
    "key-pgp-private",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
    + "\n".join(body)
    + "\n="
    + rnd(B64, 4)
    + "\n-----END PGP PRIVATE KEY BLOCK-----",
    body[2],
    body[8],
)
p = "MHcCAQEEI" + rnd(B64, 40)
tp(
    "key-ec-escaped-env",
    f'export TLS_KEY="-----BEGIN EC PRIVATE KEY-----\\n{p}\\noAoGCCqGSM49AwEHoUQDQgAE{rnd(B64, 40)}\\n-----END EC PRIVATE KEY-----"',
    p,
)
p = pw()
tp(
    "key-openssl-passin",
    f"openssl rsa -in /etc/ssl/private/shop.key -passin pass:{p} -out /tmp/shop-plain.key",
    p,
)
p = pw()
tp(
    "key-openssl-passout",
    f"openssl pkcs12 -export -in shop.crt -inkey shop.key -out shop.p12 -passout 'pass:{p}'",
    p,
)
p, p2 = pw(), pw()
tp("key-ssh-keygen-p", f"ssh-keygen -p -P '{p}' -N '{p2}' -f ~/.ssh/id_rsa", p, p2)
hexkey = (
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + "\n".join(lines64(b64(b"openssh-key-v1\x00" + R.randbytes(200)), 70))
        + "\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    .encode()
    .hex()
)
tp(
    "key-hex-xxd-r",
    f"printf '{hexkey}' | xxd -r -p > ~/.ssh/id_ed25519",
    hexkey[80:200],
    hexkey[400:520],
)
p, p2 = pw(), pw()
tp(
    "key-keytool-storepass",
    f"keytool -importkeystore -srckeystore shop.p12 -srcstoretype PKCS12 -srcstorepass '{p}' -destkeystore shop.jks -deststorepass '{p2}'",
    p,
    p2,
)
p = pw(24)
tp(
    "key-gpg-passphrase",
    f"gpg --batch --pinentry-mode loopback --passphrase '{p}' -d /backup/db.tar.gpg | tar -tz | head",
    p,
)
body = lines64(pem_body(1190))
out(
    "key-rsa-cat",
    "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----",
    body[0],
    body[7],
    body[-2],
)
p = rnd("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 32)
tp("key-oathtool-totp", f"oathtool --totp -b {p}", p)
p = rnd("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 32)
out(
    "key-otpauth-uri",
    f"otpauth://totp/Shop:ops@example.com?secret={p}&issuer=Shop&algorithm=SHA1&digits=6&period=30",
    p,
)

# --- hook: webhook URLs and chat tokens ----------------------------------------------------
p = rnd(ALNUM, 24)
tp(
    "hook-slack-webhook",
    f"curl -s -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deploy of api finished\"}}' https://hooks.slack.com/services/T0{rnd(UPPER, 8)}/B0{rnd(UPPER, 9)}/{p}",
    p,
)
p = rnd(URLSAFE, 68)
tp(
    "hook-discord-webhook",
    f"curl -s -H 'Content-Type: application/json' -d '{{\"content\":\"backup ok\"}}' https://discord.com/api/webhooks/{rnd(string.digits, 19)}/{p}",
    p,
)
p = rnd(HEX, 32)
tp(
    "hook-teams-webhook",
    f"curl -s -H 'Content-Type: application/json' -d '{{\"text\":\"disk 91%\"}}' 'https://shop.webhook.office.com/webhookb2/{uid()}@{uid()}/IncomingWebhook/{p}/{uid()}/V2{rnd(URLSAFE, 40)}'",
    p,
)
p = f"xoxb-{rnd(string.digits, 12)}-{rnd(string.digits, 13)}-{rnd(ALNUM, 24)}"
tp(
    "hook-slack-bot-token",
    f'curl -s -H "Authorization: Bearer {p}" -d channel=C0123ABCD -d text=hello https://slack.com/api/chat.postMessage',
    p,
)
p = f"xapp-1-A0{rnd(UPPER, 9)}-{rnd(string.digits, 13)}-{rnd(HEX, 64)}"
tp("hook-slack-app-token", f"SLACK_APP_TOKEN={p} python3 bot.py --socket-mode", p)
p = f"{rnd(string.digits, 10)}:AA{rnd(URLSAFE, 33)}"
tp(
    "hook-telegram-bot",
    f"curl -s 'https://api.telegram.org/bot{p}/sendMessage' -d chat_id=-100123456789 -d text='backup ok'",
    p,
)
p = rnd(LOWER, 26)
tp(
    "hook-mattermost",
    f'curl -s -d \'payload={{"text": "job done"}}\' https://chat.example.com/hooks/{p}',
    p,
)
p, p2 = "AIzaSy" + rnd(URLSAFE, 33), rnd(URLSAFE, 43)
tp(
    "hook-google-chat",
    f"curl -s -X POST 'https://chat.googleapis.com/v1/spaces/AAAA{rnd(URLSAFE, 7)}/messages?key={p}&token={p2}%3D' -d '{{\"text\":\"hi\"}}'",
    p2,
    p,
)
p = rnd(HEX, 32)
tp(
    "hook-pagerduty-routing",
    f'curl -s -X POST https://events.pagerduty.com/v2/enqueue -H \'Content-Type: application/json\' -d \'{{"routing_key":"{p}","event_action":"trigger","payload":{{"summary":"disk full","severity":"critical","source":"web-01"}}}}\'',
    p,
)
p = uid()
tp(
    "hook-opsgenie-geniekey",
    f'curl -s -H "Authorization: GenieKey {p}" https://api.opsgenie.com/v2/alerts?limit=5',
    p,
)
p = rnd(ALNUM, 32)
tp(
    "hook-github-webhook-secret",
    f"gh api repos/shop/api/hooks -f name=web -f 'config[url]=https://ci.example.com/hook' -f 'config[secret]={p}' -f 'config[content_type]=json'",
    p,
)
p = rnd(ALNUM, 24)
out(
    "hook-alertmanager-yml",
    f"receivers:\n- name: ops\n  slack_configs:\n  - api_url: https://hooks.slack.com/services/T0{rnd(UPPER, 8)}/B0{rnd(UPPER, 9)}/{p}\n    channel: '#alerts'",
    p,
)

# --- env: secrets in environment dumps -----------------------------------------------------
p = pw()
out(
    "env-env-dump",
    f"SHELL=/bin/bash\nPWD=/srv/shop\nLOGNAME=deploy\nHOME=/home/deploy\nLANG=C.UTF-8\nDB_PASS={p}\nTERM=xterm-256color\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",
    p,
)
p, p2 = pw(), rnd(ALNUM, 32)
out(
    "env-docker-inspect",
    '        "Env": [\n            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",\n            "POSTGRES_PASSWORD='
    + p
    + '",\n            "REDIS_URL=redis://:'
    + p2
    + '@redis:6379/0",\n            "PG_MAJOR=16"\n        ],',
    p,
    p2,
)
p = rnd(ALNUM, 40)
out("env-systemctl-show", f"Environment=NODE_ENV=production API_SECRET={p} PORT=8080", p)
p = "sk_live_" + rnd(ALNUM, 24)
out(
    "env-proc-environ-nul",
    f"PATH=/usr/local/bin:/usr/bin\x00HOME=/srv/app\x00STRIPE_KEY={p}\x00NODE_ENV=production\x00",
    p,
)
p, p2 = "ghp_" + rnd(ALNUM, 36), "hvs." + rnd(URLSAFE, 24)
out("env-printenv-grep", f"GITHUB_TOKEN={p}\nVAULT_TOKEN={p2}", p, p2)
p = rnd(HEX, 128)
tp(
    "env-docker-run-e",
    f"docker run -d --name web -e RAILS_ENV=production -e SECRET_KEY_BASE={p} -p 3000:3000 shop/web:2.4.1",
    p,
)
p = rnd(URLSAFE, 48)
out(
    "env-compose-config",
    f"services:\n  api:\n    environment:\n      JWT_SECRET: {p}\n      LOG_LEVEL: info\n    image: shop/api:2.4.1",
    p,
)
p = pw()
out("env-bash-set", f"HOSTTYPE=x86_64\nIFS=$' \\t\\n'\nMYSQL_ROOT_PASSWORD='{p}'\nOPTERR=1", p)
p = rnd(ALNUM + "/+", 40)
out(
    "env-export-p",
    f'declare -x AWS_DEFAULT_REGION="eu-west-1"\ndeclare -x AWS_SECRET_ACCESS_KEY="{p}"\ndeclare -x HOME="/root"',
    p,
)
p = rnd(ALNUM + "!@#$%^&*(-_=+)", 50)
out(
    "env-ps-eww",
    f"  PID TTY      STAT   TIME COMMAND\n 2231 ?        Ssl    4:02 gunicorn shop.wsgi -w 4 LANG=C.UTF-8 DJANGO_SECRET_KEY={p} PATH=/usr/bin",
    p,
)
p = pw()
out(
    "env-crontab",
    f"# m h dom mon dow command\n0 3 * * * PGPASSWORD='{p}' pg_dump -h db01 -U app shop | gzip > /backup/shop-$(date +\\%F).sql.gz",
    p,
)
p = rnd(URLSAFE, 64)
out(
    "env-dotenv-cat",
    f'APP_ENV=production\nAPP_URL=https://shop.example.com\nSESSION_SECRET="{p}"\nMAIL_FROM=noreply@example.com',
    p,
)
p = pw()
out("env-pm2-env", f"exec cwd: /srv/admin\nADMIN_PASSWORD: {p}\nPORT: 4000\nunique_id: {uid()}", p)
p = pw()
tp(
    "env-docker-compose-run",
    f"docker compose run --rm -e DB_PASSWORD='{p}' api python manage.py migrate",
    p,
)
p = pw()
tp(
    "env-systemd-run-setenv",
    f"systemd-run --unit=reindex --setenv=ES_PASSWORD='{p}' /usr/local/bin/reindex.sh",
    p,
)

# --- vpn: SSH/VPN configs ------------------------------------------------------------------
p, p2 = b64(R.randbytes(32)), b64(R.randbytes(32))
out(
    "vpn-wireguard-conf",
    f"[Interface]\nPrivateKey = {p}\nAddress = 10.8.0.1/24\nListenPort = 51820\n\n[Peer]\nPublicKey = {b64(R.randbytes(32))}\nPresharedKey = {p2}\nAllowedIPs = 10.8.0.2/32",
    p,
    p2,
)
p = b64(R.randbytes(32))
tp("vpn-wg-set-private", f"wg set wg0 private-key <(echo {p}) listen-port 51820", p)
p = b64(R.randbytes(32))
out("vpn-wg-showconf", f"[Interface]\nListenPort = 51820\nFwMark = 0xca6c\nPrivateKey = {p}\n", p)
p = pw()
out(
    "vpn-ovpn-inline-auth",
    f"client\ndev tun\nproto udp\nremote vpn.example.com 1194\n<auth-user-pass>\nops-jdoe\n{p}\n</auth-user-pass>\n<ca>\n-----BEGIN CERTIFICATE-----",
    p,
)
body = [rnd(HEX, 32) for _ in range(16)]
out(
    "vpn-ovpn-static-key",
    "<tls-auth>\n#\n# 2048 bit OpenVPN static key\n#\n-----BEGIN OpenVPN Static key V1-----\n"
    + "\n".join(body)
    + "\n-----END OpenVPN Static key V1-----\n</tls-auth>",
    body[1],
    body[9],
)
p = pw()
tp(
    "vpn-openconnect-stdin",
    f"openconnect --user=jdoe --passwd-on-stdin --background vpn.example.com <<< '{p}'",
    p,
)
p = pw(24)
out("vpn-ipsec-secrets", f'# /etc/ipsec.secrets\n203.0.113.5 198.51.100.7 : PSK "{p}"', p)
p = pw(24)
out(
    "vpn-swanctl-secret",
    f"secrets {{\n   ike-office {{\n      id = office.example.com\n      secret = {p}\n   }}\n}}",
    p,
)
p = pw()
tp("vpn-sshpass-p", f"sshpass -p '{p}' ssh -o StrictHostKeyChecking=no admin@10.0.0.5 uptime", p)
p = pw()
out(
    "vpn-netrc",
    f"machine api.example.com\n  login ops-bot\n  password {p}\nmachine git.example.org login deploy password {pw()}",
    p,
)
p = f"tskey-auth-k{rnd(ALNUM, 10)}CNTRL-{rnd(ALNUM, 33)}"
tp("vpn-tailscale-authkey", f"tailscale up --authkey={p} --advertise-tags=tag:server --ssh", p)
p = pw(16)
tp(
    "vpn-nmcli-psk",
    f"nmcli connection add type wifi ifname wlan0 con-name office ssid Office-5G wifi-sec.key-mgmt wpa-psk wifi-sec.psk '{p}'",
    p,
)
p = pw(16)
out(
    "vpn-nmconnection",
    f"[wifi]\nmode=infrastructure\nssid=Office-5G\n\n[wifi-security]\nkey-mgmt=wpa-psk\npsk={p}\n\n[ipv4]\nmethod=auto",
    p,
)
p, p2 = pw(16), rnd(HEX, 64)
out("vpn-wpa-passphrase", f'network={{\n\tssid="Office-5G"\n\t#psk="{p}"\n\tpsk={p2}\n}}', p, p2)
p = pw()
out("vpn-chap-secrets", f'# client\tserver\tsecret\t\t\tIP addresses\n"ops"\t*\t"{p}"\t*', p)
p = pw()
tp(
    "vpn-ssh-askpass-echo",
    f"SSH_ASKPASS_REQUIRE=force SSH_ASKPASS=<(echo 'echo {p}') ssh admin@10.0.0.7 hostname",
    p,
)

# --- vault: Vault, Consul, Nomad -----------------------------------------------------------
p = "hvs.CAESI" + rnd(URLSAFE, 90)
tp(
    "vault-token-env",
    f"VAULT_ADDR=https://vault.example.com:8200 VAULT_TOKEN={p} vault kv get -mount=secret shop/db",
    p,
)
p = "s." + rnd(ALNUM, 24)
tp("vault-login-legacy", f"vault login {p}", p)
p = uid()
tp("vault-approle-login", f"vault write auth/approle/login role_id={uid()} secret_id={p}", p)
p = pw()
out(
    "vault-kv-get-json",
    '{\n  "data": {\n    "data": {\n      "password": "'
    + p
    + '",\n      "username": "app"\n    },\n    "metadata": {"version": 4}\n  }\n}',
    p,
)
p = rnd(ALNUM, 40)
tp("vault-kv-put", f"vault kv put -mount=secret shop/stripe api_key={p}", p)
p = uid()
tp("vault-consul-token-env", f"CONSUL_HTTP_TOKEN={p} consul members -detailed", p)
p = uid()
tp("vault-consul-kv-token", f"consul kv get -token={p} -recurse config/shop/", p)
p = uid()
tp(
    "vault-nomad-token-env",
    f"NOMAD_ADDR=https://nomad.example.com:4646 NOMAD_TOKEN={p} nomad job status",
    p,
)
p = b64(R.randbytes(33))
tp("vault-operator-unseal", f"vault operator unseal {p}", p)
p, p2 = b64(R.randbytes(33)), "hvs." + rnd(ALNUM, 24)
out(
    "vault-operator-init",
    f"Unseal Key 1: {p}\nUnseal Key 2: {b64(R.randbytes(33))}\n\nInitial Root Token: {p2}\n\nVault initialized with 5 key shares and a key threshold of 3.",
    p,
    p2,
)
p = "hvb.AAAAAQ" + rnd(URLSAFE, 120)
tp(
    "vault-batch-token-header",
    f'curl -s -H "X-Vault-Token: {p}" https://vault.example.com:8200/v1/secret/data/shop/db',
    p,
)
p = b64(R.randbytes(32))
tp(
    "vault-consul-encrypt",
    f"consul agent -server -bootstrap-expect=3 -data-dir=/opt/consul -encrypt={p} -retry-join=10.0.0.12",
    p,
)
p = "hvs." + rnd(ALNUM, 24)
out(
    "vault-token-create",
    f'Key                  Value\n---                  -----\ntoken                {p}\ntoken_accessor       {rnd(ALNUM, 24)}\ntoken_duration       768h\ntoken_renewable      true\ntoken_policies       ["default" "shop-read"]',
    p,
)
p = "AGE-SECRET-KEY-1" + rnd("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)
tp("vault-sops-age-env", f"SOPS_AGE_KEY={p} sops -d secrets/prod.enc.yaml | head -5", p)

# --- saas: payment, mail and SaaS keys ----------------------------------------------------
p = "sk_live_" + rnd(ALNUM, 99)
tp("saas-stripe-curl-u", f"curl -s https://api.stripe.com/v1/charges?limit=3 -u {p}:", p)
p = "rk_live_" + rnd(ALNUM, 99)
tp(
    "saas-stripe-cli-restricted",
    f"stripe listen --api-key {p} --forward-to localhost:8000/webhooks/stripe",
    p,
)
p = rnd(HEX, 32)
tp(
    "saas-twilio-auth-token",
    f"curl -s -X POST https://api.twilio.com/2010-04-01/Accounts/AC{rnd(HEX, 32)}/Messages.json -u AC{rnd(HEX, 32)}:{p} --data-urlencode 'Body=disk alert'",
    p,
)
p = "SG." + rnd(URLSAFE, 22) + "." + rnd(URLSAFE, 43)
tp(
    "saas-sendgrid-bearer",
    f'curl -s -H "Authorization: Bearer {p}" https://api.sendgrid.com/v3/user/account',
    p,
)
p = "key-" + rnd(HEX, 32)
tp("saas-mailgun-key", f"curl -s --user 'api:{p}' https://api.mailgun.net/v3/domains", p)
p = f"{rnd(HEX, 32)}-{rnd(HEX, 8)}-{rnd(HEX, 8)}"
tp(
    "saas-mailgun-new",
    f"curl -s --user 'api:{p}' https://api.eu.mailgun.net/v3/mg.example.com/events",
    p,
)
p, p2 = rnd(HEX, 32), rnd(HEX, 40)
tp(
    "saas-datadog-env",
    f"DD_API_KEY={p} DD_APP_KEY={p2} datadog-ci synthetics run-tests --public-id abc-def-ghi",
    p,
    p2,
)
p = rnd(HEX, 32)
tp(
    "saas-datadog-header",
    f'curl -s -H "DD-API-KEY: {p}" https://api.datadoghq.eu/api/v1/validate',
    p,
)
p = "NRAK-" + rnd(UPPER, 27)
tp(
    "saas-newrelic-nrak",
    f"NEW_RELIC_API_KEY={p} newrelic apm application search --name shop-api",
    p,
)
p = rnd(HEX, 36) + "NRAL"
out(
    "saas-newrelic-license-yml",
    f"common: &default_settings\n  license_key: '{p}'\n  app_name: shop-api",
    p,
)
p = "sk-proj-" + rnd(URLSAFE, 120)
tp("saas-openai-key", f'curl -s https://api.openai.com/v1/models -H "Authorization: Bearer {p}"', p)
p = "sk-ant-api03-" + rnd(URLSAFE, 93) + "AA"
tp(
    "saas-anthropic-key",
    f'curl -s https://api.anthropic.com/v1/models -H "x-api-key: {p}" -H "anthropic-version: 2023-06-01"',
    p,
)
p = (
    "sntrys_"
    + b64(
        json.dumps({"iat": 1796000000, "url": "https://sentry.io", "org": "shop"}).encode()
    ).rstrip("=")
    + "_"
    + rnd(URLSAFE, 43)
)
tp("saas-sentry-auth-token", f"sentry-cli --auth-token {p} releases list --org shop", p)
p = "shpat_" + rnd(HEX, 32)
tp(
    "saas-shopify-token",
    f'curl -s -H "X-Shopify-Access-Token: {p}" https://shop-example.myshopify.com/admin/api/2024-01/shop.json',
    p,
)
p = "pat-na1-" + uid()
tp(
    "saas-hubspot-pat",
    f'curl -s -H "Authorization: Bearer {p}" https://api.hubapi.com/crm/v3/objects/contacts?limit=1',
    p,
)
p = uid()
tp(
    "saas-postmark-server",
    f'curl -s -H "Accept: application/json" -H "X-Postmark-Server-Token: {p}" https://api.postmarkapp.com/server',
    p,
)
p = "00" + rnd(URLSAFE, 40)
tp(
    "saas-okta-ssws",
    f'curl -s -H "Authorization: SSWS {p}" https://shop.okta.com/api/v1/users?limit=5',
    p,
)
p = "ATATT3xFfGF0" + rnd(URLSAFE, 170) + "=" + rnd(HEX.upper(), 8)
tp(
    "saas-atlassian-token",
    f"curl -s -u ops@example.com:{p} https://shop.atlassian.net/rest/api/3/myself",
    p,
)
p = "lin_api_" + rnd(ALNUM, 40)
tp(
    "saas-linear-key",
    f"curl -s -H 'Authorization: {p}' -H 'Content-Type: application/json' -d '{{\"query\":\"{{ viewer {{ id }} }}\"}}' https://api.linear.app/graphql",
    p,
)
p = "ntn_" + rnd(ALNUM, 46)
tp(
    "saas-notion-token",
    f"curl -s https://api.notion.com/v1/users -H 'Authorization: Bearer {p}' -H 'Notion-Version: 2022-06-28'",
    p,
)
p = "glsa_" + rnd(ALNUM, 32) + "_" + rnd(HEX, 8)
tp(
    "saas-grafana-sa-token",
    f'curl -s -H "Authorization: Bearer {p}" https://grafana.example.com/api/search?query=shop',
    p,
)
p = "pul-" + rnd(HEX, 40)
tp("saas-pulumi-token", f"PULUMI_ACCESS_TOKEN={p} pulumi stack ls", p)
p = rnd(ALNUM, 14) + ".atlasv1." + rnd(ALNUM, 67)
out(
    "saas-terraform-credentials",
    '{\n  "credentials": {\n    "app.terraform.io": {\n      "token": "' + p + '"\n    }\n  }\n}',
    p,
)
p = rnd(URLSAFE, 40)
tp(
    "saas-cloudflare-token",
    f'curl -s -H "Authorization: Bearer {p}" https://api.cloudflare.com/client/v4/user/tokens/verify',
    p,
)
p = "dp.st.prd." + rnd(ALNUM, 43)
tp("saas-doppler-token", f"DOPPLER_TOKEN={p} doppler secrets download --no-file --format env", p)

# --- conf: passwords in config echo, grep output and hashes -------------------------------
p = pw()
out(
    "conf-grep-yml",
    f"/etc/shop/config.yml:  host: db01.internal\n/etc/shop/config.yml:  password: {p}",
    p,
)
p = rnd(ALNUM, 16)
out(
    "conf-debian-cnf",
    f"/etc/mysql/debian.cnf:user     = debian-sys-maint\n/etc/mysql/debian.cnf:password = {p}",
    p,
)
p = pw()
out("conf-postfix-sasl", f"[smtp.example.com]:587 relay@example.com:{p}", p)
p = pw()
out(
    "conf-xml-datasource",
    f"                <security>\n                    <user-name>shop</user-name>\n                    <password>{p}</password>\n                </security>",
    p,
)
p = pw()
out(
    "conf-tomcat-users",
    f'<tomcat-users>\n  <user username="admin" password="{p}" roles="manager-gui,admin-gui"/>\n</tomcat-users>',
    p,
)
p = pw()
out(
    "conf-spring-properties",
    f"spring.datasource.url=jdbc:postgresql://db01:5432/shop\nspring.datasource.username=shop\nspring.datasource.password={p}",
    p,
)
p = pw()
out("conf-pgpass", f"db01.internal:5432:*:app:{p}\n*:*:*:replicator:{pw()}", p)
p = "$6$" + rnd(ALNUM + "./", 16) + "$" + rnd(ALNUM + "./", 86)
out("conf-shadow-line", f"deploy:{p}:19700:0:99999:7:::", p)
p = "$apr1$" + rnd(ALNUM + "./", 8) + "$" + rnd(ALNUM + "./", 22)
out("conf-htpasswd", f"admin:{p}\nmetrics:{'$2y$05$' + rnd(ALNUM + './', 53)}", p)
p = "$2b$12$" + rnd(ALNUM + "./", 53)
out(
    "conf-bcrypt-select",
    f" id |      email        |                        password_hash\n----+-------------------+--------------------------------------------------------------\n  1 | admin@example.com | {p}",
    p,
)
p = pw()
out(
    "conf-wp-config",
    f"define( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp' );\ndefine( 'DB_PASSWORD', '{p}' );\ndefine( 'DB_HOST', 'localhost' );",
    p,
)
p = pw()
out(
    "conf-grafana-ini",
    f"/etc/grafana/grafana.ini:admin_user = admin\n/etc/grafana/grafana.ini:admin_password = {p}",
    p,
)
p = pw()
out("conf-my-cnf", f'[client]\nuser=root\npassword="{p}"\nhost=localhost', p)
p, p2 = pw(), pw()
out("conf-redis-conf", f"requirepass {p}\nmasterauth {p2}", p, p2)
p = (
    "SCRAM-SHA-256$4096:"
    + b64(R.randbytes(16))
    + "$"
    + b64(R.randbytes(32))
    + ":"
    + b64(R.randbytes(32))
)
out("conf-pgbouncer-userlist", f'"app" "{p}"\n"stats" "md5{rnd(HEX, 32)}"', p)
p = "ghp_" + rnd(ALNUM, 36)
out("conf-git-credentials", f"https://shop-bot:{p}@github.com", p)
p = pw()
out(
    "conf-fstab-cifs",
    f"UUID={uid()} /     ext4 defaults 0 1\n//fs01/finance /mnt/finance cifs username=svc_backup,password={p},uid=1000,iocharset=utf8 0 0",
    p,
)
p = pw()
out("conf-smbcredentials", f"username=svc_backup\npassword={p}\ndomain=CORP", p)
p = rnd(ALNUM + "!@#$%^&*(-_=+)", 50)
out("conf-django-secret", f"shop/settings/prod.py:23:SECRET_KEY = '{p}'", p)
p = rnd(ALNUM + "/+", 40)
out(
    "conf-rclone-conf",
    f"[s3-backup]\ntype = s3\nprovider = AWS\naccess_key_id = AKIA{rnd(UPPER, 16)}\nsecret_access_key = {p}\nregion = eu-west-1",
    p,
)
p = rnd(ALNUM + "/+", 40)
out(
    "conf-s3cfg",
    f"[default]\naccess_key = AKIA{rnd(UPPER, 16)}\nhost_base = s3.amazonaws.com\nsecret_key = {p}\nuse_https = True",
    p,
)
p = rnd(ALNUM, 8)
out(
    "conf-keepalived",
    f"    authentication {{\n        auth_type PASS\n        auth_pass {p}\n    }}",
    p,
)
p, p2 = pw(), pw()
tp(
    "conf-snmpwalk-v3",
    f"snmpwalk -v3 -u monitor -l authPriv -a SHA -A '{p}' -x AES -X '{p2}' 10.0.0.1 sysDescr",
    p,
    p2,
)
p = pw()
tp("conf-ipmitool-P", f"ipmitool -I lanplus -H 10.0.0.9 -U ADMIN -P '{p}' chassis status", p)
p = pw()
tp("conf-racadm-p", f"racadm -r 10.0.0.10 -u root -p '{p}' getsysinfo", p)
p = rnd(URLSAFE, 32)
out(
    "conf-rclone-obscured",
    f"[sftp-nas]\ntype = sftp\nhost = nas.internal\nuser = backup\npass = {p}",
    p,
)
p = pw()
out(
    "conf-ldap-bindpw",
    f"/etc/sssd/sssd.conf:ldap_default_bind_dn = cn=sssd,ou=svc,dc=corp,dc=example\n/etc/sssd/sssd.conf:ldap_default_authtok = {p}",
    p,
)
p = pw()
out(
    "conf-nginx-proxy-auth",
    f'        proxy_set_header Authorization "Basic {b64(("api:" + p).encode())}";',
    b64(("api:" + p).encode()),
)

# --- enc: split and encoded forms ----------------------------------------------------------
tok = "sk_live_" + rnd(ALNUM, 24)
p = tok.encode().hex()
tp("enc-hex-xxd-r", f"echo {p} | xxd -r -p", p)
p = b64(b64(f"password={pw()}".encode()).encode())
tp("enc-base64-twice", f"echo {p} | base64 -d | base64 -d", p)
p = urllib.parse.quote("P@ss:" + rnd(ALNUM, 10) + "/&=" + rnd(ALNUM, 6), safe="")
tp(
    "enc-urlencoded-form",
    f"curl -s -d 'username=ops&password={p}' https://legacy.example.com/login.php",
    p,
)
body = lines64(pem_body(1190))
tp(
    "enc-json-escaped-pem",
    'vault kv put secret/tls key="$(printf \'%s\' \'{"key":"-----BEGIN RSA PRIVATE KEY-----\\n'
    + "\\n".join(body)
    + '\\n-----END RSA PRIVATE KEY-----"}\')"',
    body[2],
    body[12],
)
p = b64(gzip.compress(f"DB_PASSWORD={pw()}\nAPI_KEY={rnd(ALNUM, 32)}\n".encode(), mtime=0))
tp("enc-gzip-base64", f"echo {p} | base64 -d | gunzip", p)
t = jwt({"sub": "ops@example.com", "role": "admin", "exp": 1796000000})
a, b, c = t.split(".")
out("enc-jwt-split-lines", f"token:\n  {a}\n  .{b}\n  .{c}", b, c)
t = "ghp_" + rnd(ALNUM, 36) + rnd(ALNUM, 0)
g = "glpat-" + rnd(URLSAFE, 20)
folded = b64(f'{{"gitlab_token":"{g}","github_token":"{t}","note":"rotate monthly"}}'.encode())
parts = lines64(folded, 40)
out("enc-fold-base64", "\n".join(parts), parts[0], parts[1], parts[2])
p = b64(f"aws_secret_access_key = {rnd(ALNUM + '/+', 40)}".encode())
out("enc-base64-yaml-value", f"credentials: {p}", p)
body = lines64(
    b64(
        (
            "-----BEGIN PRIVATE KEY-----\n"
            + "\n".join(lines64(pem_body(600)))
            + "\n-----END PRIVATE KEY-----\n"
        ).encode()
    ),
    76,
)
out("enc-base64-wrapped-pem", "\n".join(body), body[0], body[5], body[10])
p = "ghp_" + rnd(ALNUM, 36)
tp("enc-echo-n-base64", f"echo -n 'shop-bot:{p}' | base64 -w0", p)
p = (
    ("xoxb-" + rnd(string.digits, 12) + "-" + rnd(string.digits, 13) + "-" + rnd(ALNUM, 24))
    .encode()
    .hex()
)
tp("enc-python-fromhex", f"python3 -c \"print(bytes.fromhex('{p}').decode())\"", p)
p = urllib.parse.quote(pw() + "@#$", safe="")
tp(
    "enc-urlencoded-query",
    f"curl -s 'https://legacy.example.com/api/login?user=ops&password={p}'",
    p,
)
p = "".join(f"\\u{ord(ch):04x}" for ch in "hvs." + rnd(ALNUM, 24))
out(
    "enc-json-unicode-escape",
    f'{{"auth": {{"client_token": "{p}", "lease_duration": 2764800}}}}',
    p,
)
p = base64.b32encode(("glpat-" + rnd(URLSAFE, 20)).encode()).decode()
tp("enc-base32-d", f"echo {p} | base32 -d", p)
t = "sk_live_" + rnd(ALNUM, 48)
p1, p2 = t[:24], t[24:]
tp("enc-split-concat", f'STRIPE_KEY="{p1}""{p2}" ./charge.sh --dry-run', p1, p2)
p = b64(("AKIA" + rnd(UPPER, 16) + ":" + rnd(ALNUM + "/+", 40)).encode())
tp("enc-base64-dash-d-stdin", f"base64 -d <<< {p} > /tmp/creds && . /tmp/creds", p)

# --- fp: plain lines that look like secrets but hold none ---------------------------------
fp("mysql-prompt", "mysql -h db01 -u root -p -e 'SHOW DATABASES'")
fp("psql-uri-nopass", 'psql "postgresql://app@db01:5432/shop?sslmode=require" -c "select 1"')
fp("pgpassword-cmdsubst", 'PGPASSWORD="$(cat /run/secrets/pg)" psql -h db01 -U app -c "select 1"')
fp("export-required-var", "export DB_PASSWORD=${DB_PASSWORD:?DB_PASSWORD must be set}")
fp("curl-bearer-var", 'curl -s -H "Authorization: Bearer $TOKEN" https://api.example.com/v1/me')
fp(
    "grep-readme-placeholder",
    "README.md:  mysql -u root -p<PASSWORD> -h <HOST>\nREADME.md:  export API_KEY=<your-api-key>",
    "output",
)
fp(
    "sha256sum-out",
    f"{rnd(HEX, 64)}  dist/shop-2.4.1.tar.gz\n{rnd(HEX, 64)}  dist/shop-2.4.1-py3-none-any.whl",
    "output",
)
fp(
    "git-log-oneline",
    f"{rnd(HEX, 7)} Fix token refresh on expired sessions\n{rnd(HEX, 7)} Rotate secrets via vault agent\n{rnd(HEX, 7)} Bump requests to 2.32.3",
    "output",
)
fp("git-rev-parse", rnd(HEX, 40), "output")
fp("uuid-random", uid(), "output")
fp(
    "docker-images-digests",
    f"REPOSITORY   TAG     DIGEST                                                                    IMAGE ID       CREATED      SIZE\nshop/api     2.4.1   sha256:{rnd(HEX, 64)}   {rnd(HEX, 12)}   2 days ago   183MB",
    "output",
)
fp("base64-hello", "echo 'aGVsbG8gd29ybGQK' | base64 -d")
fp(
    "grep-password-file-key",
    "/etc/shop/config.yml:  password_file: /run/secrets/db_password\n/etc/shop/config.yml:  password_min_length: 12",
    "output",
)
fp(
    "grep-src-check-password",
    "src/auth.py:42:    if not check_password(user, password):\nsrc/auth.py:57:        raise InvalidToken(token_id)",
    "output",
)
fp(
    "vault-kv-metadata",
    "====== Metadata ======\nKey                Value\n---                -----\ncreated_time       2026-11-30T09:12:44.123456Z\ndeletion_time      n/a\ndestroyed          false\nversion            4",
    "output",
)
fp("ssh-keygen-fingerprint", f"256 SHA256:{rnd(B64, 43)} deploy@shop (ED25519)", "output")
fp("ssh-pubkey-cat", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rnd(B64, 43)} deploy@shop", "output")
fp(
    "wg-show-public",
    f"interface: wg0\n  public key: {b64(R.randbytes(32))}\n  private key: (hidden)\n  listening port: 51820",
    "output",
)
fp(
    "openssl-fingerprint",
    "sha256 Fingerprint=" + ":".join(rnd(HEX.upper(), 2) for _ in range(32)),
    "output",
)
cert = lines64(b64(b"0\x82\x03\x8a0\x82\x02r\xa0\x03\x02\x01\x02\x02\x14" + R.randbytes(700)))
fp(
    "certificate-cat",
    "-----BEGIN CERTIFICATE-----\n" + "\n".join(cert) + "\n-----END CERTIFICATE-----",
    "output",
)
fp(
    "aws-caller-identity",
    '{\n    "UserId": "AIDA'
    + rnd(UPPER, 17)
    + '",\n    "Account": "123456789012",\n    "Arn": "arn:aws:iam::123456789012:user/ci"\n}',
    "output",
)
fp(
    "aws-configure-list",
    "      Name                    Value             Type    Location\n      ----                    -----             ----    --------\n   profile                <not set>             None    None\naccess_key     ****************QX7D shared-credentials-file\nsecret_key     ****************8kPz shared-credentials-file",
    "output",
)
fp(
    "docker-login-stdin-file",
    "docker login -u shop-bot --password-stdin ghcr.io < /run/secrets/ghcr_token",
)
fp("masked-echo", 'echo "password: ********"')
fp(
    "kubectl-get-pods",
    f"NAME                   READY   STATUS    RESTARTS   AGE\napi-7d9f8b6c5d-x2k4q   1/1     Running   0          3d\nworker-{rnd(LOWER, 10)}-{rnd(LOWER, 5)}   1/1     Running   2          3d",
    "output",
)
fp(
    "journal-failed-password",
    "Dec 07 23:01:12 web-01 sshd[2211]: Failed password for invalid user admin from 203.0.113.9 port 52144 ssh2",
    "output",
)
fp(
    "npmrc-env-token",
    "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n@shop:registry=https://npm.pkg.github.com",
    "output",
)
fp(
    "terraform-output-sensitive",
    'db_host = "db01.internal"\ndb_password = <sensitive>\nvpc_id = "vpc-0a1b2c3d4e5f67890"',
    "output",
)
fp(
    "helm-values-existing-secret",
    "postgresql:\n  auth:\n    existingSecret: shop-db\n    secretKeys:\n      adminPasswordKey: postgres-password",
    "output",
)
fp("git-remote-ssh", "git remote set-url origin git@github.com:shop/api.git")
fp(
    "curl-commit-sha",
    f"curl -s https://api.github.com/repos/shop/api/commits/{rnd(HEX, 40)}/status",
)
fp("docker-pull-digest", f"docker pull ghcr.io/shop/api@sha256:{rnd(HEX, 64)}")
fp("env-names-only", "DB_PASSWORD\nAPI_TOKEN\nSTRIPE_KEY\nHOME\nPATH", "output")
fp("systemctl-env-plain", "Environment=NODE_ENV=production PORT=8080 LOG_LEVEL=info", "output")
fp(
    "describe-secret-sizes",
    "Name:         db-creds\nNamespace:    shop\nType:  Opaque\n\nData\n====\npassword:  24 bytes\nusername:  3 bytes",
    "output",
)
fp(
    "sshd-config-grep",
    "PasswordAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password",
    "output",
)
fp(
    "passwd-head",
    "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\ndeploy:x:1001:1001::/home/deploy:/bin/bash",
    "output",
)
fp("shadow-locked", "deploy:!:19700:0:99999:7:::\nnobody:*:19700:0:99999:7:::", "output")
fp(
    "redis-requirepass-commented",
    "# requirepass foobared\n# masterauth <master-password>",
    "output",
)
fp("ns-uid", uid(), "output")
fp(
    "az-account-show",
    '{\n  "id": "'
    + uid()
    + '",\n  "name": "shop-prod",\n  "tenantId": "'
    + uid()
    + '",\n  "user": {"name": "ops@example.com", "type": "user"}\n}',
    "output",
)
fp(
    "gcloud-config-list",
    "[core]\naccount = deployer@shop-prod.iam.gserviceaccount.com\nproject = shop-prod\n\nYour active configuration is: [default]",
    "output",
)
fp("docker-inspect-id", rnd(HEX, 64), "output")
fp(
    "token-expired-message",
    'echo "token expired at 2026-12-08T00:00:00Z, run: vault login -method=oidc"',
)
fp("base64-pod-json", "echo 'eyJhcGlWZXJzaW9uIjoidjEiLCJraW5kIjoiUG9kIn0=' | base64 -d")
fp(
    "secret-ca-crt-only",
    "data:\n  ca.crt: "
    + b64(("-----BEGIN CERTIFICATE-----\n" + "\n".join(cert[:6]) + "\n").encode())
    + "\n  namespace: c2hvcA==",
    "output",
)
fp("curl-search-password-reset", "curl -s 'https://api.example.com/search?q=password+reset&page=2'")
fp(
    "git-log-p-env-lookup",
    '-    api_key = os.environ["API_KEY"]\n+    api_key = settings.API_KEY',
    "output",
)
fp("ssh-identity-file", "ssh -i ~/.ssh/deploy_key -o IdentitiesOnly=yes deploy@10.0.0.5 'uptime'")
fp("sshpass-file", "sshpass -f /root/.ipmi_pw ssh admin@10.0.0.5 uptime")
fp("mysql-login-path", "mysql --login-path=backup -e 'SELECT 1'")
fp("kubectl-from-file", "kubectl -n shop create secret tls shop-tls --cert=tls.crt --key=tls.key")
fp("vault-field-password", "vault kv get -field=password secret/shop/db")
fp("redis-askpass", "redis-cli -h cache01 --askpass PING")
fp("curl-user-prompt", "curl -s -u admin https://jenkins.example.com/api/json")
fp(
    "docker-config-credsstore",
    '{\n\t"auths": {\n\t\t"ghcr.io": {}\n\t},\n\t"credsStore": "desktop"\n}',
    "output",
)
fp("requirements-hash", f"requests==2.32.3 \\\n    --hash=sha256:{rnd(HEX, 64)}", "output")
fp("package-lock-integrity", f'      "integrity": "sha512-{b64(R.randbytes(64))}",', "output")
fp("go-sum-line", f"github.com/spf13/cobra v1.8.0 h1:{b64(R.randbytes(32))}", "output")
fp(
    "cosign-signature",
    '{"critical":{"identity":{"docker-reference":"ghcr.io/shop/api"}},"optional":null}\n'
    + f"Signature: MEUCIQ{rnd(B64, 90)}",
    "output",
)
fp(
    "etag-header",
    f'HTTP/2 200\netag: "{rnd(HEX, 40)}"\nx-request-id: {uid()}\ncache-control: max-age=300',
    "output",
)
fp(
    "openssl-rand-to-file",
    "openssl rand -base64 32 > /run/secrets/new_session_key && chmod 600 /run/secrets/new_session_key",
)
fp(
    "password-policy-grep",
    "/etc/security/pwquality.conf:minlen = 14\n/etc/security/pwquality.conf:dcredit = -1",
    "output",
)
fp(
    "k8s-configmap",
    "apiVersion: v1\ndata:\n  LOG_LEVEL: info\n  FEATURE_FLAGS: checkout-v2,search-v3\nkind: ConfigMap",
    "output",
)
fp(
    "kubeadm-token-list-header",
    "TOKEN                     TTL         EXPIRES                USAGES\n<none>",
    "output",
)
fp("git-credential-helper", "git config --global credential.helper 'cache --timeout=3600'")
fp(
    "pip-config-list",
    "global.index-url='https://pypi.internal.example.com/simple/'\nglobal.trusted-host='pypi.internal.example.com'",
    "output",
)
fp(
    "ansible-vault-view-cmd",
    "ansible-vault view --vault-password-file ~/.vault_pass group_vars/prod/vault.yml",
)
fp("sha1-in-url", f"https://github.com/shop/api/blob/{rnd(HEX, 40)}/deploy/values.yaml", "output")

if __name__ == "__main__":
    target = Path(__file__).with_name("cmdline_blind5_cases.jsonl")
    target.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    tps = [row for row in ROWS if row["kind"] == "tp"]
    families = sorted({str(row["source"]).split("-")[0] for row in tps})
    print(
        f"{len(tps)} secrets in {len(families)} families ({', '.join(families)}), {len(ROWS) - len(tps)} plain lines"
    )
