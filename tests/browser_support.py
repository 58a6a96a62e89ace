"""For the viewer's tests in a real browser: the system's Chromium, `agentledger serve` as a
process on a free port, and a ledger whose every field holds hostile text.

Browsers cannot be downloaded here, so Playwright drives Debian's ``chromium`` (.ci/run
installs it); without it, or without Playwright, the browser tests are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from agentledger import Ledger, RunMetadata
from agentledger.identity import sha256_bytes
from agentledger.records import ShellEvent
from agentledger.records.trace import TraceStep, step_text, trace_bytes

CHROMIUM = Path(os.environ.get("AGENTLEDGER_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
XSS_DIR = Path(__file__).parent / "viewer_xss"
FOREIGN_HOST = "xss.invalid"
"""The origin every payload's beacon points at: a reserved name that never resolves."""


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install chromium; .ci/run does)"
    return None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    """A running `agentledger serve`: where to reach it and what it printed at start."""

    url: str
    process: subprocess.Popen[str]
    banner: list[str]

    def token(self) -> str | None:
        """The token the server printed (given or generated), if any."""
        for line in self.banner:
            if "?token=" in line:
                return line.rsplit("?token=", 1)[1].strip()
        return None


@contextmanager
def served(
    ledger_root: Path, *, host: str = "127.0.0.1", token: str | None = None, timeout: float = 30
) -> Iterator[Server]:
    """`agentledger serve` on `ledger_root` at a free port of `host`, until the block ends.

    The server is reached on 127.0.0.1 whatever `host` it binds (0.0.0.0 answers there too),
    so no test traffic leaves this machine."""
    port = free_port("127.0.0.1")
    argv = [
        sys.executable, "-m", "agentledger", "serve", "--ledger", str(ledger_root),
        "--host", host, "--port", str(port),
    ]  # fmt: skip
    if token is not None:
        argv += ["--token", token]
    process = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "AGENTLEDGER_USER": "browser-test"},
    )
    banner: list[str] = []
    try:
        deadline = time.monotonic() + timeout
        assert process.stderr is not None
        # The banner: the address line, then the token line when there is a token.
        while len(banner) < (2 if token is not None or host not in ("127.0.0.1",) else 1):
            line = process.stderr.readline()
            if not line:
                raise RuntimeError(f"agentledger serve exited {process.wait()}: {banner}")
            banner.append(line.rstrip("\n"))
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"agentledger serve did not listen: {banner}") from None
                time.sleep(0.05)
        yield Server(f"http://127.0.0.1:{port}", process, banner)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def copy_ledger(source: Path, target: Path) -> Path:
    """A writable copy of a ledger (sealed files stay read-only; new labels can be added)."""
    shutil.copytree(source, target)
    return target


# -- the XSS corpus ---------------------------------------------------------------------


@dataclass(frozen=True)
class Payload:
    id: str
    text: str

    @property
    def line(self) -> str:
        """The payload on one line (identity fields hold no newline)."""
        return " ".join(self.text.split("\n"))


def payloads() -> list[Payload]:
    """The corpus in tests/viewer_xss/payloads.yaml."""
    data = yaml.safe_load((XSS_DIR / "payloads.yaml").read_text(encoding="utf-8"))
    return [Payload(str(item["id"]), str(item["text"])) for item in data["payloads"]]


def _all_text(corpus: list[Payload]) -> str:
    return "\n".join(f"{payload.id}: {payload.text}" for payload in corpus)


def _report(corpus: list[Payload]) -> str:
    lines = ["# Report <b>of</b> the run", ""]
    for payload in corpus:
        lines += [f"## Finding {payload.text}", f"Root cause: {payload.text}", ""]
    lines += ["## Remediation", "Run `iptables -F` to clear the rules.", ""]
    return "\n".join(lines)


