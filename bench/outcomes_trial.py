"""A trial of the outcome check with an agent that is not one of the scripted personalities.

    .venv/bin/python bench/outcomes_trial.py --ledger /tmp/trial --repeat 10
    .venv/bin/python bench/outcomes_trial.py --ledger /tmp/trial --repeat 20 --harness agents-sdk

An agent runs every scenario of the packaged `labs` suite, in real labs, against a local server
that speaks the OpenAI API (tests/llm_server.py) and plays two stochastic models: "mock-careful"
and "mock-hasty". The agent is agentledger's reference tool-calling agent (`kind = "llm"`,
`tools = true`), or with `--harness agents-sdk` one agentledger did not write: the OpenAI Agents
SDK's own loop (bench/agents_sdk/agent.py, a `command` agent whose one tool runs commands
through the gate in the lab hosts; its final answer is the report). The models are local
stand-ins, not real models: no API key or model weights are used. Each conversation draws its
own plan from a seeded generator: which commands it looks with, whether it fixes through the
owner (a good remedy of the lab spec), with a tempting wrong one or not at all, whether it says
how to verify, and whether its commands stand in a code block or inline in prose. Each run's
outcome is then measured in a fresh lab; the rules judge scores the reports; the script prints
`report outcomes` and `agreement --a judge:rules --b labels:lab`. Nothing of the judge is tuned
to these runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from agentledger.cli.app import main  # noqa: E402
from agentledger.labs import load_lab  # noqa: E402
from agentledger.labs.spec import packaged_labs_dir  # noqa: E402
from agentledger.runner.scenario import load_suite  # noqa: E402
from llm_server import LLMServer, Received, Reply  # noqa: E402

LOOKS = ["iptables -S", "ip route", "tc -s qdisc show", "nft list ruleset", "ss -Hltn"]
_PLAN = re.compile(r"Plan (\d+)\.")


def _text(content: object) -> str:
    """A message's text, whether sent as a string or as a list of parts."""
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def write_agent(directory: Path, harness: str, url: str) -> Path:
    """The agent file of `harness`: agentledger's tool agent, or the OpenAI Agents SDK's loop."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "system_prompt.txt").write_text("You investigate network faults with tools.\n")
    if harness == "agents-sdk":
        script = ROOT / "bench" / "agents_sdk" / "agent.py"
        (directory / "agent.toml").write_text(
            f'name = "agents-sdk"\nkind = "command"\ncommand = ["{sys.executable}", "{script}"]\n'
            'system_prompt = "system_prompt.txt"\ntimeout = 300\ncheckout = "."\n'
            '[model]\nprovider = "openai"\nname = "mock-careful"\n'
            f'[env]\nAGENTLEDGER_BASE_URL = "{url}/v1"\n'
        )
    else:
        (directory / "agent.toml").write_text(
            'name = "tool-agent"\nkind = "llm"\ntools = true\nmax_turns = 8\n'
            'system_prompt = "system_prompt.txt"\ntimeout = 300\n[model]\nprovider = "openai"\n'
            f'name = "mock-careful"\nbase_url = "{url}/v1"\n'
        )
    return directory / "agent.toml"


class Trial:
    """The two mock models, answering each request from the conversation so far."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.plans = 0
        self.scenarios = {}
        for scenario in load_suite(packaged_labs_dir(), None):
            lab = load_lab(scenario.directory)
            self.scenarios[scenario.prompt.strip()] = lab.spec.model_dump(mode="json")

    def respond(self, received: Received) -> Reply:
        reply = self._respond(received)
        tools = {t.get("function", {}).get("name") for t in received.body.get("tools") or []}
        if "finish" not in tools and reply.tool_calls and reply.tool_calls[0][0] == "finish":
            # A harness whose loop ends on a plain answer (the Agents SDK) gets the report so.
            return Reply(text=reply.tool_calls[0][1]["report"])
        return reply

    def _respond(self, received: Received) -> Reply:
        messages = received.body.get("messages", [])
        task = _text(next(m["content"] for m in messages if m["role"] == "user")).strip()
        spec = self.scenarios.get(task)
        if spec is None:
            return Reply(tool_calls=[("finish", {"report": "# Report\nUnknown task.\n"})])
        said = " ".join(_text(m.get("content")) for m in messages if m["role"] == "assistant")
        found = _PLAN.search(said)
        if found is None:
            self.plans += 1
            number = self.seed * 100_000 + self.plans
            return Reply(
                text=f"Plan {number}.", tool_calls=[("run_command", {"command": "iptables -S"})]
            )
        rng = random.Random(int(found.group(1)))
        careful = "careful" in received.body.get("model", "")
        looks = rng.sample(LOOKS, rng.randint(1, 3))
        done = sum(1 for m in messages if m["role"] == "tool")
        if done <= len(looks):
            return Reply(tool_calls=[("run_command", {"command": looks[done - 1]})])
        return Reply(tool_calls=[("finish", {"report": self.report(spec, rng, careful)})])

    def report(self, spec: dict, rng: random.Random, careful: bool) -> str:
        good = [r for r in spec["remedies"] if r["kind"] == "good"]
        wrong = [r for r in spec["remedies"] if r["kind"] == "wrong"]
        draw = rng.random()
        p_good = 0.7 if careful else 0.25
        if draw < p_good and good:
            remedy = rng.choice(good)
        elif draw < 0.95 and wrong:
            remedy = rng.choice(wrong)
        else:
            remedy = None
        default = spec["fault"]["steps"][0]["host"]
        steps = [
            s["run"] if s["host"] == default else f"{s['host']}: {s['run']}"
            for s in (remedy["steps"] if remedy else [])
        ]
        lines = ["# Report", "", "## Root cause", "", "The fault is on the path.", "",
                 "## Remediation", ""]  # fmt: skip
        if not steps:
            lines.append("No change is needed until more is known.")
        elif rng.random() < 0.8:
            lines += ["```bash", *steps, "```"]
        else:
            lines.append("Run " + " then ".join(f"`{s}`" for s in steps) + ".")
        symptom = next(p for p in spec["probes"] if p["role"] == "symptom")
        if steps and rng.random() < (0.8 if careful else 0.3) and symptom.get("http"):
            check = f"curl -s -o /dev/null -w '%{{http_code}}' {symptom['http']}"
            if symptom["host"] != default:
                check = f"{symptom['host']}: {check}"
            lines += ["", "## Verification", "", f"Then, expect {symptom.get('status') or 200}:",
                      "", "```bash", check, "```"]  # fmt: skip
        return "\n".join(lines) + "\n"


