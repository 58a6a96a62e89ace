"""Round five of the jail (issue 33): the environment a vouched or approved command starts
with, the terminal the approver is asked on, the output that reaches it, and the requests a
network reader may make."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

from agentledger.runner.shell_gate import Gate
from agentledger.runner.shell_gate.environment import SYSTEM_PATH, clean_environment
from agentledger.runner.shell_gate.rules import load_policy


def vouching_gate(tmp_path: Path, allowed: str, env: dict[str, str]) -> Gate:
    policy = tmp_path / "vouch.yaml"
    policy.write_text(
        textwrap.dedent(
            f"""\
            mode: remediate
            on_mutating: prompt
            on_unknown: prompt
            allow: [{json.dumps(allowed)}]
            """
        )
    )
    return Gate(load_policy(policy), tmp_path / "audit.jsonl", cwd=tmp_path, env=env, ci=False)


def test_a_vouched_command_gets_a_clean_environment(tmp_path: Path) -> None:
    # BASH_ENV runs a file before the command, PATH finds another `touch`: the agent's own
    # environment must not change what a vouched command does outside the sandbox.
    evil = tmp_path / "evil.sh"
    evil.write_text(f"echo ran > {tmp_path}/bash-env-ran\n")
    fake = tmp_path / "evilbin"
    fake.mkdir()
    (fake / "touch").write_text(f"#!/bin/sh\necho ran > {tmp_path}/fake-touch-ran\n")
    (fake / "touch").chmod(0o755)
    target = tmp_path / "allowed"
    env = {
        **os.environ,
        "BASH_ENV": str(evil),
        "ENV": str(evil),
        "PATH": f"{fake}:{os.environ.get('PATH', '')}",
        "LD_PRELOAD": "/nonexistent/lib.so",
        "GIT_CONFIG_GLOBAL": str(evil),
        "PYTHONSTARTUP": str(evil),
        "LC_TIME": "C",
    }
    gate = vouching_gate(tmp_path, f"touch {target}", env)
    result = gate.run(f"touch {target}")
    assert result.decision.decision == "allowed" and result.exit_code == 0, result
    assert target.exists()
    assert not (tmp_path / "bash-env-ran").exists()
    assert not (tmp_path / "fake-touch-ran").exists()
    assert result.event["sandbox"] == "none" and result.event["environment"] == "reset"


def test_what_the_clean_environment_keeps(tmp_path: Path) -> None:
    show = tmp_path / "show-env"
    show.write_text("#!/bin/sh\nexec /usr/bin/env\n")
    show.chmod(0o755)
    gate = vouching_gate(tmp_path, str(show), {
        "PATH": "/evil", "HOME": "/evil", "USER": "mallory", "BASH_ENV": "/evil",
        "LD_LIBRARY_PATH": "/evil", "KUBECONFIG": "/evil", "PERL5OPT": "-Mevil",
        "GCONV_PATH": "/evil", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "TZ": "UTC",
        "LC_EVIL": "a\x1bb",
    })  # fmt: skip
    result = gate.run(str(show))
    assert result.decision.decision == "allowed" and result.event["sandbox"] == "none", result
    seen = dict(line.split("=", 1) for line in result.stdout.decode().splitlines())
    for set_by_bash in ("PWD", "OLDPWD", "SHLVL", "_"):
        seen.pop(set_by_bash, None)
    import pwd

    me = pwd.getpwuid(os.geteuid())
    assert seen == {
        "PATH": SYSTEM_PATH, "HOME": me.pw_dir, "USER": me.pw_name, "LOGNAME": me.pw_name,
        "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "TZ": "UTC",
    }  # fmt: skip


def test_a_sandboxed_read_keeps_the_agents_environment(tmp_path: Path) -> None:
    # Inside the sandbox nothing it does can last: the agent's variables still apply there.
    env = {**os.environ, "GATE_VALUE": "kept"}
    gate = Gate(None, tmp_path / "audit.jsonl", cwd=tmp_path, env=env)
    assert "environment" not in gate._fields(gate.decide("true"), 0.0)
    assert clean_environment({"GATE_VALUE": "x"}).get("GATE_VALUE") is None