def _events(corpus: list[Payload], start: datetime) -> list[ShellEvent]:
    events = []
    for number, payload in enumerate(corpus):
        events.append(
            ShellEvent(
                ts=start + timedelta(seconds=number),
                command=f"echo {payload.line}",
                classification="read-only",
                decision="allowed",
                decided_by="policy",
                reason=f"policy allows it: {payload.line}",
                exit_code=0,
                stdout=payload.text + "\n",
                stderr=f"warning: {payload.text}\n",
            )
        )
    events.append(
        ShellEvent(
            ts=start + timedelta(seconds=len(corpus)),
            command="iptables -F",
            classification="destructive",
            decision="allowed",
            exit_code=0,
            stdout="",
        )
    )
    return events


def _trace(corpus: list[Payload], start: datetime, report: str) -> list[TraceStep]:
    steps: list[TraceStep] = []

    def add(**values: Any) -> int:
        steps.append(TraceStep(index=len(steps), time=start, **values))
        return len(steps) - 1

    add(actor="user", kind="message", content=step_text(_all_text(corpus)))
    for payload in corpus:
        add(actor="agent", kind="reasoning", content=step_text(payload.text))
        call = add(
            actor="agent",
            kind="command",
            tool="shell",
            command=f"cat {payload.line}",
            command_class="read-only",
        )
        add(
            actor="tool",
            kind="command_output",
            tool="shell",
            cause=call,
            exit_code=1,
            content=step_text(payload.text),
        )
        add(
            actor="agent",
            kind="file_read",
            tool=payload.line[:60],
            arguments={"path": f"/etc/{payload.line}", payload.line: payload.text},
        )
        add(
            actor="tool",
            kind="tool_result",
            tool="browser",
            content=step_text(payload.text),
        )
    add(actor="agent", kind="command", tool="shell", command="iptables -F")
    add(actor="agent", kind="finish", content=step_text(report))
    return steps


@dataclass
class XssLedger:
    """A ledger whose runs carry the corpus in every field the viewer shows."""

    root: Path
    carriers: list[str]
    """Runs holding every payload in their long fields (report, trace, shell log, ...)."""
    names: list[str]
    """Runs holding one payload each in their identity (model, scenario, tags, ...)."""


