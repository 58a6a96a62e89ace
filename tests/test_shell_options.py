"""Knowledge per subcommand and option (issue 33, cause 5): a command is read-only only when
every subcommand and option given is known to be; a long option abbreviating a writing one
counts as it; tools whose unknown options may change the host refuse them. And the other side:
plainly read-only commands from outside the classifier's corpora still run, and so do the real
investigators' commands."""

from __future__ import annotations

import pytest

from agentledger.runner.shell_gate import Gate, load_policy
from agentledger.shell.classifier import classify
from agentledger.shell.knowledge import READ_ONLY
from command_corpora import allowed_share, investigator_commands, readonly_commands, tldr_commands

REFUSED = [
    "pip config edit",
    "pip config set global.index-url http://evil",
    "pip config unset global.index-url",
    "pip3 config set global.extra-index-url http://evil",
    "history -w /tmp/h",
    "history -a",
    "history -c",
    "history -r /tmp/commands",
    "git reflog expire --expire=now --all",
    "git reflog delete HEAD@{1}",
    "git gc --prune=now",
    "git config --global core.pager 'rm x'",
    "tar --index-file=/tmp/x -tf a.tar",
    "tar --ind=/tmp/x -tf a.tar",
    "tar -tf a.tar -g /tmp/snapshot",
    "tar -tf a.tar --use-compress-program='sh -c id'",
    "GIT_ALLOW_PROTOCOL=ext git ls-remote 'ext::sh -c id'",
    "git ls-remote 'ext::sh -c id'",
    "GIT_DIR=/tmp/evil git log",
    "GIT_CONFIG_PARAMETERS=\"'core.pager=id'\" git log",
    "env GIT_ALLOW_PROTOCOL=ext git ls-remote x",
    "LD_PRELOAD=/tmp/x.so ls",
    "BASH_ENV=/tmp/x bash -c ls",
    "PAGER='rm x' man ls",
    "env -S 'rm x'",
    "env -iS 'rm x'",
    "ssh -I /tmp/lib.so host uptime",
    "ssh -o ProxyCommand='rm x' host uptime",
    "ssh -o PKCS11Provider=/tmp/lib.so host uptime",
    "ssh -o LocalCommand='rm x' -o PermitLocalCommand=yes host uptime",
    "ssh -o RemoteCommand='rm x' host",
    "sqlite3 db 'select 1' '.once /tmp/f'",
    "sqlite3 db '.tables' '.shell id'",
    "sqlite3 db '.output /tmp/f'",
    "sqlite3 db '.system id'",
    "sqlite3 db '.load /tmp/x.so'",
    "sqlite3 db '.frobnicate'",
    "awk 'BEGIN{system(\"id\")}'",
    "awk '{print > \"/tmp/x\"}' f",
    "sed -n '1w /tmp/x' f",
    "sed --in=.bak s/a/b/ f",
    "LESSOPEN='|rm %s' less f",
    "vim -c ':!id' f",
    "git -c core.pager='rm x' log",
    "mysql -e 'system id'",
    "psql -c '\\! id'",
    "psql -c '\\o /tmp/x'",
    "openssl x509 -in c.pem -out /tmp/x",
    "journalctl --vacuum-size=1M",
    "journalctl --vac=1s",
    "systemctl set-property x CPUQuota=1%",
    "systemctl frobnicate x",
    "sysctl -w net.ipv4.ip_forward=1",
    "sysctl net.ipv4.ip_forward=1",
    "sysctl -p",
    "sysctl -f /etc/x.conf",
    "sysctl --system",
    "sysctl --frobnicate",
    "ethtool --set-priv-flags eth0 x on",
    "ethtool -s eth0 speed 10",
    "ethtool -t eth0 offline",
    "ethtool --frobnicate eth0",
    "arping -U -I eth0 10.0.0.1",
    "arping -A -I eth0 10.0.0.1",
    "arping -c1 -U 10.0.0.1",
    "arping -z 10.0.0.1",
    "iptables --ze -L",
    "sort --out=/tmp/x f",
    "sort --ou /tmp/x f",
    "ip link set eth0 down",
    "ip -batch /tmp/f",
    "hostname -F /etc/hostname.new",
    "date 010101012020",
    "iptables-save -f /etc/iptables/rules.v4",
    "sensors -s",
    "ntpq -c ':config server evil'",
    "ssh-keygen -R bastion",
    "ssh-keygen -t ed25519 -f /tmp/k",
    "gpg --import key.asc",
    "gpg --delete-secret-keys ops",
    "gpg --list-keys --frobnicate",
]

# A write option inside a cluster of short options (getopt reads `-nnw F` as `-n -n -w F`):
# read as letters where the tool is known to, refused as unread where it is not.
CLUSTERED = [
    "tcpdump -nnw /etc/cron.d/x",
    "tcpdump -nni eth0 -w/tmp/cap",
    "strace -fo/etc/passwd ls",
    "strace -ffo /root/.bashrc id",
    "time -ao/etc/hosts true",
    "tshark -nw/etc/x",
    "iptables-save -cf/etc/iptables/rules.v4",
    "mysqldump -qr/etc/x db",
    "pg_dump -Cf/etc/x db",
    "atop -aw/var/log/x",
    "mongoexport -vo/etc/x",
    "tree -ao/etc/x",
    "less -fo/etc/x /var/log/syslog",
    "sar -uo/etc/x 1 1",
    "env -iS'rm -rf /srv' ls",
    "xargs -0I{} rm {}",
]

