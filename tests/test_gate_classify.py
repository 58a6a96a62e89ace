"""The gate's classifier: realistic ops command lines, and the tricky ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentledger.errors import RecordError
from agentledger.runner.shell_gate import classify, load_knowledge
from agentledger.shell.knowledge import glob_match
from agentledger.shell.sql import classify_sql
from agentledger.shell.words import simple_words


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLEDGER_CACHE_DIR", str(tmp_path / "cache"))


READ_ONLY = [
    "true",
    "iptables -L -n",
    "iptables -nvL INPUT --line-numbers",
    "iptables -t nat -S",
    "sudo iptables -S f2b-sshd",
    "iptables-save",
    "nft list ruleset",
    "nft -a list chain inet filter input",
    "tc qdisc show dev eth0",
    "tc -s qdisc",
    "ip route show",
    "ip r",
    "ip r s",
    "ip -br a",
    "ip -4 addr show dev eth0",
    "ip route get 10.0.2.4",
    "ip netns exec blue ip route",
    "ss -tlnp",
    "systemctl status nginx --no-pager",
    "systemctl is-active fail2ban",
    "systemctl show -p ActiveState nginx",
    "journalctl -u nginx -n 50 --no-pager",
    "kubectl get pods -A -o wide",
    "kubectl -n kube-system describe pod coredns-1",
    "kubectl logs deploy/api --tail 100",
    "kubectl rollout status deploy/api",
    "az network nic show-effective-route-table -g rg -n nic -o table",
    "az network nsg rule list -g rg --nsg-name nsg -o table",
    "az storage account show -n st -g rg --query networkRuleSet",
    "az vm run-command invoke -g rg -n vm --command-id RunShellScript --scripts 'iptables -L'",
    "aws ec2 describe-instances --region eu-west-1",
    "aws s3 ls s3://bucket",
    "aws sts get-caller-identity",
    "gcloud compute instances list --project p",
    "gcloud compute firewall-rules describe allow-ssh",
    "docker ps -a",
    "docker exec api cat /etc/hosts",
    "docker inspect api | jq '.[0].State'",
    "cat /etc/hosts | grep x",
    "grep -r 'DROP' /etc/iptables/ 2>/dev/null",
    "ps aux | grep -v grep | grep nginx",
    "df -h && free -m",
    "ufw status verbose",
    "curl -sS -o /dev/null -w '%{http_code}\\n' https://example.com",
    "wget -qO- https://example.com/health",
    "psql -h db -U app -c 'SELECT count(*) FROM users'",
    "psql -c \"sElEcT * FrOm t WHERE note = 'drop table x'\"",
    "mysql -uroot -psecret -e 'SHOW PROCESSLIST'",
    "sqlite3 app.db 'select * from jobs'",
    "redis-cli -h cache get session:1",
    "echo $(hostname)",
    'for f in /etc/*.conf; do head -1 "$f"; done',
    "ssh vm-app-01 'sudo iptables -L -n'",
    "ssh -i key.pem azureuser@10.0.0.4 sudo tc qdisc show dev eth0",
    "sudo -u postgres psql -c 'select 1'",
    "sudo LANG=C systemctl status nginx",
    "timeout 5 ping -c 3 10.0.2.4",
    "env LANG=C ls -l",
    "watch -n 1 'ip -s link'",
    "find /etc -name '*.conf' -exec grep -l Listen {} +",
    "sed -n '1,20p' /etc/nginx/nginx.conf",
    "awk '{print $1}' /var/log/nginx/access.log | sort | uniq -c | sort -rn | head",
    "command -v rm",
    "sysctl net.ipv4.ip_forward",
    "diff <(ls a) <(ls b)",
    "while read l; do echo $l; done < hosts.txt",
    "X=1 Y=2",
    "ls # rm -rf /",
    "ls 2>&1 >/dev/null",
    "rm --help",
    "sudo -l",
]

MUTATING = [
    "iptables -A INPUT -s 10.0.0.5 -j DROP",
    "iptables -I f2b-sshd 1 -s 1.2.3.4 -j RETURN",
    "sudo iptables -D INPUT 3",
    "tc qdisc del dev eth0 root",
    "tc qdisc add dev eth0 root netem loss 30%",
    "ip route add 10.1.0.0/16 via 10.0.0.1",
    "ip link set eth0 down",
    "ip link s eth0 up",
    "systemctl restart nginx",
    "sudo systemctl stop fail2ban",
    "kubectl apply -f deploy.yaml",
    "kubectl -n prod scale deploy/api --replicas=0",
    "kubectl rollout restart deploy/api",
    "az network nsg rule update -g rg --nsg-name nsg -n r --access Allow",
    "az storage account update -n st --default-action Allow",
    "aws ec2 modify-instance-attribute --instance-id i-1 --no-source-dest-check",
    "aws s3 cp file s3://bucket/",
    "gcloud compute firewall-rules update allow-ssh --source-ranges 0.0.0.0/0",
    "docker restart api",
    "ufw allow 22/tcp",
    "ufw disable",
    "nft add rule inet filter input tcp dport 22 accept",
    "sed -i 's/a/b/' /etc/ssh/sshd_config",
    "sed -i.bak -e 's/a/b/' file",
    "echo x > /etc/hosts",
    "echo 1 >> /proc/sys/net/ipv4/ip_forward",
    "echo nameserver 1.1.1.1 | sudo tee -a /etc/resolv.conf",
    "sysctl -w net.ipv4.ip_forward=1",
    "kubectl get pods -o yaml > pods.yaml",
    "psql -c 'UPDATE users SET admin = true WHERE id = 1'",
    "psql -c 'insert into t values (1)'",
    "psql -c 'DELETE FROM sessions WHERE expires < now()'",
    "mysql -e 'SET GLOBAL max_connections = 500'",
    "psql -c 'select pg_terminate_backend(42)'",
    "curl -X POST https://api/x -d '{}'",
    "cat > /etc/motd <<EOF\nhi\nEOF",
]

DESTRUCTIVE = [
    "rm -rf /tmp/x",
    "ls; rm -rf /tmp/x",
    "sudo sh -c 'iptables -F'",
    'bash -c "iptables -X f2b-sshd"',
    "iptables -F",
    "iptables -t nat -F POSTROUTING",
    '"iptables" -F',
    "i\\ptables -F",
    "/usr/sbin/iptables -F",
    "nft flush ruleset",
    "ip addr flush dev eth0",
    "kubectl delete pod api-1",
    "kubectl drain node-1 --ignore-daemonsets",
    "kubectl exec -it api -- sh -c 'rm -rf /data'",
    "az group delete -n rg --yes",
    "aws ec2 terminate-instances --instance-ids i-1",
    "aws s3 rm s3://bucket --recursive",
    "gcloud compute instances delete vm-1 --zone z",
    "gcloud compute ssh vm --command 'sudo iptables -F'",
    "docker rm -f api",
    "reboot",
    "sudo shutdown -h now",
    "mkfs.ext4 /dev/sdb1",
    "dd if=/dev/zero of=/dev/sda bs=1M",
    "echo x > /dev/sda",
    "psql -c 'DROP TABLE users'",
    "psql -c 'delete from users'",
    "mysql -e 'TRUNCATE sessions'",
    "psql <<EOF\nDROP TABLE x;\nEOF",
    "psql <<< 'drop database app'",
    "echo $(rm -rf /)",
    "echo `rm -rf /`",
    "cat hosts | xargs rm",
    "xargs -I{} kubectl delete pod {}",
    "find /tmp -name '*.tmp' -delete",
    "find . -name x -exec rm {} \\;",
    "ssh vm <<'EOF'\niptables -F\nEOF",
    "ssh vm bash -s <<'EOF'\nrm -rf /var/lib/x\nEOF",
    "timeout 10 sudo env X=1 nice -n 5 rm -f /etc/x",
    "ufw reset",
    "systemctl reboot",
    "git clean -fdx",
    "redis-cli -h cache FLUSHALL",
    "eval 'rm -rf /'",
    "f() { rm -rf /; }; f",
    "if true; then rm x; fi",
    "(cd / && rm -rf tmp)",
]

UNKNOWN = [
    "mytool --check",
    "./deploy.sh",
    "$CMD -x",
    "kubectl $VERB pods",
    "sudo -i",
    "bash script.sh",
    "curl -s https://example.com/install | bash",
    "psql -f migrate.sql",
    "psql < dump.sql",
    "ssh vm",
    'sh -c "$X"',
    "echo 'unterminated",
    "source ~/.bashrc",
]

# Checking a config or listing a dump's contents changes nothing; restoring or signalling does.
SERVERS_AND_DUMPS = [
    ("nginx -t", "read-only"),
    ("nginx -T -q", "read-only"),
    ("nginx -s reload", "mutating"),
    ("nginx -s stop", "destructive"),
    ("pg_restore --list /backups/shop.dump", "read-only"),
    ("pg_restore -l -f /tmp/toc.txt shop.dump", "mutating"),
    ("pg_restore -d shop shop.dump", "mutating"),
    ("pg_restore --clean -d shop shop.dump", "destructive"),
]

TABLE = (
    SERVERS_AND_DUMPS
    + [(command, "read-only") for command in READ_ONLY]
    + [(command, "mutating") for command in MUTATING]
    + [(command, "destructive") for command in DESTRUCTIVE]
    + [(command, "unknown") for command in UNKNOWN]
)


@pytest.mark.parametrize(("command", "expected"), TABLE)
def test_classification_table(command: str, expected: str) -> None:
    assert classify(command).kind == expected
    assert classify(command, parser_only=True).kind == expected


def test_the_most_severe_part_decides_and_each_part_says_why() -> None:
    result = classify("cat /etc/hosts | grep x && echo ok > /etc/motd; rm -f /tmp/a")
    assert result.kind == "destructive"
    assert [(part.command, part.kind) for part in result.parts] == [
        ("cat /etc/hosts", "read-only"),
        ("grep x", "read-only"),
        ("echo ok", "read-only"),
        ("> /etc/motd", "mutating"),
        ("rm -f /tmp/a", "destructive"),
    ]
    assert "/etc/motd" in result.parts[3].reason


def test_wrappers_are_looked_through_and_named() -> None:
    (part,) = classify("sudo sh -c 'iptables -F'").parts
    assert (part.command, part.kind, part.via) == ("iptables -F", "destructive", ("sudo", "sh"))
    assert "-F" in part.reason
    (remote,) = classify("ssh vm-app-01 'sudo tc qdisc del dev eth0 root'").parts
    assert remote.via == ("ssh", "sudo") and remote.kind == "mutating"


def test_substitutions_run_even_inside_quotes() -> None:
    result = classify('echo "today: $(date) $(rm -rf /srv)"')
    assert result.kind == "destructive"
    assert {part.command for part in result.parts} >= {"date", "rm -rf /srv"}


def test_unknown_commands_say_so() -> None:
    (part,) = classify("frobnicate --all").parts
    assert part.kind == "unknown" and "not in the command knowledge" in part.reason
    (dynamic,) = classify("$TOOL run").parts
    assert "only known at run time" in dynamic.reason
    broken = classify("echo 'unterminated")
    assert any("does not parse" in part.reason for part in broken.parts)


def test_harmless_redirections_are_not_writes() -> None:
    for command in ("ls >/dev/null 2>&1", "ls &>/dev/null", "ls 2>/dev/stderr", "ls 2>&-"):
        assert classify(command).kind == "read-only", command
    for command in ("ls &>2", "ls >&out.txt", "ls 2>errors.log", "ls > $LOG"):
        assert classify(command).kind == "mutating", command
    assert classify("cat < /etc/hosts").kind == "read-only"


def test_deep_nesting_is_unknown_not_a_crash() -> None:
    assert classify("sudo " * 5 + "ls").kind == "read-only"
    assert classify("sudo " * 30 + "ls").kind == "unknown"
    assert classify("eval " * 30 + "ls").kind == "unknown"


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1", "read-only"),
        ("select * from t -- drop table t", "read-only"),
        ("/* DELETE */ SELECT 'truncate t', \"drop\" FROM x", "read-only"),
        ("SeLeCt * FROM accounts FOR UPDATE", "read-only"),
        ("EXPLAIN DELETE FROM t", "read-only"),
        ("EXPLAIN ANALYZE DELETE FROM t", "destructive"),
        ("\\dt+", "read-only"),
        ("BEGIN; SELECT 1; COMMIT;", "read-only"),
        ("select 1; drop table users", "destructive"),
        ("DeLeTe FrOm t", "destructive"),
        ("delete from t where id = 3", "mutating"),
        ("update t set a = 1", "mutating"),
        ("SELECT * INTO backup FROM t", "mutating"),
        ("WITH gone AS (DELETE FROM t WHERE x RETURNING *) SELECT count(*) FROM gone", "mutating"),
        ("select setval('s', 1)", "mutating"),
        ("SET statement_timeout = 5", "read-only"),
        ("SET search_path TO app", "unknown"),
        ("SET GLOBAL read_only = 0", "mutating"),
        ("GRANT ALL ON t TO bob", "mutating"),
        ("PREPARE p AS SELECT 1", "unknown"),
        ("SELECT $$drop table x$$, $tag$ delete $tag$", "read-only"),
    ],
)
def test_sql(sql: str, expected: str) -> None:
    knowledge = load_knowledge()
    assert classify_sql(sql, knowledge.sql)[0] == expected


def test_plain_word_shortcut_only_takes_plain_lines() -> None:
    assert simple_words("iptables -L -n") == ["iptables", "-L", "-n"]
    assert simple_words("LANG=C ls -l") == ["ls", "-l"]
    for line in ("ls | grep x", "echo 'a b'", "echo $HOME", "if true", "ls > x", "ls\nrm x"):
        assert simple_words(line) is None, line


PLAIN_WORDS = st.sampled_from(
    ["iptables", "-L", "-F", "-nvL", "ip", "r", "s", "link", "set", "tc", "qdisc", "show", "del",
     "kubectl", "get", "delete", "-n", "prod", "sudo", "-u", "root", "env", "A=1", "rm", "-rf",
     "/tmp/x", "systemctl", "restart", "status", "ls", "-la", "aws", "ec2", "describe-instances",
     "terminate-instances", "docker", "ps", "timeout", "5", "xargs", "ssh", "vm", "cat", "--",
     "az", "show", "list", "update", "true", "psql", "-c", "if", "time", "for", "x=y", "=z"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(PLAIN_WORDS, min_size=1, max_size=8))
def test_plain_word_shortcut_agrees_with_the_parser(words: list[str]) -> None:
    line = " ".join(words)
    fast, parsed = classify(line), classify(line, parser_only=True)
    assert fast.kind == parsed.kind
    assert [(p.kind, p.reason, p.via) for p in fast.parts] == [
        (p.kind, p.reason, p.via) for p in parsed.parts
    ]


def test_abbreviations_that_could_mean_several_subcommands_count_as_the_worst() -> None:
    assert classify("ip a").kind == "read-only"
    assert classify("ip addr s").kind == "read-only"
    assert classify("ip l s eth0 down").kind == "mutating"
    assert classify("ip r d default").kind == "mutating"


def test_knowledge_can_be_extended_from_a_file(tmp_path: Path) -> None:
    extra = tmp_path / "ours.yaml"
    extra.write_text(
        "commands:\n"
        "  fleetctl:\n"
        "    subcommands:\n"
        "      read-only: [status, list]\n"
        "      mutating: [drain]\n"
        "  rm: mutating\n"
    )
    knowledge = load_knowledge([str(extra)])
    assert classify("fleetctl status web", knowledge).kind == "read-only"
    assert classify("fleetctl drain web-1", knowledge).kind == "mutating"
    assert classify("fleetctl frob", knowledge).kind == "unknown"
    assert classify("rm x", knowledge).kind == "mutating"
    assert classify("fleetctl status web").kind == "unknown"


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("commands:\n  x: harmless\n", "commands.x"),
        ("commands:\n  x: {flags: {read-only: -L}, colour: red}\n", "commands.x.colour"),
        ("commands:\n  x: {wrapper: {skip: -1}}\n", "commands.x.wrapper.skip"),
        ("commands:\n  x: {subcommands: {read-only: [1]}}\n", "commands.x.subcommands.read-only.0"),
        ("commands: [ls]\n", "commands"),
        ("schema_version: 9\n", "schema_version"),
        ("commands:\n  x: {writes: {args: [0]}}\n", "commands.x.writes.args"),
        ("commands:\n  x: {writes: {files: [-o]}}\n", "commands.x.writes.files"),
        ("commands:\n  x: {script: {language: perl}}\n", "commands.x.script.language"),
        ("commands:\n  x: {script: {options: [-e]}}\n", "commands.x.script.language"),
        ("commands:\n  x: {dry_run: [1]}\n", "commands.x.dry_run.0"),
        ("commands:\n  x: {names: yes please}\n", "commands.x.names"),
        ("commands:\n  x: {wrapper: {appends: 1}}\n", "commands.x.wrapper.appends"),
        ("environment: {dangerous: [PAGER]}\n", "environment.dangerous"),
        ("environment: {shell: PAGER, prompt: [1]}\n", "environment.prompt.0"),
        ("shell: {colour: [red]}\n", "shell.colour"),
    ],
)
def test_bad_knowledge_files_name_the_field(tmp_path: Path, content: str, field: str) -> None:
    extra = tmp_path / "bad.yaml"
    extra.write_text(content)
    with pytest.raises(RecordError) as caught:
        load_knowledge([str(extra)])
    assert caught.value.field == field
    assert str(extra) in str(caught.value)


def test_globs() -> None:
    assert glob_match("describe-*", "describe-instances")
    assert not glob_match("describe-*", "xdescribe-instances")
    assert glob_match("*=*", "a=b") and not glob_match("*=*", "ab")
    assert glob_match("/dev/sd*", "/dev/sda1") and glob_match("a*b*c", "aXbYc")
    assert not glob_match("a*b*c", "acb")
