"""A standalone writer for the concurrency and fault tests: writes runs to a ledger in a loop.

Run with ``sys.executable tests/writer_process.py --ledger PATH ...``. It goes through the public
API only (Ledger.open, new_run, add_text / add_bytes / add_file, seal) and reports on stdout,
one line per event, flushed as soon as it happens:

    READY <pid>                 the ledger is open (printed before waiting for --start-file)
    BEGIN <run_id>              a RunWriter exists: the run is being staged
    ADDED <run_id>              every artifact is written; seal() comes next
    SEALED <run_id> <sha256>    seal() returned; <sha256> is the hash of the run's MANIFEST.json
    EXISTS <run_id> <where>     RunExistsError, raised by new_run ("init") or by seal ("seal")
    STAGED <run_id>             (--hold) staged; waiting for a line on stdin before sealing
    DONE                        every requested run was attempted

A run's attributes are a function of (worker, number), so tests can predict every query.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agentledger.errors import RunExistsError
from agentledger.identity import sha256_bytes
from agentledger.records import RunMetadata
from agentledger.store import Ledger, RunWriter

MODELS = ("claude-haiku-4-5", "gpt-4.1-mini", "gemini-2.5-flash")
PROMPTS = (b"You are an SRE agent. Be careful.\n", b"You are an SRE agent. Verify first.\n")
SCENARIOS = ("use_case_m", "use_case_n")


@dataclass(frozen=True)
class Attributes:
    scenario: str
    model: str
    prompt: bytes
    tags: dict[str, str]

    @property
    def system_prompt_hash(self) -> str:
        return sha256_bytes(self.prompt)


def attributes(worker: int, number: int) -> Attributes:
    """The identity fields of run `number` of `worker` (tests use this to predict queries)."""
    return Attributes(
        scenario=SCENARIOS[worker % len(SCENARIOS)],
        model=MODELS[number % len(MODELS)],
        prompt=PROMPTS[(number // len(MODELS)) % len(PROMPTS)],
        tags={"worker": str(worker), "parity": "even" if number % 2 == 0 else "odd"},
    )


def say(*words: object) -> None:
    sys.stdout.write(" ".join(str(word) for word in words) + "\n")
    sys.stdout.flush()


def start(ledger: Ledger, run_id: str, worker: int, number: int) -> RunWriter:
    attrs = attributes(worker, number)
    metadata = RunMetadata(
        run_id=run_id,
        scenario=attrs.scenario,
        model=attrs.model,
        provider="scripted",
        system_prompt_hash=attrs.system_prompt_hash,
        agent={"name": "writer_process", "commit": "0" * 7, "dirty": False},
        params={"temperature": 0, "number": number},
        started_at=datetime.now(UTC),
        tags=attrs.tags,
    )
    writer = ledger.new_run(metadata)
    say("BEGIN", run_id)
    return writer


def fill(writer: RunWriter, args: argparse.Namespace, number: int, prompt: bytes) -> None:
    writer.add_text("PROMPT.txt", f"disk is full on node {number}\n")
    writer.add_bytes("system_prompt.txt", prompt)
    writer.add_text("report.md", f"# Report {writer.run_id}\n\nroot cause: logs\n")
    events = [
        {"command": "df -h", "exit_code": 0, "decision": "allowed"},
        {"command": "rm -rf /var/log", "decision": "denied"},
    ]
    writer.add_bytes("shell_audit.jsonl", b"".join(json.dumps(e).encode() + b"\n" for e in events))
    if args.big_file:
        writer.add_file("attachments/big.bin", args.big_file)
    elif args.big_bytes:
        writer.add_bytes("attachments/big.bin", os.urandom(args.big_bytes))
    writer.add_text("audit.md", "checked df, refused to delete logs\n")
    writer.update_metadata(ended_at=datetime.now(UTC))


def write_one(ledger: Ledger, args: argparse.Namespace, run_id: str, number: int) -> None:
    try:
        writer = start(ledger, run_id, args.worker, number)
    except RunExistsError:
        say("EXISTS", run_id, "init")
        return
    fill(writer, args, number, attributes(args.worker, number).prompt)
    say("ADDED", run_id)
    try:
        sealed = writer.seal()
    except RunExistsError:
        say("EXISTS", run_id, "seal")
        return
    say("SEALED", run_id, sealed.manifest_sha256)


def hold(ledger: Ledger, args: argparse.Namespace) -> None:
    run_id = f"{args.prefix}-held"
    writer = start(ledger, run_id, args.worker, 0)
    fill(writer, args, 0, PROMPTS[0])
    say("STAGED", run_id)
    sys.stdin.readline()
    sealed = writer.seal()
    say("SEALED", run_id, sealed.manifest_sha256)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ledger", required=True, type=Path)
    parser.add_argument("--worker", type=int, default=0)
    parser.add_argument("--prefix", default="w0")
    parser.add_argument("--count", type=int, default=0, help="runs to write; 0 = until killed")
    parser.add_argument("--big-bytes", type=int, default=0, help="random attachment per run")
    parser.add_argument("--big-file", type=Path, help="file streamed in as an attachment")
    parser.add_argument("--start-file", type=Path, help="wait for this file before writing")
    parser.add_argument(
        "--dup", action="append", default=[], help="a shared run id to try too (repeatable)"
    )
    parser.add_argument("--hold", action="store_true", help="stage one run, seal on stdin")
    args = parser.parse_args()

    with Ledger.open(args.ledger) as ledger:
        say("READY", os.getpid())
        if args.start_file:
            while not args.start_file.exists():
                time.sleep(0.002)
        if args.hold:
            hold(ledger, args)
            return 0
        # Shared ids are tried first and then spread through the run, so that several
        # workers race to seal the same id at about the same moment.
        every = max(1, args.count // max(1, len(args.dup)))
        dups = list(args.dup)
        number = 0
        while args.count == 0 or number < args.count:
            if dups and number % every == 0:
                write_one(ledger, args, dups.pop(0), 1000 + number)
            write_one(ledger, args, f"{args.prefix}-{number:05d}", number)
            number += 1
        for run_id in dups:
            write_one(ledger, args, run_id, 2000)
    say("DONE")
    return 0


if __name__ == "__main__":
    sys.exit(main())
