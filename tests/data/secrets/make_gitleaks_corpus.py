"""Write gitleaks_cases.jsonl: the true positives and false positives of gitleaks' own rule
tests (github.com/gitleaks/gitleaks, cmd/generate/config/rules/{curl,generic,database}.go,
read 2026-12-07), each with its context kept as gitleaks wrote it and its secret replaced by
a synthetic value of the same shape (seeded: the file is the same at every run).

    python tests/data/secrets/make_gitleaks_corpus.py

Rows: {"source": "gitleaks <file> <rule>", "kind": "tp" or "fp", "text", "secret"}. The
secret of a true positive is labelled here, by hand, before any redactor ran on the text;
a false positive's "secret" is empty (nothing in it may be redacted that is not a secret:
the test checks only that its placeholder words come through).
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

R = random.Random(3310)
ALNUM = string.ascii_letters + string.digits


def like(model: str) -> str:
    """A synthetic value of `model`'s shape: each letter, digit kept as its class."""
    out = []
    for char in model:
        if char.isdigit():
            out.append(R.choice(string.digits))
        elif char.islower():
            out.append(R.choice(string.ascii_lowercase))
        elif char.isupper():
            out.append(R.choice(string.ascii_uppercase))
        else:
            out.append(char)
    return "".join(out)


def b64(size: int) -> str:
    return "".join(R.choice(ALNUM + "+/") for _ in range(size))


ROWS: list[dict[str, str]] = []


def tp(rule: str, template: str, model: str, file: str = "curl.go") -> None:
    secret = like(model)
    ROWS.append(
        {
            "source": f"gitleaks {file} {rule}",
            "kind": "tp",
            "text": template.replace("{S}", secret),
            "secret": secret,
        }
    )


def fp(rule: str, text: str, file: str = "curl.go") -> None:
    ROWS.append({"source": f"gitleaks {file} {rule}", "kind": "fp", "text": text, "secret": ""})


# curl-auth-user: the password of -u/--user user:password
A = "curl-auth-user"
tp(A, "curl --cacert ca.crt -u elastic:{S} https://localhost:9200", "P@ssw0rd$1")
tp(
    A,
    "sh-5.0$ curl -k -X POST https://infinispan:11222/rest/v2/caches/default/hello \\\n"
    "  -H 'Content-type: text/plain' \\\n  -d 'world' \\\n  -u developer:{S}",
    "yqDVtkqPECriaLRi",
)
tp(A, 'curl -u ":{S}" https://localhost:9200', "d2LkV78zLx!t")
tp(A, 'curl -u "{S}:" https://localhost:9200', "d2LkV78zLx!t")
tp(
    A,
    "curl -sw '%{http_code}' -X POST --user  'johns:{S}' $GItHUB_API_URL/$GIT_COMMIT --data",
    "h0pk1ns~21s",
)
tp(
    A,
    "curl --user roger23@gmail.com:{S} https://www.dropbox.com/cli_link?host_id=abcdefg -v",
    "pQ9wTxu4Fg",
)
tp(
    A,
    "curl -s --user 'api:{S}' \\\n    https://api.mailgun.net/v2/sandbox91d3515882ecfaa1c65be"
    "642.mailgun.org/messages",
    "d2LkV78zLx!t",
)
tp(A, 'curl -s -v --user "j.smith:{S}" "https://api.contoso.org/user/me"', "dB2yF6@qL9vZm1P#4J")
tp(
    A,
    'curl -X POST --user "{acd3c08b-74e8-4f44-a2d0-80694le24f46}":"{{S}}" --header '
    '"Accept: application/json" https://gateway.watsonplatform.net/language-translator/api',
    "ZqL5kVrX1n8tA2",
)
tp(
    A,
    "curl --user kevin:'{S}' -iX PATCH -H \"Content-Type: application/json\" -d",
    "pRf7vG2h1L8nQkW9",
)
tp(
    A,
    "$ curl https://api.dropbox.com/oauth2/token \\\n  --user c28wlsosanujy2z:{S} --data "
    "grant_type=authorization_code",
    "qgsnai0xokrw4j1",
)
for text in [
    "curl -i -u 'test:test'",
    '   curl -sL --user "$1:$2" "$3" > "$4"',
    "curl -u <user:password> https://test.com/endpoint",
    "curl --user neo4j:[PASSWORD] http://[IP]:7474/db/data/",
    'curl -u "myusername" http://localhost:15130/api/check_user/',
    'curl -u "${_username}:${_password}"',
    'curl -u ":" https://localhost:9200',
    "curl http://127.0.0.1:5000/file --user user:pass --digest        # digest auth",
]:
    fp(A, text)

