"""Writes cmdline_kinds_cases.jsonl: secrets typed on command lines of tools the rule table
(`redact_argv_rules.TOOLS`) did not name when it was written (issue 33, cause 10: "of new
kinds at most 5%"), and lines of the same tools that hold none. Written and labelled before
any rule for these tools: every third case of each kind (`blind`: true) is never looked at
while the rules are tuned. Values are synthetic.

    python tests/data/secrets/make_cmdline_kinds_corpus.py
"""

from __future__ import annotations

from make_cmdline_corpus import write_cases

# (source, command line, the secret or the secrets it holds)
SECRETS: list[tuple[str, str, list[str]]] = [
    ("keytool-storepass", "keytool -list -keystore app.jks -storepass Ks7orePw", ["Ks7orePw"]),
    (
        "keytool-genkey-keypass",
        "keytool -genkeypair -alias web -keystore k.p12 -storepass St0reA -keypass K3yPassB",
        ["St0reA", "K3yPassB"],
    ),
    (
        "jarsigner-storepass",
        "jarsigner -keystore rel.jks -storepass JarS1gnPw app.jar release",
        ["JarS1gnPw"],
    ),
    (
        "apksigner-ks-pass",
        "apksigner sign --ks rel.jks --ks-pass pass:ApkS1gn9 app.apk",
        ["ApkS1gn9"],
    ),
    ("zip-P", "zip -r -P Z1pSecret9 backup.zip /srv/data", ["Z1pSecret9"]),
    ("unzip-P", "unzip -P Unz1pPw7 archive.zip -d out", ["Unz1pPw7"]),
    ("7z-p-attached", "7z a -pSeven7Zpw -mhe=on vault.7z secrets/", ["Seven7Zpw"]),
    ("7z-x-p", "7z x -pX7tract99 vault.7z", ["X7tract99"]),
    (
        "influx-password",
        "influx -username admin -password Infl8xPw -execute 'SHOW DATABASES'",
        ["Infl8xPw"],
    ),
    (
        "influx-token",
        "influx bucket list --token InfluxTok3nAbcDefGh12 --org acme",
        ["InfluxTok3nAbcDefGh12"],
    ),
    ("cqlsh-p", "cqlsh -u cassandra -p Cassy4Pw db1 9042", ["Cassy4Pw"]),
    ("nodetool-pw", "nodetool -u admin -pw N0detoolPw status", ["N0detoolPw"]),
    ("isql-dsn", "isql -v MSSQL_DSN sa Is9lPassw", ["Is9lPassw"]),
    ("bcp-P", "bcp dbo.orders out orders.dat -S db1 -U sa -P BcpSecr3t -c", ["BcpSecr3t"]),
    ("tsql-P", "tsql -H db1 -p 1433 -U sa -P Tsq1Pass", ["Tsq1Pass"]),
    ("mysqlsh-password", "mysqlsh --uri root@db1:3306 --password=MyShPw4 --sql", ["MyShPw4"]),
    (
        "mongodump-p",
        "mongodump --host db1 -u backup -p M0ngoDmp --authenticationDatabase admin",
        ["M0ngoDmp"],
    ),
    (
        "mongorestore-password",
        "mongorestore --username r --password MongoR3st ./dump",
        ["MongoR3st"],
    ),
    (
        "s3cmd-secret-key",
        "s3cmd --access_key=AK1 --secret_key=S3cmdSecretKey77 ls s3://bkt",
        ["S3cmdSecretKey77"],
    ),
    (
        "pgbackrest-s3-key",
        "pgbackrest --stanza=main --repo1-s3-key-secret=PgbrS3cret backup",
        ["PgbrS3cret"],
    ),
    (
        "skopeo-creds",
        "skopeo copy --src-creds bob:Sk0peoPw docker://a/b docker://c/d",
        ["Sk0peoPw"],
    ),
    (
        "docker-login-p",
        "docker login -u ci -p D0ckerLoginPw registry.example.com",
        ["D0ckerLoginPw"],
    ),
    (
        "podman-login-password",
        "podman login --username ci --password P0dmanPw quay.io",
        ["P0dmanPw"],
    ),
    (
        "helm-repo-password",
        "helm repo add priv https://charts.example.com --username u --password H3lmRepoPw",
        ["H3lmRepoPw"],
    ),
    ("twine-p", "twine upload -u __token__ -p Tw1neUploadPw dist/*", ["Tw1neUploadPw"]),
    ("cargo-login", "cargo login CargoTok3nAbc123", ["CargoTok3nAbc123"]),
    (
        "npm-config-authtoken",
        "npm config set //registry.example.com/:_authToken NpmAuthT0ken42",
        ["NpmAuthT0ken42"],
    ),
    ("poetry-http-basic", "poetry config http-basic.priv alice P0etryPw", ["P0etryPw"]),
    (
        "svn-password",
        "svn checkout https://svn.example.com/repo --username bob --password SvnPass8",
        ["SvnPass8"],
    ),
    (
        "kcat-sasl",
        "kcat -b k1:9093 -X security.protocol=SASL_SSL -X sasl.username=u"
        " -X sasl.password=KcatSasl9 -L",
        ["KcatSasl9"],
    ),
    (
        "nats-password",
        "nats pub --server nats://n1:4222 --user app --password NatsPw55 orders hi",
        ["NatsPw55"],
    ),
    (
        "artemis-password",
        "artemis producer --user admin --password ArtemisPw3 --destination q1",
        ["ArtemisPw3"],
    ),
    (
        "swaks-auth-password",
        "swaks --to a@example.com --auth LOGIN --auth-user u --auth-password Sw4ksPw",
        ["Sw4ksPw"],
    ),
    (
        "sentry-cli-auth-token",
        "sentry-cli --auth-token SentryTok3n998877 releases list",
        ["SentryTok3n998877"],
    ),
    ("consul-token", "consul kv get -token=C0nsulTok3n config/db", ["C0nsulTok3n"]),
    ("nomad-token", "nomad job status -token N0madTok3n web", ["N0madTok3n"]),
    ("doctl-auth", "doctl auth init -t DoctlT0kenXyz123", ["DoctlT0kenXyz123"]),
    (
        "glab-token",
        "glab auth login --hostname gl.example.com --token GlabT0ken777",
        ["GlabT0ken777"],
    ),
    ("kadmin-w", "kadmin -p admin/admin -w Kadm1nPw -q 'listprincs'", ["Kadm1nPw"]),
    ("kadmin-addprinc-pw", "kadmin.local -q 'addprinc -pw NewPrinc1 alice'", ["NewPrinc1"]),
    (
        "samba-tool-newpassword",
        "samba-tool user setpassword bob --newpassword=SambaN3w!",
        ["SambaN3w!"],
    ),
    ("smbget-password", "smbget -U alice --password SmbG3tPw smb://fs/share/f.txt", ["SmbG3tPw"]),
    ("plink-pw", "plink -ssh -pw Pl1nkPass admin@10.0.0.5 uptime", ["Pl1nkPass"]),
    ("pscp-pw", "pscp -pw PscpPass2 file.txt admin@10.0.0.5:/tmp/", ["PscpPass2"]),
    ("x11vnc-passwd", "x11vnc -display :0 -passwd X11VncPw -forever", ["X11VncPw"]),
    ("racadm-p", "racadm -r 10.0.0.9 -u root -p Rac4dmPw getsysinfo", ["Rac4dmPw"]),
    ("wpa_cli-psk", "wpa_cli set_network 0 psk '\"WpaCl1Psk\"'", ["WpaCl1Psk"]),
    ("iwconfig-key", "iwconfig wlan0 essid home key s:IwKey12345678", ["IwKey12345678"]),
    (
        "openconnect-stdin",
        "echo VpnPa55 | openconnect --user=alice --passwd-on-stdin vpn.example.com",
        ["VpnPa55"],
    ),
    ("grafana-reset", "grafana-cli admin reset-admin-password Graf4naPw", ["Graf4naPw"]),
    (
        "gpg-passphrase",
        "gpg --batch --pinentry-mode loopback --passphrase GpgPhr4se -d f.gpg",
        ["GpgPhr4se"],
    ),
    ("ccrypt-K", "ccrypt -e -K Ccrypt5Key notes.txt", ["Ccrypt5Key"]),
    (
        "veracrypt-password",
        "veracrypt --text --mount vol.hc /mnt/v --password=VeraCr7pt",
        ["VeraCr7pt"],
    ),
    (
        "java-keystore-prop",
        "java -Djavax.net.ssl.keyStorePassword=JavaKsPw -jar app.jar",
        ["JavaKsPw"],
    ),
    ("mvn-gpg-passphrase", "mvn deploy -Dgpg.passphrase=MvnGpgPh -DskipTests", ["MvnGpgPh"]),
    (
        "ansible-e-password",
        "ansible all -i hosts -e ansible_password=AnsPass9 -m ping",
        ["AnsPass9"],
    ),
    ("wp-user-pass", "wp user create bob bob@example.com --user_pass=WpUs3rPw", ["WpUs3rPw"]),
    ("winexe-U", "winexe -U 'CORP/admin%W1nexePw' //10.0.0.7 'cmd /c ver'", ["W1nexePw"]),
]

