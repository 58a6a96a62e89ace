"""Round seven of the jail (issue 33): options, subcommands, input and environment variables
that make a tool classified as a read write, run a program or reach a daemon, found by the
seventh red team. Each is checked locally and over ssh (where no sandbox holds), and the plain
reads of the same tools still run."""

from __future__ import annotations

import pytest

from agentledger.runner.shell_gate import Gate
from agentledger.shell.classifier import classify
from jail_helpers import assert_refused, over_ssh

NOT_READ_ONLY = [
    # a bus address that executes a program; another host or container
    "busctl --address=unixexec:path=/bin/touch,argv1=/tmp/x list",
    "busctl --address unixexec:path=/bin/sh list",
    "busctl -H otherhost list",
    # whois sends its query line to any daemon
    "whois -h 127.0.0.1 -p 6379 FLUSHALL",
    "whois --port=11211 -h 127.0.0.1 flush_all",
    "whois -h 127.0.0.1:6379 FLUSHALL",
    # openssl s_client sends its input to the server
    "printf 'POST /admin HTTP/1.0\\r\\n\\r\\n' | openssl s_client -connect 127.0.0.1:443 -quiet",
    "openssl s_client -connect 127.0.0.1:6379 <<< FLUSHALL",
    "openssl s_client -connect 127.0.0.1:443 < /tmp/request",
    "echo | openssl s_client -connect example.com:443",
    "sudo openssl s_client -connect 127.0.0.1:443 <<< QUIT",
    # setting what would otherwise be shown, abbreviated or not
    "nmcli general hostname evil",
    "nmcli g ho evil",
    "nmcli g h evil",
    "nmcli general logging level DEBUG domains ALL",
    "nmcli radio wifi off",
    "nmcli networking off",
    "nmcli c delete home",
    "nmcli connection export home /tmp/x",
    # options that delete or write
    "udevadm info --cleanup-db",
    "udevadm info -c",
    "udevadm info --cleanup",
    "blkid -c /tmp/blkid.cache",
    "blkid --cache-file=/etc/blkid.tab",
    "blkid -g",
    "ausearch --checkpoint /tmp/cp -m avc",
    "ngrep -O /tmp/x.pcap -d any port 80",
    "vault audit disable file",
    "vault audit enable file file_path=/tmp/x",
    "npm doctor",
    "ltrace -p 1",
    "git help -w log",
    "git help --web log",
    # environment variables that make a tool run a program or append to a file
    "LESSKEY_CONTENT='#env' less /etc/hostname",
    "export LESSKEY_CONTENT=x; less /etc/hostname",
    "LESSHISTFILE=/etc/x less /etc/hostname",
    "TF_LOG=trace TF_LOG_PATH=/tmp/t terraform validate",
    "PGSSLKEYLOGFILE=/tmp/k psql -c 'select 1'",
    "PSQL_HISTORY=/etc/x psql -c 'select 1'",
    "SSLKEYLOGFILE=/tmp/k curl -s https://example.com",
    "APP_LOG_FILE=/etc/x ls",
    # SQL that writes
    "sqlite3 s.db 'pragma incremental_vacuum'",
    "sqlite3 s.db 'PRAGMA optimize'",
    "sqlite3 s.db 'pragma wal_checkpoint(TRUNCATE)'",
    "sqlite3 s.db 'pragma journal_mode=wal'",
    "sqlite3 s.db 'pragma main.user_version = 3'",
    "mysql -e 'reset master'",
    "mysql -e 'RESET REPLICA ALL'",
    "mysql -e 'set @@global.general_log=1'",
    "mysql -e 'SET @@persist.max_connections = 10'",
    # sudo: -k with a command runs it; -K and -v change the cached credentials
    "sudo -k rm -rf /tmp/x",
    "sudo -K",
    "sudo -v",
    # options handed to another program, or that start a daemon
    "rsync -n -M--log-file=/tmp/x a h:b",
    "rsync -n --remote-option=--log-file=/tmp/x a h:b",
    "rsync -n --daemon --config=/tmp/r.conf",
    "git push --dry-run --receive-pack='touch /tmp/x; git-receive-pack' /tmp/b.git HEAD:x",
    "git push -n --exec=/tmp/x origin",
    "kubectl kustomize --enable-helm --helm-command=/tmp/x .",
    "aws sts get-caller-identity --endpoint-url http://127.0.0.1:8080/admin/delete",
    # files written whatever a dry run says, or a log appended to
    "patch --dry-run -o /tmp/out f.c < fix.patch",
    "patch --dry-run --reject-file=/tmp/rej f.c < fix.patch",
    "sshd -t -E /tmp/sshd.log",
    "kubectl cluster-info dump --output-directory=/tmp/dump",
    "conntrack -R /tmp/entries",
    "conntrack --load-file /tmp/entries",
    # nginx -t creates the logs and loads the modules of the configuration it is given
    "nginx -t -e /tmp/err.log",
    "nginx -t -g 'error_log /etc/x;'",
    "nginx -t -p /tmp/prefix",
    "nginx -t -c /tmp/x.conf",
]

