"""How tests/data/lab_investigator_commands.jsonl was made (issue 33), kept to show where
each row comes from: `python tests/data/make_lab_investigator_corpus.py`.

- `recorded ...`: every distinct command the labs' scripted agents ran to read (the `reads`
  rows of agent_commands.jsonl from lab runs), given the lab it names (a tool, a file, an
  address) and the host it runs in (a tool's owner's host, the client for a probe);
- `sre`: what a competent SRE types investigating each lab's fault, written before the
  commands were measured, general tools included (some are refused, and stay so).
Each row: lab, host, source, command. test_lab_investigator_commands.py measures it.
"""

import json
import re
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
labs = {}
for d in sorted((ROOT / "src/agentledger/data/suites/labs").iterdir()):
    spec = yaml.safe_load((d / "lab.yaml").read_text())
    labs[d.name] = spec


def owner_host(lab, tool):
    for o in labs[lab].get("owners", []):
        for t in o.get("tools", []):
            if t["name"] == tool:
                return o["host"]


def default_host(lab):
    return labs[lab]["fault"]["steps"][0]["host"]


RULES = [  # recorded command -> lab, by what it names
    (r"jailctl|jail/banned|10\.0\.0\.", "lab_f2b_chain"),
    (r"routectl|routed/|10\.0\.8\.", "lab_route_blackhole"),
    (r"cfgctl|allowed\.list|10\.0\.4\.", "lab_allowlist_set"),
    (r"poolctl|pool/|10\.0\.1[01]\.|ss -Htn", "lab_conntrack_limit"),
    (r"resolvctl|dns\.list|resolv/", "lab_dns_servers_list"),
    (r"hardening/sysctl|sysctl |10\.0\.2\.", "lab_hardening_sysctl"),
    (r"hardenctl|webapp|sshd|10\.0\.3\.", "lab_hardening_config"),
    (r"netcfg|links\.conf|ip link|10\.0\.6\.", "lab_mtu_blackhole"),
    (r"shaperctl|shaper/|10\.0\.1\.1/", "lab_tc_shaping"),
    (r"10\.0\.13\.|ip route$", "lab_two_faults"),
]
rows = []
seen = set()
for line in (ROOT / "tests/data/agent_commands.jsonl").read_text().splitlines():
    row = json.loads(line)
    if not row["source"].startswith("lab") or not row["reads"]:
        continue
    cmd = row["command"]
    lab = next((name for pat, name in RULES if re.search(pat, cmd)), "lab_f2b_chain")
    tool = cmd.split()[0]
    host = owner_host(lab, tool) or ("client" if cmd.startswith("curl") else default_host(lab))
    key = (lab, cmd)
    if key in seen:
        continue
    seen.add(key)
    rows.append(
        {
            "lab": lab,
            "host": host,
            "source": row["source"].replace("lab ", "recorded "),
            "command": cmd,
        }
    )