# curl-auth-header: the value of Authorization / token headers
H = "curl-auth-header"
tp(H, "curl --header  'Authorization:  {S}'", "5eb4223e-5008-46e5-be67-c7b8f2732305")
tp(H, "curl -H 'Authorization: Basic {S}' \\", "YnJvd3Nlcjo=")
tp(
    H,
    'curl -k -X POST --header "Authorization: Basic {S}" "https://api-qa.example.com:8243/'
    'token" -d "grant_type=client_credentials"',
    b64(72),
)
tp(
    H,
    'curl -X POST -H "Content-Type: application/json" \\\n -H "Authorization: Basic {S}" \\\n'
    '  -d \'{"user":{"emailAddress":"test@example.com"}}\' \\\n'
    "  'http://localhost:8080/oauth2-provider/v1.0/users'",
    b64(84) + "=",
)
tp(
    H,
    "#curl -X POST \\\n#  https://api.mailgun.net/v3/sandbox7dbcabccd4314c123e8b23599d35f5b6"
    ".mailgun.org/messages \\\n#  -H 'Authorization: Basic {S}' \\\n#  -F to='joe@example.com'",
    b64(54) + "==",
)
tp(
    H,
    '# curl -X GET "http://localhost:3000/api/cron/status" -H "Authorization: Bearer {S}"',
    "cfcabd11c7ed9a41b1a3e063c32d5114",
)
tp(
    H,
    "curl -X PUT -H 'Authorization: Bearer {S}' -d 'user={\"account\":\"user@domain.com\"}' "
    "http://127.0.0.1:8443/desks/1/occupy",
    b64(342) + "==",
)
tp(
    H,
    'curl https://api.openai.com/v1/chat/completions \\\n  -H "Content-Type: application/json"'
    ' \\\n  -H "Authorization: Bearer {S}" \\',
    "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",
)
tp(
    H,
    'curl -X GET "https://api.cloudflare.com/client/v4/user/tokens/verify" \\\n     -H '
    '"Authorization: Bearer {S}" \\\n     -H "Content-Type:application/json"',
    "_FXNljbSRYMWx3TWrd7lgKhLtVZX6iskC8Wcbb4b",
)
tp(H, 'curl -H "Authorization: Bearer {S}"', "sha256~bRLFnzd59Z3XpZH5_seJPHALOuvbWiKwbFKSsoALkgp")
tp(
    H,
    'curl -H "Authorization: Api-Token {S}" --request PUT https://appsecclass.report/api/use/635',
    "22cb987851bc5659l29114c62e60c79abd0d2c08",
)
tp(
    H,
    'curl -H "Authorization: Token {S}" --request PUT https://appsecclass.report/api/use/635',
    "22cb987851bc5659229114c62e60c79abd0d2c08",
)
tp(
    H,
    'curl -L -H "Authorization:{S}" service1.local',
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJjb25maWRlbmNlIjowLjh9.kvRPfjAhLhtRTczoRgctVGp7KY1QVH3UBZM-gM0x8ec",
)
tp(H, 'curl -L -H "Authorization: {S}"', "sha256~bRLFnzd5@=-.a+/hgdS")
tp(
    H,
    'curl -X GET \\\n     -H "apikey: {S}" \\\n     -H "Accept: application/json" \\',
    "c4ed6c21-9dd5-4a05-8e3f-c56d1151cce8",
)
tp(H, 'curl -X POST --header "Api-Token: {S}"', "Sk94HG7f6KB")
tp(
    H,
    'curl -XPOST http://localhost:8080/api/tasks -H "Content-Type: application/x-www-form-url'
    'encoded; charset=UTF-8" -H "Token: {S}" -d "content=hello-curl"',
    "3fea6af1349166ea",
)
tp(
    H,
    'curl -X GET https://octopus.corp.net/\n     -H "X-Octopus-ApiKey: {S}" \\',
    "3a16750d-d363-41a4-8ebd-035408f7730f",
)
for text in [
    'curl https://example.com/micropub -d h=entry -H "Authorization: Bearer XXXXXXXXXXXX"',
    'curl \\\n  -H "Authorization: Bearer <Openverse API token>" \\\n  "https://api.openverse.org/v1/audio/?q=test"',
    'curl -X GET \\\n     -H "apikey: $API_KEY" \\\n     -H "Accept: $FORMAT"',
    'curl -H "Authorization: Bearer $(gcloud auth print-access-token)" https://workflowexecutions.googleapis.com/v1/projects/244283331594/locations',
]:
    fp(H, text)

