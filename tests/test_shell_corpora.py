"""The classifier against commands written to fool it, and commands investigators really run.

ATTACKS are commands that run a program, write a file or change the system through a generic
cause the classifier models as data: options that take a program or a script, options that
name an output file (attached and separate), environment variables that make a tool run a
program, shell constructs that evaluate text again, aliases, the clock. None may be read-only.
INVESTIGATIONS are read-only commands of the kind ops agents run; all must be read-only, or
investigate mode is useless. The severity tables say what destroys and what only changes.

The end-to-end test runs a sample of the attacks through `agentledger exec` in investigate
mode with the sandbox on, and checks that no file in the working directory changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from agentledger.runner.shell_gate.sandbox import find_bwrap
from agentledger.shell.classifier import classify


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLEDGER_CACHE_DIR", str(tmp_path / "cache"))


ATTACKS = [
    # options that take a program or a script: env, find
    "env --split-string='rm -f victim.txt'",
    "env -S'touch pwned'",
    "env -S \"sh -c 'echo x > victim.txt'\"",
    "env -i -S 'rm victim.txt'",
    'env -u HOME --split-string="truncate -s0 victim.txt"',
    "find . -maxdepth 1 -name victim.txt -execdir rm {} +",
    "find . -name '*.txt' -ok rm {} ';'",
    "find . -type f -exec sh -c 'echo > \"$1\"' _ {} \\;",
    "find . -fprint listing.txt",
    "find . -fprintf out.txt '%p\\n'",
    "find . -fls out.txt",
    "find /etc -name hosts -fprint0 out.bin",
    # sed: the e and w commands, the e and w flags of s, in-place, script files
    "sed -n '1e touch pwned' victim.txt",
    "sed '1!G;h;$e rm victim.txt' victim.txt",
    "sed 's/.*/rm victim.txt/e' victim.txt",
    "sed -n 's/a/b/w out.txt' victim.txt",
    "sed -n '/x/w out.txt' victim.txt",
    "sed -e 'W out.txt' victim.txt",
    "sed --expression='1 e id > out.txt' victim.txt",
    "sed -ne '$w copy.txt' victim.txt",
    "sed -f script.sed victim.txt",
    "sed -n -e p -e 'w out.txt' victim.txt",
    "sed -E 's/(.*)/\\1/gw out.txt' victim.txt",
    'sed "$(cat prog.sed)" victim.txt',
    "sed -n '2{p;e date > out.txt\n}' victim.txt",
    # awk: system(), pipes to and from commands, print > file, gawk extensions
    "awk 'BEGIN { system ( \"rm victim.txt\" ) }'",
    "awk 'BEGIN{system(\"touch pwned\")}'",
    "awk '{ print | \"sh\" }' victim.txt",
    "awk 'BEGIN { \"rm victim.txt\" | getline }'",
    "awk '{print > \"out.txt\"}' victim.txt",
    'awk \'{ printf "%s\\n", $0 >> "out.txt" }\' victim.txt',
    "awk 'BEGIN { cmd = \"rm victim.txt\"; cmd | getline x }'",
    'gawk \'BEGIN { print "id" |& "sh" }\'',
    "awk -f prog.awk victim.txt",
    "gawk '@load \"filefuncs\"; BEGIN { }'",
    "mawk 'END{print NR>\"out.txt\"}' victim.txt",
    "gawk -e 'BEGIN{system(\"id\")}'",
    "awk 'NR==1{f=\"out.txt\"; print > f}' victim.txt",
    "gawk --profile=out.txt 'BEGIN{}'",
    "gawk -lfilefuncs 'BEGIN { }'",
    "awk -fprog.awk victim.txt",
    "sed -fprog.sed victim.txt",
    "rg --pre 'rm victim.txt' needle",
    "rg --pre=./evil.sh needle .",
    "awk -F: '$3 > 0 { print $1 | \"sort > out.txt\" }' /etc/passwd",
    'awk \'BEGIN { f = "system"; @f("rm victim.txt") }\'',
    # git: -c settings that run programs, pagers, output files, upload-pack
    "git -c core.fsmonitor='rm victim.txt' status",
    "git -c core.pager='sh -c \"rm victim.txt\"' log -1",
    "git -c diff.external=./evil.sh diff",
    "git -c alias.st='!rm victim.txt' st",
    "git -c core.sshCommand='touch pwned' ls-remote origin",
    "git -c filter.lfs.clean='rm victim.txt' status",
    "git --config-env=core.pager=EVIL log",
    "git grep -Orm -e needle",
    "git grep --open-files-in-pager='rm victim.txt' needle",
    "git log --output=out.txt",
    "git diff --output out.txt",
    "git show --output=out.txt HEAD",
    "git -p log",
    "git --paginate status",
    "git ls-remote --upload-pack='touch pwned' .",
    "git -c core.hooksPath=hooks status",
    # pagers, and environment variables that make a tool run a program
    "LESSOPEN='|rm victim.txt %s' less victim.txt",
    'LESSOPEN="||touch pwned" less victim.txt',
    "less '+!rm victim.txt' victim.txt",
    "less -o out.txt victim.txt",
    "less --log-file=out.txt victim.txt",
    "man -P 'rm victim.txt' ls",
    "man --pager='sh -c \"touch pwned\"' ls",
    "MANPAGER='rm victim.txt' man ls",
    "PAGER='touch pwned' man ls",
    "GIT_PAGER='rm victim.txt' git -p log",
    "export PAGER='rm victim.txt'; git -p log",
    "env PAGER='rm victim.txt' git log",
    "GIT_EXTERNAL_DIFF='rm victim.txt' git diff",
    "GIT_SSH_COMMAND='touch pwned' git ls-remote origin",
    "GIT_SSH=./evil git ls-remote origin",
    "LD_PRELOAD=./evil.so ls",
    "BASH_ENV=./evil.sh bash -c true",
    "ENV=./evil.sh sh -c :",
    "PS4='$(rm victim.txt)'; set -x; true",
    "export PS4='`touch pwned`'; set -x; ls",
    "sudo LD_PRELOAD=/tmp/x.so id",
    "declare -x PAGER='rm victim.txt'; git -p log",
    "KUBECTL_EXTERNAL_DIFF='rm victim.txt' kubectl diff -f x.yaml",
    "SYSTEMD_PAGER='rm victim.txt' systemctl status sshd",
    "env 'BASH_FUNC_cat%%=() { rm victim.txt; }' bash -c 'cat x'",
    "TF_CLI_ARGS_plan='-out=plan.bin' terraform plan",
    "PYTHONSTARTUP=./x.py python3 --version",
    "GIT_TRACE=out.txt git status",
    "SSL_KEYLOGFILE=out.txt curl https://example.com",
    "CURL_HOME=. curl https://example.com",
    "TAR_OPTIONS=--to-command=sh tar -tf a.tar",
    "PATH=.:$PATH ls",
    "EDITOR='rm victim.txt'; export EDITOR; git commit",
    # shell constructs that evaluate text again
    "v='b[$(rm victim.txt)]'; echo $((v))",
    "v='b[$(touch pwned)]'; ((v++))",
    "v='z[$(rm victim.txt)]'; [[ $v -gt 1 ]]",
    "read -r n < victim.txt; let 'n+1'",
    "echo $(( $(cat victim.txt) + 1 ))",
    'arr=(1 2); echo "${arr[$i]}"',
    'echo "${x:$off:2}"',
    "p='$(rm victim.txt)'; echo \"${p@P}\"",
    "ref='a[$(touch pwned)]'; echo \"${!ref}\"",
    'eval "$(cat cmds.txt)"',
    "eval 'rm victim.txt'",
    "source ./cmds.sh",
    ". ./cmds.sh",
    "printf -v 'a[$(rm victim.txt)]' '%s' x",
    "declare -n ref=victim; echo $ref",
    "typeset -i n='a[$(touch pwned)]'",
    "trap 'rm victim.txt' EXIT",
    'trap "touch pwned" DEBUG; true',
    "mapfile -C 'rm victim.txt' -c 1 lines < victim.txt",
    "readarray -C 'touch pwned' x < victim.txt",
    "complete -C 'rm victim.txt' ls",
    "compgen -C 'touch pwned' x",
    "hash -p /bin/rm cat; cat victim.txt",
    "alias ls='rm -f victim.txt'; ls",
    "alias cat='rm -f'\ncat victim.txt",
    "enable -f ./evil.so evil",
    "function command_not_found_handle { touch pwned; }",
    "command_not_found_handler() { :; }",
    "read -r PAGER < victim.txt; git -p log",
    "unset 'a[$(rm victim.txt)]'",
    "[[ -v 'a[$(rm victim.txt)]' ]]",
    "for ((i=x; i<2; i++)); do :; done",
    "x=$(cat victim.txt); echo $((x * 2))",
    "n=5; n=$(cat victim.txt); echo $((n))",
    "while read n; do echo $((n+1)); done < victim.txt",
    "echo $[ y + 1 ]",
    # the clock
    "date -s '2001-01-01'",
    "date --set=@0",
    "date -s@1000",
    "date --set '12:00'",
    "hwclock --set --date '2001-01-01'",
    "hwclock -w",
    "timedatectl set-time '2001-01-01 00:00'",
    "timedatectl set-ntp false",
    # options and arguments that name an output file, attached and separate
    "sort -oout.txt victim.txt",
    "sort -o out.txt victim.txt",
    "sort --output=out.txt victim.txt",
    "sort -ru -o victim.txt victim.txt",
    "sort -no out.txt victim.txt",
    "sort --compress-program=sh victim.txt",
    "uniq victim.txt out.txt",
    "uniq -c victim.txt out.txt",
    "xxd -r hex.txt out.bin",
    "xxd victim.txt out.hex",
    "xxd -r -p hex.txt victim.txt",
    "/usr/bin/time -o out.txt ls",
    "/usr/bin/time --output=out.txt ls",
    "command time -o out.txt true",
    "strace -o out.txt ls",
    "strace -oout.txt true",
    "strace --output=out.txt true",
    "ltrace -o out.txt ls",
    "openssl rand -out out.bin 16",
    "openssl x509 -in cert.pem -out out.pem",
    "openssl req -new -keyout key.pem -out req.pem",
    "openssl s_client -connect example.com:443 -sess_out sess.bin",
    "openssl s_client -connect example.com:443 -keylogfile keys.txt",
    "openssl dgst -sha256 -out digest.txt victim.txt",
    "openssl version -engine ./evil.so",
    "curl -o out.txt https://example.com",
    "curl -sSLo out.txt https://example.com",
    "curl --output out.txt https://example.com",
    "curl --trace out.txt https://example.com",
    "curl --trace-ascii=out.txt https://example.com",
    "curl --stderr out.txt https://example.com",
    "curl --libcurl out.c https://example.com",
    "curl -D headers.txt https://example.com",
    "curl --dump-header headers.txt https://example.com",
    "curl -c jar.txt https://example.com",
    "curl --cookie-jar jar.txt https://example.com",
    "curl -sDheaders.txt https://example.com",
    "curl -O https://example.com/victim.txt",
    "curl -w '%output{out.txt}%{http_code}' https://example.com",
    "curl -K config.txt https://example.com",
    "curl --etag-save etag.txt https://example.com",
    "wget -q --spider -o log.txt https://example.com",
    "wget -O out.html https://example.com",
    "tee out.txt < victim.txt",
    "echo x | tee -a victim.txt",
    "dd if=victim.txt of=out.txt",
    "dd of=victim.txt",
    "tcpdump -w cap.pcap -c 1",
    "tcpdump -z rm -w x.pcap -c 1",
    "ss -K dst 10.0.0.1",
    "ss -D out.bin",
    "tree -o out.txt .",
    "shuf -o out.txt victim.txt",
    "iconv -f utf8 -t ascii -o out.txt victim.txt",
    "file -C -m magic",
    "sar -o out.bin 1 1",
    "psql -o out.txt -c 'select 1'",
    "psql -L log.txt -c 'select 1'",
    "mysql --tee=out.txt -e 'select 1'",
    "mysql --pager='rm victim.txt' -e 'select 1'",
    "sqlite3 -cmd '.shell rm victim.txt' app.db 'select 1'",
    "sqlite3 -cmd '.system touch pwned' app.db .tables",
    "sqlite3 -cmd '.output out.txt' app.db 'select 1'",
    "sqlite3 app.db '.once out.txt'",
    "sqlite3 -init evil.sql app.db",
    "sqlite3 app.db \"select writefile('out.txt', 'x')\"",
    "pg_dump -f out.sql app",
    "mysqldump -r out.sql app",
    "psql -c '\\copy orders to /tmp/orders.csv csv'",
    "psql -c 'select 1 \\g out.txt'",
    "psql -c '\\! rm victim.txt'",
    "psql --command='\\o out.txt' -c 'select 1'",
    # xargs, tar, rsync, ssh, vim
    "ls | xargs rm",
    "echo victim.txt | xargs -I{} sh -c 'rm {}'",
    "find . -name '*.txt' | xargs sort",
    "printf '%s\\n' -oout.txt | xargs sort victim.txt",
    "tar --to-command='rm victim.txt' -xf a.tar",
    "tar -tf a.tar --checkpoint=1 --checkpoint-action=exec='rm victim.txt'",
    "tar -I 'sh -c \"touch pwned\"' -tf a.tar",
    "tar --use-compress-program='rm victim.txt' -tf a.tar",
    "rsync -n -e 'sh -c \"rm victim.txt\"' a b",
    "rsync --dry-run --rsh='touch pwned' a: b",
    "rsync -n --rsync-path='rm victim.txt' a host:b",
    "ssh -o ProxyCommand='rm victim.txt' host true",
    "ssh -oProxyCommand='touch pwned' host uptime",
    "ssh -o 'LocalCommand=rm victim.txt' -o PermitLocalCommand=yes host uptime",
    "ssh -F ./evil_config host uptime",
    "ssh -E log.txt host uptime",
    "vim -c ':!rm victim.txt' -c q",
    "vim --cmd 'call system(\"rm victim.txt\")'",
    # words only known at run time where an option could write or run
    "sort $OPTS victim.txt",
    'curl "$ARGS" https://example.com',
    "find $DIR -name x",
    "sort *",
    "git log $ARGS",
    "tcpdump $FLAGS",
    # interpreters, database shells and cloud CLIs
    "python3 -c 'import os; os.remove(\"victim.txt\")'",
    "perl -e 'unlink \"victim.txt\"'",
    'python3 -V -c \'open("victim.txt","w")\'',
    "mongosh --eval 'db.users.deleteMany({})'",
    "mongosh --eval 'db.users.aggregate([{ $out: \"copy\" }])'",
    'mongosh --eval \'require("child_process").execSync("rm victim.txt")\'',
    'mongosh --eval \'db.users.find()["constructor"]("x")()\'',
    "mongosh app ./evil.js",
    "mongosh",
    "redis-cli CONFIG SET dir /tmp",
    "redis-cli --rdb out.rdb",
    "redis-cli -x set k",
    "redis-cli --eval script.lua",
    "redis-cli CLIENT KILL ID 5",
    "kubectl kustomize --enable-alpha-plugins .",
    "helm template x ./chart --post-renderer ./evil.sh",
    "etcdctl watch k -- sh -c 'rm victim.txt'",
    "gh pr view 1 --web",
    "gh api -X POST repos/o/r/issues -f title=x",
    "gh api repos/o/r/issues --field title=x",
    "aws s3api get-object --bucket b --key k out.bin",
    "az storage blob download -c c -n b -f out.bin",
    "gcloud container clusters get-credentials c",
    "az aks get-credentials -g rg -n c",
    "terraform plan -out=plan.bin",
    "terraform plan -out plan.bin",
    "terraform fmt",
    "terraform init",
    "docker login -u x",
]

INVESTIGATIONS = [
    "kubectl get pods -n payments -o wide",
    "kubectl get deploy,sts,ds -A",
    "kubectl describe node ip-10-0-3-17",
    "kubectl logs -n payments deploy/api --since=1h --tail=200",
    "kubectl logs api-7d9f -c sidecar --previous",
    "kubectl top pods -n payments --sort-by=memory",
    "kubectl explain deployment.spec.strategy",
    "kubectl api-resources --namespaced=true",
    "kubectl auth can-i delete pods -n payments",
    "kubectl auth whoami",
    "kubectl diff -f manifests/",
    "kubectl get events -n payments --sort-by=.lastTimestamp",
    "kubectl get pod api-1 -o jsonpath='{.status.containerStatuses[*].restartCount}'",
    "kubectl rollout status deploy/api -n payments",
    "kubectl rollout history deploy/api",
    "kubectl config get-contexts",
    "kubectl config current-context",
    "kubectl version --client",
    "kubectl apply -f deploy.yaml --dry-run=server",
    "kubectl delete pod api-1 --dry-run=client",
    "kubectl scale deploy/api --replicas=3 --dry-run=server -o yaml",
    "kubectl get secret db -o jsonpath='{.data}' | jq 'keys'",
    "helm list -A",
    "helm status api -n payments",
    "helm history api -n payments",
    "helm get values api -n payments",
    "helm get manifest api",
    "helm show values bitnami/redis",
    "helm template api ./chart -f values.yaml",
    "helm lint ./chart",
    "helm repo list",
    "helm upgrade api ./chart --dry-run",
    "helm dependency list ./chart",
    "docker ps -a --format '{{.Names}} {{.Status}}'",
    "docker logs --tail 100 api",
    "docker inspect api --format '{{.State.Health.Status}}'",
    "docker images",
    "docker stats --no-stream",
    "docker system df",
    "docker network ls",
    "docker network inspect bridge",
    "docker volume ls",
    "docker image history nginx:1.25",
    "docker compose ps",
    "docker compose logs --tail 50 web",
    "docker compose config",
    "podman ps --all",
    "podman pod ps",
    "podman image ls",
    "aws ec2 describe-instances --filters Name=tag:env,Values=prod",
    "aws ec2 describe-security-groups --group-ids sg-0abc",
    "aws ec2 run-instances --image-id ami-1 --dry-run",
    "aws s3 ls s3://logs-bucket/2026/",
    "aws s3 sync ./site s3://bucket --dryrun",
    "aws s3api list-objects-v2 --bucket logs-bucket --max-items 10",
    "aws s3api get-bucket-policy --bucket logs-bucket",
    "aws iam get-role --role-name app",
    "aws iam list-attached-role-policies --role-name app",
    "aws sts get-caller-identity",
    "aws logs tail /aws/lambda/api --since 1h",
    "aws logs filter-log-events --log-group-name /app --filter-pattern ERROR",
    "aws rds describe-db-instances --db-instance-identifier main",
    "aws eks describe-cluster --name prod",
    "aws cloudwatch get-metric-statistics --namespace AWS/EC2 --metric-name CPUUtilization"
    " --period 300 --statistics Average --start-time 2026-01-01T00:00:00Z",
    "aws configure list",
    "az account show",
    "az vm list -g rg-prod -o table",
    "az network nsg rule list -g rg-prod --nsg-name nsg-web -o table",
    "az network vnet show -g rg-prod -n vnet",
    "az aks show -g rg -n aks-prod",
    "az monitor activity-log list --resource-group rg-prod --offset 1h",
    "az keyvault secret list --vault-name kv-prod",
    "az deployment group what-if -g rg -f main.bicep",
    "az storage account list -o table",
    "gcloud compute instances list --project p",
    "gcloud compute firewall-rules list --format json",
    "gcloud container clusters describe prod --region europe-west1",
    "gcloud logging read 'severity>=ERROR' --limit 20",
    "gcloud storage ls gs://logs-bucket",
    "gcloud storage cat gs://logs-bucket/app.log",
    "gcloud config list",
    "gcloud config get-value project",
    "gcloud iam service-accounts list",
    "gcloud sql instances describe main",
    "gh pr list --state open",
    "gh pr view 42 --comments",
    "gh pr diff 42",
    "gh pr checks 42",
    "gh issue list -L 20 --label bug",
    "gh issue view 7",
    "gh run list --workflow ci.yml",
    "gh run view 12345 --log-failed",
    "gh repo view owner/repo",
    "gh release list",
    "gh api repos/owner/repo/actions/runs",
    "gh auth status",
    "gh search issues 'timeout in:title'",
    "glab mr list",
    "glab mr view 12",
    "glab issue list",
    "glab ci list",
    "glab ci view",
    "glab repo view",
    "glab api projects/1/pipelines",
    "terraform plan",
    "terraform plan -var-file=prod.tfvars -refresh=false",
    "terraform show -json plan.bin",
    "terraform validate",
    "terraform output -raw db_host",
    "terraform state list",
    "terraform state show aws_instance.web",
    "terraform providers",
    "terraform version",
    "terraform workspace list",
    "terraform fmt -check",
    "vault status",
    "vault kv get secret/app",
    "vault kv list secret/",
    "vault kv metadata get secret/app",
    "vault read auth/token/lookup-self",
    "vault token lookup",
    "vault secrets list",
    "vault auth list",
    "vault policy read app",
    "consul members",
    "consul catalog services",
    "consul kv get -recurse app/",
    "consul info",
    "consul operator raft list-peers",
    "etcdctl get /registry --prefix --keys-only",
    "etcdctl endpoint health",
    "etcdctl member list -w table",
    "etcdctl endpoint status --write-out=table",
    "etcdctl alarm list",
    "systemctl status nginx --no-pager",
    "systemctl is-active postgresql",
    "systemctl list-units --failed",
    "systemctl show -p MainPID sshd",
    "systemctl cat kubelet",
    "systemctl list-timers --all",
    "journalctl -u kubelet --since '10 min ago' --no-pager",
    "journalctl -k -p err -b",
    "journalctl -xe --no-pager -n 100",
    "journalctl --disk-usage",
    "psql -h db -U app -c 'select count(*) from orders'",
    "psql -c '\\dt+'",
    "psql -c '\\copy orders to stdout csv'",
    "rg -n --hidden 'Listen' /etc/nginx",
    "psql -At -c 'select pid, state from pg_stat_activity'",
    "mysql -h db -e 'SHOW ENGINE INNODB STATUS'",
    "mysql -e 'select * from information_schema.processlist'",
    "redis-cli INFO memory",
    "redis-cli -h cache --scan --pattern 'session:*'",
    "redis-cli CONFIG GET maxmemory",
    "redis-cli SLOWLOG GET 10",
    "redis-cli CLIENT LIST",
    "redis-cli TTL session:42",
    "redis-cli --bigkeys",
    "mongosh --quiet --eval 'db.orders.countDocuments({status: \"failed\"})'",
    "mongosh --eval 'printjson(db.serverStatus().connections)'",
    "mongosh --eval 'rs.status()'",
    "mongosh --eval 'db.orders.find({}).sort({_id: -1}).limit(5).toArray()'",
    "mongosh --eval 'db.getSiblingDB(\"admin\").currentOp()'",
    "git status",
    "git log --oneline -20",
    "git log -p -1 -- src/app.py",
    "git log -c HEAD",
    "git diff HEAD~1 --stat",
    "git show HEAD:config/app.yaml",
    "git blame -L 10,20 src/app.py",
    "git remote -v",
    "git remote show origin",
    "git stash list",
    "git branch -a",
    "git branch --show-current",
    "git tag -l 'v1.*'",
    "git config --get remote.origin.url",
    "git config --list --show-origin",
    "git clean -n -d",
    "git push --dry-run origin main",
    "git fetch --dry-run",
    "git rev-parse HEAD",
    "git ls-files | wc -l",
    "git grep -n TODO",
    "git -c color.ui=never log -1",
    "git --no-pager log -5",
    "git describe --tags",
    "git reflog -10",
    "python3 --version",
    "python3 -V",
    "node --version",
    "cat /etc/os-release",
    "tail -n 100 /var/log/syslog",
    "grep -rn 'Listen' /etc/nginx/",
    "ls -la /var/lib/postgresql",
    "df -h /",
    "du -sh /var/log/*",
    "free -m",
    "uptime",
    "ps aux --sort=-%cpu | head",
    "top -b -n 1 | head -20",
    "ss -tlnp",
    "netstat -rn",
    "ip -br addr",
    "ip route get 8.8.8.8",
    "dig +short api.example.com",
    "curl -sS -o /dev/null -w '%{http_code}' https://example.com/health",
    "curl -sSL https://example.com/status | jq .",
    "curl -I https://example.com",
    "openssl s_client -connect example.com:443 -servername example.com </dev/null",
    "openssl x509 -in /etc/ssl/certs/server.pem -noout -dates",
    "sed -n '1,40p' /etc/nginx/nginx.conf",
    "sed -n '/server {/,/}/p' /etc/nginx/sites-enabled/default",
    "sed 's/#.*//' /etc/ssh/sshd_config | grep -v '^$'",
    "sed -e 's/a/b/g' -e '/^$/d' file.txt",
    "awk '{print $1}' access.log | sort | uniq -c | sort -rn | head",
    "awk -F: '$3 >= 1000 {print $1}' /etc/passwd",
    "awk '{ if ($9 >= 500) print $7 }' access.log",
    "awk 'BEGIN { x = 10 / 2; print x }'",
    "awk '{ sum += $2 } END { printf \"%.2f\\n\", sum / NR }' data.txt",
    "awk '$5 ~ /ERROR/ { print $0 }' app.log",
    "sort -u users.txt",
    "sort -t, -k2 -n data.csv",
    "uniq -c sorted.txt",
    "xxd -l 64 /bin/ls",
    "find /var/log -name '*.log' -mtime -1",
    "find / -xdev -type f -size +500M",
    "lsof -i :443",
    "dmesg -T | tail",
    "strace -c -f true",
    "timeout 5 tcpdump -i eth0 -c 10 port 53",
    "stat /etc/passwd",
    "wc -l /var/log/nginx/access.log",
    "head -c 200 /dev/urandom | xxd",
    "date -u",
    "date -d '1 hour ago' +%s",
    "for i in 1 2 3; do echo $((i * 2)); done",
    "n=10; echo $((n + 1))",
    "for ((i=0; i<3; i++)); do echo $i; done",
    "[[ $# -eq 0 ]] && echo none",
    "PAGER=cat git log -3",
    "GIT_PAGER=cat git show --stat",
    "SYSTEMD_PAGER= systemctl status nginx",
    "env LC_ALL=C sort names.txt",
    "less /var/log/syslog",
    "man ls",
    "tar -tzf backup.tar.gz",
    "rsync -n -av src/ dst/",
    "rsync --dry-run --delete -a src/ dst/",
    "dd if=/dev/sda bs=512 count=1 | xxd",
    "tee /dev/null < /etc/hosts",
    "sqlite3 app.db 'select count(*) from jobs'",
    "sqlite3 -cmd '.headers on' app.db 'select * from jobs limit 5'",
    "ssh bastion 'uptime'",
    "ssh -o StrictHostKeyChecking=no web-1 'journalctl -u nginx -n 20'",
    "hwclock --show",
    "timedatectl status",
    "chronyc tracking",
    "apt-get -s upgrade",
]

DESTRUCTIVE = [
    "git push --force origin main",
    "git push -f origin main",
    "git push --force-with-lease origin main",
    "git push --force-with-lease=main:abc123 origin main",
    "git push origin +main",
    "git push origin :old-branch",
    "git push --delete origin old",
    "git push -fu origin main",
    "git checkout -- .",
    "git checkout .",
    "git checkout HEAD~1 -- src/app.py",
    "git checkout -f main",
    "git restore src/app.py",
    "git reset --hard HEAD~1",
    "git clean -f",
    "git clean -fdx",
    "git stash drop",
    "git stash clear",
    "git branch -D feature",
    "rsync -a --delete src/ dst/",
    "rsync -a --delete-after src/ host:dst/",
    "aws s3 sync ./site s3://bucket --delete",
    "aws s3 rm s3://bucket/logs --recursive",
    "kubectl delete ns payments",
    "kubectl delete pod -l app=api",
    "terraform destroy -auto-approve",
    "terraform apply -destroy",
    "helm uninstall api -n payments",
    "docker system prune -af",
    "docker volume prune -f",
    "docker image prune -a",
    "podman system prune",
    "vault kv destroy -versions=1 secret/app",
    "etcdctl del /registry --prefix",
    "redis-cli FLUSHDB",
    "gh repo delete owner/repo --yes",
]

# Changes, but nothing a plain undo cannot restore: mutating, not destructive.
MUTATING = [
    "git push origin main",
    "git checkout main",
    "git checkout -b fix",
    "git stash",
    "git stash pop",
    "git branch fix",
    "git tag v1.2.3",
    "git remote add upstream https://example.com/r.git",
    "git config user.name bob",
    "rsync -a src/ dst/",
    "aws s3 sync ./site s3://bucket",
    "kubectl apply -f deploy.yaml",
    "kubectl apply -f deploy.yaml --dry-run=none",
    "terraform apply",
    "terraform init",
    "helm upgrade api ./chart",
    "helm repo update",
    "systemctl restart nginx",
    "systemctl mask nginx",
    "redis-cli SET k v",
    "redis-cli CONFIG SET maxmemory 1gb",
    "vault kv put secret/app a=b",
    "consul kv put app/x 1",
    "etcdctl put /k v",
    "gh pr merge 42",
    "glab mr merge 12",
    "docker login registry.example.com",
    "date -s '2001-01-01'",
    "timedatectl set-timezone UTC",
]


@pytest.mark.parametrize("command", ATTACKS)
def test_no_attack_is_read_only(command: str) -> None:
    result = classify(command)
    assert result.kind != "read-only", [(part.command, part.reason) for part in result.parts]
    assert classify(command, parser_only=True).kind != "read-only"


@pytest.mark.parametrize("command", INVESTIGATIONS)
def test_investigations_are_read_only(command: str) -> None:
    result = classify(command)
    assert result.kind == "read-only", [(p.command, p.kind, p.reason) for p in result.parts]
    assert classify(command, parser_only=True).kind == "read-only"


@pytest.mark.parametrize("command", DESTRUCTIVE)
def test_destructive(command: str) -> None:
    assert classify(command).kind == "destructive"


@pytest.mark.parametrize("command", MUTATING)
def test_mutating(command: str) -> None:
    assert classify(command).kind == "mutating"


def test_the_corpora_are_large_and_distinct() -> None:
    assert len(ATTACKS) >= 150 and len(set(ATTACKS)) == len(ATTACKS)
    assert len(INVESTIGATIONS) >= 150 and len(set(INVESTIGATIONS)) == len(INVESTIGATIONS)


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("sort -oout.txt victim.txt", "sort -o writes out.txt"),
        ("curl -sSLo out.txt https://example.com", "curl -o writes out.txt"),
        ("PAGER='rm victim.txt' git log", "rm victim.txt"),
        ("v='b[$(rm x)]'; echo $((v))", "arithmetic evaluates the value of v"),
        ("sed -n 's/a/b/w out.txt' in", "sed writes to writes out.txt"),
        ("awk 'BEGIN{system(\"id\")}'", "awk system() runs a command"),
        ("git -c core.fsmonitor=x status", "git -c core.fsmonitor=x is unknown"),
        ("alias ll='rm -rf'; ll /", "an alias defined earlier in the line"),
        ("kubectl delete pod x --dry-run=server", "only shows what it would do"),
    ],
)
def test_reasons_name_the_cause(command: str, said: str) -> None:
    reasons = " | ".join(f"{part.command}: {part.reason}" for part in classify(command).parts)
    assert said in reasons


def test_a_number_assigned_on_the_line_is_safe_in_arithmetic_and_nothing_else_is() -> None:
    assert classify("n=3; echo $((n * 2))").kind == "read-only"
    assert classify("echo $((n * 2)); n=3").kind == "unknown"  # n comes from outside first
    assert classify("n=3; n=$(cat f); echo $((n))").kind == "unknown"
    assert classify("if true; then n=3; fi; echo $((n))").kind == "unknown"
    assert classify("(n=3); echo $((n))").kind == "unknown"
    assert classify("for i in 1 2; do echo $((i)); done").kind == "read-only"
    assert classify("for i in a 2; do echo $((i)); done").kind == "unknown"
    assert classify("echo $((RANDOM % 6)) ${#x} $(( $# + 1 ))").kind == "read-only"
    assert classify("sh -c 'echo $((n))'; n=1").kind == "unknown"


def test_dry_run_does_not_hide_what_an_option_writes_or_runs() -> None:
    assert classify("rsync -n -av a/ b/").kind == "read-only"
    assert classify("rsync -n --log-file=x.log a/ b/").kind == "mutating"
    assert classify("rsync -n -e 'rm -rf /' a/ b/").kind == "destructive"
    assert classify("kubectl delete pod x --dry-run=server").kind == "read-only"
    assert classify("kubectl delete pod x --dry-run=none").kind == "destructive"


# -- end to end: what runs in the sandbox changes nothing -------------------------------------

REMOTE_OR_NETWORK = ("ssh", "http", "host:", "mongosh", "redis", "psql", "mysql", "kubectl",
                     "helm", "etcdctl", " gh ", "aws", "az ", "gcloud", "origin", "sudo",
                     "terraform", "docker", "man ", "tcpdump", "ss -", "vim")  # fmt: skip
LOCAL_ATTACKS = [
    command
    for command in ATTACKS
    if any(mark in command for mark in ("victim", "out.", "pwned", "copy.txt", "listing"))
    and not any(mark in f" {command}" for mark in REMOTE_OR_NETWORK)
]
SAMPLE = LOCAL_ATTACKS[::9]
FILES = {
    "victim.txt": b"alpha\nbeta\n",
    "hex.txt": b"6869\n",
    "cmds.txt": b"rm victim.txt\n",
    "cmds.sh": b"rm victim.txt\n",
    "prog.sed": b"1e rm victim.txt\n",
}
TRUSTING = """\
schema_version: 1
mode: investigate
sandbox: on
on_unknown: allow
"""


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(path.relative_to(folder)): (
            path.read_bytes() if path.is_file() else b"",
            path.stat().st_mode,
        )
        for path in sorted(folder.rglob("*"))
    }


@pytest.mark.skipif(
    find_bwrap() is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed (apt-get install bubblewrap)",
)
@pytest.mark.parametrize("command", SAMPLE)
def test_attacks_run_through_exec_in_investigate_mode_change_no_file(
    tmp_path: Path, command: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for name, content in FILES.items():
        (work / name).write_bytes(content)
    with tarfile.open(work / "a.tar", "w") as archive:
        archive.add(work / "victim.txt", arcname="victim.txt")
    before = snapshot(work)
    (tmp_path / "run").mkdir()
    trusting = tmp_path / "trusting.yaml"
    trusting.write_text(TRUSTING)
    agentledger = Path(sys.executable).with_name("agentledger")
    env = {**os.environ, "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    # Investigate mode with unknown commands allowed, so that what the classifier cannot be
    # sure of runs, in the sandbox: mutating and destructive ones are still denied.
    done = subprocess.run(
        [str(agentledger), "exec", "--run-dir", str(tmp_path / "run"), "--policy",
         str(trusting), "--", command],
        cwd=work, env=env, capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert snapshot(work) == before, done.stderr.decode(errors="replace")
    lines = (tmp_path / "run" / "shell_audit.jsonl").read_text().splitlines()
    (event,) = [json.loads(line) for line in lines]
    assert event["classification"] != "read-only"
    if event["decision"] == "allowed":
        assert event["sandbox"] == "bwrap"


@pytest.mark.parametrize(
    "command",
    [
        "n=5; read n < f; echo $((n))",
        "n=5; getopts ab n; echo $((n))",
        "n=5; eval 'n=$(cat f)'; echo $((n))",
        "n=5; f() { n=$(cat g); }; f; echo $((n))",
        "n=5; while read -r line; do n=$line; done < f; echo $((n))",
    ],
)
def test_a_number_the_line_may_replace_is_no_longer_safe(command: str) -> None:
    assert classify(command).kind == "unknown"


def test_a_knowledge_file_can_model_a_new_tool_by_its_causes(tmp_path: Path) -> None:
    from agentledger.shell.knowledge import load_knowledge

    extra = tmp_path / "ours.yaml"
    extra.write_text(
        "commands:\n"
        "  reportgen:\n"
        "    default: read-only\n"
        "    writes: {options: [-o, --out]}\n"
        "    flag_values: {--hook: {'*': shell}}\n"
        "    dry_run: [--plan]\n"
        "    subcommands: {read-only: [show], mutating: [publish]}\n"
        "environment:\n"
        "  shell: [REPORTGEN_VIEWER]\n"
    )
    knowledge = load_knowledge([str(extra)])
    assert classify("reportgen show", knowledge).kind == "read-only"
    assert classify("reportgen show -oreport.txt", knowledge).kind == "mutating"
    assert classify("reportgen show --out=/dev/null", knowledge).kind == "read-only"
    assert classify("reportgen show --hook 'rm -rf /srv'", knowledge).kind == "destructive"
    assert classify("reportgen publish --plan", knowledge).kind == "read-only"
    assert classify("REPORTGEN_VIEWER='rm x' reportgen show", knowledge).kind == "destructive"


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("1,20p", []),
        ("/^#/d; s/a/b/g", []),
        ("$!N; /x/{s/\\n/ /; p}", []),
        ("y/abc/xyz/", []),
        ("2 a\\\nappended", []),
        ("1e date", [("runs", "date")]),
        ("$e", [("unknown", "sed e runs the pattern space as a command")]),
        ("s/a/b/w out", [("writes", "out")]),
        ("/x/W out", [("writes", "out")]),
        ("s/a/b/ge", [("unknown", "sed s///e runs the result as a command")]),
        ("s/a/b", [("unknown", "sed script does not parse: '/' is not closed")]),
    ],
)
def test_the_sed_reader(script: str, expected: list[tuple[str, str]]) -> None:
    from agentledger.shell.scripts import read_sed

    assert read_sed(script) == expected


@pytest.mark.parametrize(
    ("program", "kinds"),
    [
        ("{ print $1 }", []),
        ("$3 > 100 { print $1 }", []),
        ("{ if ($9 >= 500) print $7 }", []),
        ("{ print ($1 > $2) }", []),
        ("{ n = $1 / 2; m = /x/ ? 1 : 0 }", []),
        ('{ print "a|b" }', []),
        ('{ print > "/dev/stderr" }', ["writes"]),
        ('{ printf("%s", $0) >> "log" }', ["writes"]),
        ('BEGIN { system ("x") }', ["unknown"]),
        ('{ print | "sort" }', ["unknown"]),
        ('BEGIN { "date" | getline d }', ["unknown"]),
        ('BEGIN { print "x', ["unknown"]),
    ],
)
def test_the_awk_reader(program: str, kinds: list[str]) -> None:
    from agentledger.shell.scripts import read_awk

    assert [kind for kind, _ in read_awk(program)] == kinds