STILL_READ_ONLY = [
    "busctl list",
    "busctl --no-pager status",
    "whois example.com",
    "whois -h whois.arin.net 192.0.2.1",
    "openssl s_client -connect example.com:443 -servername example.com </dev/null",
    "openssl s_client -connect example.com:443 < /dev/null | openssl x509 -noout -dates",
    "openssl x509 -in /etc/ssl/certs/server.pem -noout -dates",
    "nmcli",
    "nmcli general",
    "nmcli general status",
    "nmcli g s",
    "nmcli general hostname",
    "nmcli -t -f DEVICE,STATE dev",
    "nmcli device show lo",
    "nmcli c s",
    "nmcli d wifi list",
    "nmcli radio wifi",
    "udevadm info /dev/sda",
    "udevadm info -q property -n /dev/sda",
    "blkid",
    "blkid -c /dev/null",
    "blkid -o value -s UUID /dev/sda1",
    "ausearch -m avc -ts recent",
    "ngrep -q -d any port 80",
    "vault audit list",
    "npm ls",
    "ltrace ls",
    "git help log",
    "less /etc/hostname",
    "sqlite3 s.db 'pragma integrity_check'",
    "sqlite3 s.db 'pragma table_info(users)'",
    "sqlite3 s.db 'PRAGMA main.index_list(users)'",
    "sqlite3 s.db 'pragma journal_mode'",
    "mysql -e 'show processlist'",
    "mysql -e 'set @@session.sql_mode = \"\"'",
    "sudo -l",
    "sudo -k ls /root",
    "rsync --list-only h:/srv",
    "patch --dry-run f.c < fix.patch",
    "sshd -t",
    "git push -n origin",
    "kubectl cluster-info",
    "kubectl cluster-info dump",
    "kubectl kustomize .",
    "aws sts get-caller-identity",
    "conntrack -L",
    "nginx -t",
    "nginx -T -c /etc/nginx/nginx.conf",
]


@pytest.fixture(scope="module")
def investigate() -> Gate:
    return Gate(None, None)


@pytest.mark.parametrize("remote", [False, True], ids=["local", "ssh"])
@pytest.mark.parametrize("line", NOT_READ_ONLY)
def test_what_writes_runs_or_reaches_a_daemon_is_seen(
    investigate: Gate, line: str, remote: bool
) -> None:
    assert_refused(investigate, over_ssh(line, remote))


@pytest.mark.parametrize("remote", [False, True], ids=["local", "ssh"])
@pytest.mark.parametrize("line", STILL_READ_ONLY)
def test_plain_reads_of_those_tools_still_run(investigate: Gate, line: str, remote: bool) -> None:
    line = over_ssh(line, remote)
    assert classify(line).kind == "read-only", classify(line)


def test_s_client_refusal_says_how_to_read() -> None:
    found = classify("openssl s_client -connect example.com:443")
    assert found.kind == "unknown"
    assert "< /dev/null" in str(found), found


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # an ambiguous prefix whose candidates have options of their own: unknown
        ("nmcli g h evil", "unknown"),
        # iproute2 reads a prefix as the first object in its own order
        ("ip a s", "read-only"),
        ("ip r l", "read-only"),
        ("ip a flush dev eth0", "destructive"),
    ],
)
def test_abbreviations(line: str, kind: str) -> None:
    assert classify(line).kind == kind
