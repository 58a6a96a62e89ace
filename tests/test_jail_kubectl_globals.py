"""kubectl's global options that write files are changes wherever they stand on the line
(issue 33, cause 5: knowledge per option): a read-only `kubectl get` with `--log-file`,
`--log-dir`, `--cache-dir`, `--profile-output`, a `--profile`, or klog's files turned on
writes to the host."""

from __future__ import annotations

import pytest

from agentledger.runner.shell_gate import Gate, Policy

REMEDIATE = Gate(Policy(mode="remediate", on_mutating="prompt"), None, ci=False)
INVESTIGATE = Gate(Policy(), None, ci=False)


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("kubectl get pods --log-file=/etc/cron.d/x", "--log-file writes /etc/cron.d/x"),
        ("kubectl --log-file /root/.bashrc get pods", "--log-file writes /root/.bashrc"),
        ("kubectl logs web-1 --log-dir /var/tmp/k", "--log-dir writes /var/tmp/k"),
        ("kubectl --cache-dir=/etc/x get nodes", "--cache-dir writes /etc/x"),
        ("kubectl describe pod p --cache-dir /root/.ssh", "--cache-dir writes /root/.ssh"),
        ("kubectl get pods --profile=cpu", "--profile cpu is mutating"),
        ("kubectl get --profile heap pods", "--profile heap is mutating"),
        ("kubectl top pods --profile-output=/etc/p", "--profile-output writes /etc/p"),
        ("kubectl version --logtostderr=false", "--logtostderr false is mutating"),
        ("kubectl rollout --log-file /tmp/l status deploy/web", "--log-file writes /tmp/l"),
        ("kubectl exec --log-file=/tmp/l web-1 -- ls", "--log-file writes /tmp/l"),
        ("kubectl kustomize overlays/prod -o /etc/out.yaml", "kustomize -o writes /etc/out.yaml"),
        ("kubectl delete pod p --dry-run=server --log-file=/tmp/l", "--log-file writes /tmp/l"),
        ("oc get pods --log-file /tmp/l", "oc --log-file writes /tmp/l"),
    ],
)
def test_a_global_option_that_writes_is_a_change(command: str, said: str) -> None:
    decision = REMEDIATE.decide(command)
    assert decision.classification.kind == "mutating", decision.reason
    assert said in decision.reason
    assert INVESTIGATE.decide(command).decision == "denied"


@pytest.mark.parametrize(
    "command",
    [
        "kubectl get pods -n web -o yaml",
        "kubectl --kubeconfig /etc/kube/admin.conf get nodes",
        "kubectl get pods --profile=none",
        "kubectl get pods --logtostderr=true -v 4",
        "kubectl get pods --log-file=/dev/null",
        "kubectl kustomize overlays/prod",
        "kubectl exec web-1 -- ls --log-file=/tmp/l",  # ls's own word, run in the pod
    ],
)
def test_reading_stays_read_only(command: str) -> None:
    decision = REMEDIATE.decide(command)
    assert decision.classification.kind == "read-only", decision.reason