# generic-api-key
G = "generic-api-key"
tp(
    G,
    'generic_api_token = "{S}"',
    "CLOJARS_34bf0e88955ff5a1c328d6a7491acc4f48e865a7b8dd4d70a70749037443",
    "generic.go",
)
tp(G, 'genericToken := "{S}"', "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB", "generic.go")
tp(
    G,
    '"client_id" : "{S}"',
    "0afae57f3ccfd9d7f5767067bc48b30f719e271ba470488056e37ab35d4b6506",
    "generic.go",
)
tp(
    G,
    '"client_secret" : "{S}",',
    "6da89121079f83b2eb6acccf8219ea982c3d79bccc3e9c6a85856480661f8fde",
    "generic.go",
)
fp(G, "client_vpn_endpoint_id = aws_ec2_client_vpn_endpoint.client-vpn-endpoint.id", "generic.go")
fp(G, "password combination.\n\nR5: Regulatory--21", "generic.go")

# database-password: the shapes of gitleaks' GenerateSampleSecrets for each key
D = "database-password"
SHAPES = [
    '{K} = "{S}"',
    "{K}: {S}",
    "{K}={S}",
    '"{K}": "{S}"',
    "{K} := `{S}`",
    "{K} => '{S}'",
    "export {K}={S}",
    "{K} ?= {S}",
]
SECRET_CHARS = ALNUM + ":;<@=},!$?^"
for key, size in (
    ("DB_PASSWORD", 20),
    ("db_password", 6),
    ("DB_PASSWD", 10),
    ("$DB_PASSWD", 15),
    ("$DB_PASSWORD", 50),
):
    for shape in SHAPES[:4] if key.startswith("$") else SHAPES:
        model = "".join(R.choice(SECRET_CHARS) for _ in range(size))
        tp(D, shape.replace("{K}", key), model, "database.go")
tp(D, "pwd = {S}", "".join(R.choice(ALNUM) for _ in range(20)), "database.go")
tp(D, "pwd: {S}", "".join(R.choice(ALNUM) for _ in range(50)), "database.go")
fp(D, "DB_PASSWORD=[value]", "database.go")

# gitleaks' GenerateSampleSecrets (cmd/generate/config/utils/generate.go): the 30 contexts its
# rules' tests put a secret in, here for the identifiers of its database-password rule.
SAMPLE_FORMS = [
    '{i}Token="{s}"', '{i}Token = "{s}"', "{i}Token={s}", "{i}Token = {s}",
    '{\n    "{i}_token": "{s}"\n}', '\\{\n    \\"{i}_token\\": \\"{s}\\"\n\\}',
    "<{i}Token>{s}</{i}Token>", "<{i}Token>\n    {s}\n</{i}Token>",
    "{i}_token: {s}", "{i}_token: '{s}'", '{i}_token: "{s}"', "{i}_token: |\n  {s}",
    "{i}_token: >\n  {s}", 'string {i}Token = "{s}";', 'var {i}Token string = "{s}"',
    '{i}Token := "{s}"', "{i}Token := `{s}`", 'String {i}Token = "{s}";', 'var {i}Token = "{s}"',
    '${i}Token .= "{s}"', "{i}Token = '{s}'", '{i}Token = "{s}"', "{i}Token,{s},",
    '  "{i}Token" => "{s}"', '{i}_TOKEN = "{s}"', '{i}_TOKEN := "{s}"', '{i}_TOKEN ::= "{s}"',
    '{i}_TOKEN :::= "{s}"', '{i}_TOKEN ?= "{s}"', '{i}_TOKEN += "{s}"',
]  # fmt: skip
for identifier, size in (("DB_PASSWORD", 20), ("DB_PASSWD", 10), ("database_password", 24)):
    for form in SAMPLE_FORMS:
        model = "".join(R.choice(ALNUM + ":;<@=!$?^") for _ in range(size))
        tp(
            "database-password-samples",
            form.replace("{i}", identifier).replace("{s}", "{S}"),
            model,
            "database.go+utils/generate.go",
        )