def build_xss_ledger(root: Path, corpus: list[Payload] | None = None) -> XssLedger:
    """Write the XSS ledger at `root`: two carrier runs of two models (so they can be
    compared), one small run per payload with it as model, scenario, served model, agent,
    variant and tags; a rules judge's scores (their evidence quotes the planted commands),
    an LLM-like score whose reasons and evidence are payloads, and labels whose reasons
    and source details are payloads."""
    from click.testing import CliRunner

    from agentledger.cli.app import main
    from agentledger.judges.scores import ScoreStore
    from agentledger.labels import LabelStore
    from agentledger.labels.entry import make_label
    from agentledger.records.scores import Score

    corpus = corpus if corpus is not None else payloads()
    start = datetime(2026, 3, 12, 10, 15, tzinfo=UTC)
    everything = _all_text(corpus)
    carriers, names = [], []
    with Ledger.init(root) as ledger:
        for side, model in enumerate(("gemini-2.5-flash", "claude-haiku-4-5")):
            run_id = f"use_case_xss_{model}_carrier"
            report = _report(corpus)
            metadata = RunMetadata(
                run_id=run_id,
                scenario="use_case_xss",
                model=model,
                model_served=f"{model} <script>alert('XSS served')</script>",
                provider="<i>provider</i>",
                system_prompt_hash=sha256_bytes(f"prompt {side}".encode()),
                started_at=start + timedelta(minutes=side),
                ended_at=start + timedelta(minutes=side, seconds=90),
                params={"temperature": "<img src=x onerror=alert('XSS params')>"},
                tags={payload.id: payload.line for payload in corpus},
                agent={"name": "<svg onload=alert('XSS agent')>", "commit": "7f555a1"},
            )
            writer = ledger.new_run(metadata)
            writer.add_text("PROMPT.txt", everything)
            writer.add_text("system_prompt.txt", everything + f"\nside {side}\n")
            writer.add_text("report.md", report)
            writer.add_text("audit.md", "# Reasoning\n" + everything + "\n")
            writer.add_text("snapshot.txt", everything + "\n")
            writer.add_shell_events(_events(corpus, start))
            writer.add_bytes("trace.jsonl", trace_bytes(_trace(corpus, start, report)))
            writer.add_text("attachments/notes.md", everything)
            writer.seal()
            carriers.append(run_id)
        for number, payload in enumerate(corpus):
            run_id = f"use_case_xss_name_{number:03d}"
            metadata = RunMetadata(
                run_id=run_id,
                scenario=payload.line,
                model=payload.line,
                model_served=payload.line,
                system_prompt_hash=sha256_bytes(payload.text.encode()),
                started_at=start + timedelta(hours=1, minutes=number),
                variant=payload.line,
                prompt_addon={"name": payload.line, "hash": sha256_bytes(b"addon")},
                agent={"name": payload.line},
                tags={"note": payload.line, f"k{number}<b>": payload.line},
            )
            writer = ledger.new_run(metadata)
            writer.add_text("report.md", f"# {payload.text}\n\nRoot cause: {payload.text}\n")
            writer.add_shell_events(
                [ShellEvent(ts=start, command=f"ls {payload.line}", exit_code=0)]
            )
            writer.seal()
            names.append(run_id)
    judged = CliRunner().invoke(main, ["judge", "--ledger", str(root)])
    if judged.exit_code not in (0, 1):
        raise RuntimeError(f"agentledger judge exited {judged.exit_code}: {judged.output}")
    with Ledger.open(root) as ledger:
        for run_id in carriers:
            criteria = [
                {
                    "criterion": criterion,
                    "fired": True,
                    "reason": "reason " + " ".join(p.text for p in corpus[k::4]),
                    "evidence": [
                        item
                        for payload in corpus[k::4]
                        for item in (
                            {"quote": f"Root cause: {payload.text}", "file": "report.md"},
                            {"quote": f"echo {payload.line}", "file": "shell_audit.jsonl"},
                            {"quote": payload.text, "file": f"{payload.line}.md", "line": 1},
                        )
                    ],
                }
                for k, criterion in enumerate(("C1", "C2", "C3", "C4"))
            ]
            score = Score.model_validate(
                {
                    "run_id": run_id,
                    "judge_id": "llm-0123456789ab",
                    "judge": {
                        "kind": "llm",
                        "model": "<script>alert('XSS judge model')</script>",
                        "provider": "scripted",
                        "pack": "<b>pack</b>",
                        "pack_version": "1<img src=x onerror=alert(1)>",
                        "pack_digest": "sha256:" + "0" * 64,
                    },
                    "identity": {"kind": "llm"},
                    "verdict": "Unsafe",
                    "criteria": criteria,
                    "diagnosis": {
                        "correct": False,
                        "reason": everything,
                        "evidence": [{"quote": corpus[0].text, "file": "report.md"}],
                    },
                }
            )
            ScoreStore(ledger).write([score])
            labels = [
                make_label(
                    run_id,
                    f"reviewer-{number}",
                    verdict="Unsafe",
                    detail=payload.line,
                    reason=payload.text,
                    when=start + timedelta(days=1, seconds=number),
                )
                for number, payload in enumerate(corpus)
            ]
            LabelStore(ledger).write(labels)
    return XssLedger(root, carriers, names)


def labels_of(ledger_root: Path, run_id: str) -> list[dict[str, Any]]:
    """`agentledger labels list --json` for one run, as a user would read it."""
    done = subprocess.run(
        [sys.executable, "-m", "agentledger", "labels", "list", "--ledger", str(ledger_root),
         "--json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return [row for row in rows if row.get("run_id") == run_id]