BENIGN: list[tuple[str, str]] = [
    ("keytool-list-plain", "keytool -list -v -keystore /etc/ssl/cacerts.jks"),
    ("zip-plain", "zip -r backup.zip /srv/data"),
    ("7z-l-plain", "7z l vault.7z"),
    ("influx-plain", "influx bucket list --org acme"),
    ("cqlsh-plain", "cqlsh db1 9042 -e 'DESCRIBE KEYSPACES'"),
    ("nodetool-plain", "nodetool status"),
    ("bcp-plain", "bcp dbo.orders out orders.dat -S db1 -T -c"),
    ("mongodump-plain", "mongodump --host db1 --db app --out /backup"),
    ("s3cmd-plain", "s3cmd ls s3://bkt/logs/"),
    ("pgbackrest-plain", "pgbackrest --stanza=main info"),
    ("docker-login-stdin-plain", "docker login -u ci --password-stdin registry.example.com"),
    ("helm-repo-plain", "helm repo add bitnami https://charts.bitnami.com/bitnami"),
    ("svn-plain", "svn log -l 5 https://svn.example.com/repo"),
    ("kcat-plain", "kcat -b k1:9092 -L -X security.protocol=PLAINTEXT"),
    ("consul-plain", "consul members -http-addr=http://127.0.0.1:8500"),
    ("nomad-plain", "nomad job status web"),
    ("gpg-plain", "gpg --list-keys --keyid-format long"),
    ("java-plain", "java -Djavax.net.ssl.trustStore=/etc/ssl/t.jks -jar app.jar"),
    ("racadm-plain", "racadm getsysinfo"),
    ("plink-plain", "plink -ssh -i key.ppk admin@10.0.0.5 uptime"),
]


def main() -> None:
    write_cases("cmdline_kinds_cases.jsonl", SECRETS, BENIGN, {"written": "before-kinds-rules"})


if __name__ == "__main__":
    main()