# GenerateSampleSecret(id, secret) = `{id}_api_token = "{secret}"`, for token kinds whose rule
# tests use it (shapes from each rule's regex: prefix kept, the rest synthetic).
TOKENS = [
    ("github.go", "github-pat", "github", "ghp_", "A1" * 18),
    ("github.go", "github-fine-grained-pat", "github", "github_pat_", "a1" * 41),
    ("gitlab.go", "gitlab-pat", "gitlab", "glpat-", "a1" * 10),
    ("slack.go", "slack-bot-token", "slack", "xoxb-", "1234567890123-1234567890123-" + "aA" * 12),
    ("stripe.go", "stripe-access-token", "stripe", "sk_live_", "aA1" * 8),
    ("npm.go", "npm-access-token", "npm", "npm_", "aA1" * 12),
    ("pypi.go", "pypi-upload-token", "pypi", "pypi-AgEIcHlwaS5vcmc", "aA1" * 17),
    ("anthropic.go", "anthropic-api-key", "anthropic", "sk-ant-api03-", "aA1" * 31 + "AA"),
    ("openai.go", "openai-api-key", "openai", "sk-proj-", "aA1" * 7 + "T3BlbkFJ" + "aA1" * 7),
    ("huggingface.go", "huggingface-access-token", "huggingface", "hf_", "aA" * 17),
    ("digitalocean.go", "digitalocean-pat", "digitalocean", "dop_v1_", "a1" * 32),
    ("sendgrid.go", "sendgrid-api-token", "sendgrid", "SG.", "aA1" * 7 + "a." + "aA1" * 14 + "a"),
    ("shopify.go", "shopify-access-token", "shopify", "shpat_", "a1" * 16),
    ("doppler.go", "doppler-api-token", "doppler", "dp.pt.", "aA1" * 14 + "a"),
    ("postman.go", "postman-api-token", "postman", "PMAK-", "a1" * 12 + "-" + "a1" * 17),
    ("grafana.go", "grafana-service-account-token", "grafana", "glsa_", "aA1" * 10 + "aA_a1b2c3d4"),
    ("hashicorp.go", "hashicorp-tf-api-token", "hashicorp", "",
     "a" * 14 + ".atlasv1." + "aA1" * 22 + "a"),
    ("linear.go", "linear-api-key", "linear", "lin_api_", "aA1" * 13 + "a"),
    ("databricks.go", "databricks-api-token", "databricks", "dapi", "a1" * 16),
    ("pulumi.go", "pulumi-api-token", "pulumi", "pul-", "a1" * 20),
    ("planetscale.go", "planetscale-password", "planetscale", "pscale_pw_", "aA1" * 14 + "a"),
    ("flyio.go", "flyio-access-token", "flyio", "fo1_", "aA1" * 14 + "a"),
    ("gcp.go", "gcp-api-key", "gcp", "AIza", "aA1" * 11 + "aA"),
    ("twilio.go", "twilio-api-key", "twilio", "SK", "a1" * 16),
    ("dynatrace.go", "dynatrace-api-token", "dynatrace", "dt0c01.", "A1" * 12 + "." + "A1" * 32),
]  # fmt: skip
for file, rule, ident, prefix, body in TOKENS:
    secret = prefix + like(body)
    ROWS.append(
        {
            "source": f"gitleaks {file} {rule}",
            "kind": "tp",
            "text": f'{ident}_api_token = "{secret}"',
            "secret": secret,
        }
    )


if __name__ == "__main__":
    out = Path(__file__).with_name("gitleaks_cases.jsonl")
    out.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    print(
        f"{sum(r['kind'] == 'tp' for r in ROWS)} true positives, "
        f"{sum(r['kind'] == 'fp' for r in ROWS)} false positives -> {out}"
    )