ALLOWED = [
    "tcpdump -nni eth0 -c 10",
    "tcpdump -nn -vvv port 22",
    "strace -fp1",
    "strace -cf ls",
    "iptables-save -c",
    "pg_dump -Cs db",
    "mysql -uroot -psecret -e 'SHOW PROCESSLIST'",
    "sudo -nu root ls",
    "xargs -0n1 echo",
    "ip -br a",
    "pip config list",
    "pip config get global.index-url",
    "history",
    "history 20",
    "git reflog",
    "git reflog show HEAD",
    "git config --get user.email",
    "tar -tzf backup.tar.gz",
    "git ls-remote origin",
    "ssh -o ConnectTimeout=5 host uptime",
    "sqlite3 app.db '.tables'",
    "sqlite3 app.db '.schema users' 'select count(*) from users'",
    "sysctl -a",
    "sysctl -n net.ipv4.ip_forward",
    "sysctl net.ipv4.ip_forward",
    "ethtool -i eth0",
    "ethtool -S eth0",
    "ethtool eth0",
    "arping -c 1 -I eth0 10.0.0.1",
    "iptables -nvL",
    "iptables --list -n",
    "ls --colo=auto",
    "journalctl -u nginx --no-pager",
    "hostname -I",
    "date +%s",
    "date -d yesterday",
    "iptables-save",
    "sensors",
    "ntpq -c rv",
    "ssh-keygen -l -f key.pub",
    "ssh-keygen -F bastion",
    "gpg --list-keys",
    "gpg --fingerprint ops@example.com",
]


@pytest.mark.parametrize("line", REFUSED)
def test_a_writing_subcommand_or_option_is_not_read_only(line: str) -> None:
    found = classify(line)
    assert found.kind != READ_ONLY, found
    assert all(part.reason for part in found.parts)


@pytest.mark.parametrize("line", CLUSTERED)
def test_a_write_option_inside_a_cluster_of_short_options_is_seen(line: str) -> None:
    found = classify(line)
    assert found.kind != READ_ONLY, found


@pytest.mark.parametrize("line", ALLOWED)
def test_the_reading_forms_of_the_same_tools_still_run(line: str) -> None:
    assert classify(line).kind == READ_ONLY, classify(line)


def test_an_abbreviation_names_the_option_it_abbreviates() -> None:
    reason = classify("iptables --ze -L").parts[0].reason
    assert "--ze abbreviates --zero" in reason


def test_a_strict_tool_says_which_option_it_does_not_know() -> None:
    reason = classify("ethtool --frobnicate eth0").parts[0].reason
    assert "--frobnicate" in reason and "does not know" in reason


def test_most_plainly_read_only_commands_run_in_investigate_mode() -> None:
    share, refused = allowed_share(readonly_commands())
    assert len(readonly_commands()) >= 300
    assert share >= 0.6, refused
    # Not below the first run's figure by more than a few commands either.
    assert share >= 0.95, refused


def test_most_read_only_tldr_examples_run_in_investigate_mode() -> None:
    # Another project's examples (tldr-pages, CC BY 4.0), marked read-only by a rule fixed
    # before measuring (tests/data/make_tldr_corpus.py). First run: 204 of 208 allowed; the
    # nslookup options -vc, -port=N then joined its reader's list. Still refused: a port
    # that is tldr's placeholder (`-port=port_number`) and a typo of tldr's (`getenet`).
    rows = tldr_commands()
    assert len(rows) >= 200 and len({page for page, _ in rows}) >= 45
    share, refused = allowed_share([command for _, command in rows])
    assert share >= 0.6, refused
    assert [command for command, _ in refused] == [
        "nslookup -port=port_number -type=TXT example.com name_server",
        "getenet group group_name",
    ]


def test_at_most_two_percent_of_real_investigator_commands_are_refused() -> None:
    rows = investigator_commands()
    assert len(rows) >= 140
    assert {source for source, _ in rows} == {"sample_runs", "trajectory_blind", "openhands"}
    share, refused = allowed_share([command for _, command in rows])
    assert 1 - share <= 0.02, refused


def test_the_packaged_policy_is_the_one_measured() -> None:
    gate = Gate(load_policy(None), None, ci=True)
    assert gate.decide("ls -la").decision == "allowed"
    assert gate.decide("sysctl -w a.b=1").decision == "denied"


def test_an_attached_password_is_neither_a_value_read_nor_shown() -> None:
    """`mysql -pPASSWORD`: the letters after -p are its value (never read as `-s -e ...`),
    and no reason repeats it."""
    found = classify("mysql -uroot -pse3cret -e 'SHOW PROCESSLIST'")
    assert found.kind == READ_ONLY
    assert not any("se3cret" in part.reason for part in found.parts)
    assert classify("mysqldump -u b -pse3cret -r /etc/x db").kind != READ_ONLY