# What a competent SRE types investigating each lab's fault (written for this corpus).
SRE = {
    "lab_f2b_chain": [
        ("web", c)
        for c in [
            "iptables -nvL",
            "iptables -nvL f2b-http --line-numbers",
            "iptables -S f2b-http",
            "iptables-save -t filter",
            "jailctl status",
            "ip a s",
            "ss -tlnp",
            "ss -s",
            "ps aux | grep -i jail",
            "cat jail/banned",
            "ls -la",
            "tail -n 50 log/http.log",
            "grep -c 404 log/http.log",
            "conntrack -L -p tcp --dport 80",
        ]
    ]
    + [
        ("client", c)
        for c in [
            "curl -sv -m 2 http://10.0.0.1/",
            "ping -c 2 -W 1 10.0.0.1",
            "ip r g 10.0.0.1",
            "nc -zv -w 2 10.0.0.1 80",
        ]
    ],
    "lab_route_blackhole": [
        ("router", c)
        for c in [
            "ip r",
            "ip route show proto 99",
            "ip r g 10.0.8.10",
            "ip -d route show table all",
            "ip rule list",
            "routectl show",
            "iptables -nvL FORWARD",
            "sysctl net.ipv4.ip_forward",
            "ip -s link",
            "ip neigh show",
            "nft list ruleset",
            "cat routed/static.conf",
            "ps -ef | grep -v grep | grep routed",
        ]
    ]
    + [
        ("client", c)
        for c in [
            "traceroute -n -w 1 -q 1 10.0.8.10",
            "tracepath -n 10.0.8.10",
            "ping -c 1 -W 1 10.0.8.11",
            "curl -s -m 2 -o /dev/null -w '%{http_code}\\n' http://10.0.8.10/",
        ]
    ]
    + [("web", c) for c in ["iptables -S INPUT", "ss -ltn"]],
    "lab_allowlist_set": [
        ("web", c)
        for c in [
            "nft list ruleset",
            "nft list set inet edge allowed",
            "nft -a list chain inet edge input",
            "nft list tables",
            "cfgctl get allowed",
            "cat cfgmgr/allowed.list",
            "ss -ltn",
            "iptables -S",
            "ip a s eth0",
        ]
    ]
    + [("stranger", c) for c in ["curl -s -m 2 -o /dev/null -w '%{http_code}' http://10.0.4.1/"]],
    "lab_conntrack_limit": [
        ("web", c)
        for c in [
            "iptables -S INPUT",
            "iptables -nvL INPUT",
            "ss -Htn state established | wc -l",
            "ss -tn",
            "conntrack -C",
            "conntrack -S",
            "cat /proc/sys/net/netfilter/nf_conntrack_max",
            "sysctl net.netfilter.nf_conntrack_count",
            "ss -tan | awk '{print $1}' | sort | uniq -c",
        ]
    ]
    + [("client", c) for c in ["poolctl status", "cat pool/size", "ss -Htn | wc -l", "ps aux"]],
    "lab_dns_servers_list": [
        ("client", c)
        for c in [
            "cat resolv/servers",
            "resolvctl show",
            "cat cfgmgr/dns.list",
            "dig @10.0.15.53 app.corp +short",
            "dig +short @10.0.15.54 status.vendor.example",
            "host app.corp 10.0.15.53",
            "nslookup app.corp 10.0.15.53",
            "python3 resolve.py app.corp",
            "cat resolve.py",
            "diff cfgmgr/dns.list resolv/servers",
            "ls -l resolv/",
        ]
    ],
    "lab_hardening_config": [
        ("web", c)
        for c in [
            "hardenctl show",
            "cat etc/webapp.conf",
            "grep -n allow_from etc/webapp.conf hardening/webapp.conf",
            "diff -u hardening/webapp.conf etc/webapp.conf",
            "stat etc/webapp.conf",
            "ls -la etc hardening",
            "ss -ltnp",
            "iptables -S",
            "tail -n 20 log/webapp.log",
            "head -n 5 hardening/*.conf",
        ]
    ],
    "lab_hardening_sysctl": [
        ("router", c)
        for c in [
            "sysctl net.ipv4.ip_forward",
            "sysctl -a 2>/dev/null | grep -E 'forward|redirect'",
            "cat /proc/sys/net/ipv4/ip_forward",
            "hardenctl show",
            "cat hardening/sysctl.conf",
            "iptables -nvL FORWARD",
            "nft list ruleset",
            "ip r",
            "ip -4 a s",
        ]
    ]
    + [("client", c) for c in ["traceroute -n -w 1 -q 1 10.0.2.10", "ping -c 1 -W 1 10.0.1.1"]],
    "lab_mtu_blackhole": [
        ("router", c)
        for c in [
            "ip link show",
            "ip -d l sh eth1",
            "ip a s",
            "netcfg show",
            "cat netcfg/links.conf",
            "ip r",
            "iptables -S",
            "nft list ruleset",
            "sysctl net.ipv4.ip_no_pmtu_disc",
            "tc qdisc show",
        ]
    ]
    + [
        ("client", c)
        for c in [
            "ping -M do -s 1472 -c 2 -W 1 10.0.6.10",
            "ping -M do -s 1372 -c 2 -W 1 10.0.6.10",
            "tracepath -n 10.0.6.10",
            "ip route get 10.0.6.10",
            "curl -s -m 3 -o /dev/null -w '%{size_download} %{http_code}\\n' http://10.0.6.10/export.bin",
        ]
    ],
    "lab_tc_shaping": [
        ("web", c)
        for c in [
            "tc -s qdisc show dev eth0",
            "tc qdisc show",
            "tc -s class show dev eth0",
            "tc filter show dev eth0",
            "shaperctl show",
            "cat shaper/rate",
            "iptables -nvL INPUT",
            "ip -s link show eth0",
            "ss -ti",
            "lsb_release -a",
            "uname -r",
        ]
    ]
    + [
        ("client", c)
        for c in ["curl -s -m 5 -o /dev/null -w '%{speed_download}\\n' http://10.0.1.1/report.bin"]
    ],
    "lab_two_faults": [
        ("web", c)
        for c in [
            "jailctl status",
            "iptables -S",
            "iptables -L -n --line-numbers",
            "ip a",
            "ss -ltn",
        ]
    ]
    + [("router", c) for c in ["routectl show", "ip r s", "ip r g 10.0.13.10", "ip n", "ip ru"]]
    + [("client", c) for c in ["ping -c 1 -W 1 10.0.13.10", "curl -sS -m 2 http://10.0.13.10/"]],
}
# More of what a person types on a box, written before measuring them (general tools).
SRE["lab_route_blackhole"] += [
    ("router", c)
    for c in [
        "netstat -rn",
        "route -n",
        "arp -an",
        "ip -j route | jq '.[].dst'",
        "dmesg | tail -n 20",
        "mtr -rwc 3 10.0.8.10",
        "tcpdump -ni eth1 -c 20 host 10.0.8.10",
        "ip6tables -S",
        "iptables -t raw -S",
        "iptables -t nat -nvL",
        "nstat -az",
        "ethtool eth1",
        "cat /proc/net/route",
        "lsof -nP -i :80",
        "ip -s -s link show eth1",
    ]
]
SRE["lab_f2b_chain"] += [
    ("web", c)
    for c in [
        "free -m",
        "df -h",
        "uptime",
        "top -bn1 | head -n 15",
        "ps -eo pid,comm,args --forest",
        "lsof -nP -iTCP -sTCP:LISTEN",
        "cat /proc/net/nf_conntrack | head",
        "netstat -tlnp",
        "journalctl -n 50 --no-pager",
        "find . -maxdepth 2 -type f -newer jail/banned",
        "grep -rn 10.0.0.2 .",
        "wc -l jail/banned",
        "watch -n 1 -g iptables -S f2b-http",
    ]
]
for lab, items in SRE.items():
    for host, cmd in items:
        if (lab, cmd) in seen:
            continue
        seen.add((lab, cmd))
        rows.append({"lab": lab, "host": host, "source": "sre", "command": cmd})
out = ROOT / "tests/data/lab_investigator_commands.jsonl"
out.write_text("".join(json.dumps(r) + "\n" for r in rows))
print(len(rows), Counter(r["source"] for r in rows), Counter(r["lab"] for r in rows))