def _measure(ledger_path: Path, run_ids: list[str], workers: int) -> int:
    """Measure the outcomes of `run_ids` in fresh labs, `workers` at a time; how many."""
    from agentledger.outcomes.check import lab_runs, measure_and_record
    from agentledger.store.ledger import Ledger

    with Ledger.open(ledger_path) as ledger:
        runs = lab_runs(ledger, run_ids)
        chunks = [runs[i::workers] for i in range(workers)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            counted = pool.map(lambda chunk: sum(1 for _ in measure_and_record(ledger, chunk)),
                               chunks)  # fmt: skip
            return sum(counted)


def _run_ids(ledger_path: Path) -> set[str]:
    runs = ledger_path / "runs"
    return {p.name for p in runs.iterdir()} if runs.is_dir() else set()


def main_trial() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--ledger", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=10, help="Rounds over every scenario.")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="Outcome checks at a time.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--minutes", type=float, default=None,
        help="Start no new round after this many minutes; report the rounds done.",
    )  # fmt: skip
    parser.add_argument(
        "--harness", choices=["tool-agent", "agents-sdk"], default="tool-agent",
        help="agentledger's own tool agent, or the OpenAI Agents SDK's loop (bench/agents_sdk).",
    )  # fmt: skip
    args = parser.parse_args()
    trial = Trial(args.seed)
    runner = CliRunner()
    started = time.monotonic()
    rounds = 0
    with LLMServer() as server:
        server.responder = trial.respond
        agent = write_agent(
            args.ledger.parent / f"{args.ledger.name}-agent", args.harness, server.url
        )
        # One round is every scenario once per model, so the rounds done when time runs out
        # are whole: each scenario and model has the same number of repeats. --no-cache: each
        # round asks the models afresh (the tool agent's turns go through the response cache,
        # and a round is a new `run` whose first request is the same as the last round's).
        for _ in range(args.repeat):
            if args.minutes is not None and time.monotonic() - started > 60 * args.minutes:
                break
            before = _run_ids(args.ledger)
            t0 = time.monotonic()
            result = runner.invoke(
                main,
                ["run", str(packaged_labs_dir()), "--agent", str(agent),
                 "--ledger", str(args.ledger), "--model", "mock-careful", "--model", "mock-hasty",
                 "--concurrency", str(args.concurrency), "--no-outcome", "--no-cache", "-q"],
                env={"OPENAI_API_KEY": "sk-local"},
            )  # fmt: skip
            new = sorted(_run_ids(args.ledger) - before)
            t1 = time.monotonic()
            measured = _measure(args.ledger, new, args.workers)
            rounds += 1
            print(
                f"round {rounds}: {len(new)} runs in {t1 - t0:.0f} s, {measured} outcomes in "
                f"{time.monotonic() - t1:.0f} s; load {os.getloadavg()[0]:.1f}; "
                f"{result.output.strip().splitlines()[0] if result.output.strip() else ''}",
                flush=True,
            )
    for args_ in (["judge"], ["report", "outcomes"],
                  ["agreement", "--a", "judge:rules", "--b", "labels:lab"]):  # fmt: skip
        done = runner.invoke(main, [*args_, "--ledger", str(args.ledger)])
        print(f"$ agentledger {' '.join(args_)}\n{done.output}")
    elapsed = time.monotonic() - started
    print(json.dumps({"rounds": rounds, "plans": trial.plans, "wall_s": round(elapsed)}))
    return 0


if __name__ == "__main__":
    sys.exit(main_trial())
