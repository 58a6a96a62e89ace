"""Running the real promptfoo (from npm) offline against the local model server.

promptfoo is found at $AGENTLEDGER_PROMPTFOO (its `promptfoo` executable) or on PATH; it is
not installed by CI (about 1.4 GB of node modules and three minutes of npm), so the tests that
run it skip without it. `run_eval` copies tests/promptfoo into a work folder, fills in the
paths of agentledger's assertion and provider, runs ``promptfoo eval``, rates one output in
promptfoo's own viewer (its rating API, as the page does) and exports the eval.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).parent
PACKAGE = HERE.parent / "src" / "agentledger" / "promptfoo"
SAFE = {
    "root_cause": "a tc netem qdisc on eth0 drops 30% of packets",
    "commands": ["tc qdisc show dev eth0", "ip -s link show eth0"],
}
UNSAFE = {"root_cause": "the disk is full of old logs", "commands": ["rm -rf /var/log/*"]}
COMMENT = "Deleting every log is not how we free space here."


def promptfoo_executable() -> str | None:
    given = os.environ.get("AGENTLEDGER_PROMPTFOO")
    if given and Path(given).is_file():
        return given
    return shutil.which("promptfoo")


def answer_for(body: dict[str, Any]) -> str:
    """The model's answer: unsafe for the disk-full task, safe otherwise."""
    asked = json.dumps(body.get("messages", []))
    return json.dumps(UNSAFE if "disk" in asked else SAFE)


def prepare(work: Path, ledger: Path) -> Path:
    shutil.copytree(HERE / "promptfoo", work)
    config = (work / "promptfooconfig.yaml").read_text()
    config = (
        config.replace("PROVIDER", str(PACKAGE / "provider.py"))
        .replace("ASSERTION", str(PACKAGE / "assertion.py"))
        .replace("LEDGER", str(ledger))
    )
    (work / "promptfooconfig.yaml").write_text(config)
    return work


def environment(work: Path, base_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "local",
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_SHARING": "1",
        "PROMPTFOO_PYTHON": sys.executable,
        "PROMPTFOO_CONFIG_DIR": str(work / ".promptfoo"),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }


def run_eval(promptfoo: str, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            promptfoo,
            "eval",
            "-c",
            "promptfooconfig.yaml",
            "-o",
            "results.json",
            "--no-cache",
            "-j",
            "1",
            "--no-progress-bar",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def rate_and_export(promptfoo: str, work: Path, env: dict[str, str], port: int) -> Path:
    """Fail the disk-full output of the agent in promptfoo's viewer, with a comment, as a
    person would; then export the eval as promptfoo writes it."""
    results = json.loads((work / "results.json").read_text())
    eval_id = results["evalId"]
    rows = results["results"]["results"]
    row = next(
        r
        for r in rows
        if r["testCase"]["description"] == "disk-full" and r["provider"]["label"] == "ops-agent"
    )
    viewer = subprocess.Popen(
        [promptfoo, "view", "--port", str(port), "-n"],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url + "/health", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        grading = row["gradingResult"]
        human = {
            "pass": False,
            "score": 0,
            "reason": "Manual result (overrides all other grading results)",
            "comment": COMMENT,
            "assertion": {"type": "human"},
        }
        body = {
            **grading,
            "pass": False,
            "score": 0,
            "comment": COMMENT,
            "componentResults": [*grading["componentResults"], human],
        }
        answer = httpx.post(
            f"{url}/api/eval/{eval_id}/results/{row['id']}/rating", json=body, timeout=30
        )
        answer.raise_for_status()
    finally:
        viewer.terminate()
        viewer.wait(timeout=30)
    out = work / "results-rated.json"
    subprocess.run(
        [promptfoo, "export", "eval", eval_id, "-o", str(out)],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out
