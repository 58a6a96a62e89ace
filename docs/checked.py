"""Checked command blocks: every `$ agentledger ...` shown in README.md and docs/*.md is run.

A fenced block whose output is real is preceded by a marker comment naming the set-up it runs in:

    <!-- check: demo -->
    ```
    $ agentledger report gap --ledger agentledger-demo
    (output, rewritten by `make docs`)
    ```

Set-ups (each built once per generator run, in a temporary directory, by the commands shown):

- `empty`: an empty working directory (no ledger).
- `samples`: `.agentledger` holding the bundled sample runs, imported and judged:
  `agentledger import --tag sample=true --agent-name ghost src/agentledger/data/sample_runs`, then
  `agentledger judge --diagnosis --suite src/agentledger/data/suites/netops`.
- `demo`: the ledger `agentledger demo agentledger-demo` builds, at `agentledger-demo`.
- `traces`: no ledger, and the traces docs/traces.md imports: `openhands/` (the two OpenHands
  trajectories of tests/data), `traj_broken.json`, `own/use_case_m.jsonl` (the plain format),
  `security_guide.eval` (an Inspect AI log of the mock model, kept in tests/data) and
  `agent_spans.json` (OTLP JSON made by the OpenTelemetry SDK, docs/trace_inputs.py).
- `trajectory`: no ledger, and the ops-trajectory blind set (tests/trajectory_blind) with the
  real OpenHands trajectories of shared/samples, as docs/trajectory-judge.md imports them.
- `import`: no ledger, and the inputs docs/import.md describes: `exported/` (two runs of another
  harness), `identity.csv`, `prompts/base.txt`, copies of sample runs broken one way each
  (`bad-json/`, `bad-version/`, `bad-link/`), and `loose/run42` (a run without metadata).

Every working directory also holds `src` (a link to the checkout's `src/`) and `examples` (a
copy of the bundled examples), so the paths the docs use resolve. Each document gets its own copy
of each set-up it names; its blocks of that set-up run in order in that copy, so a later block
sees what an earlier one did (a file written, a run recorded), and `cd DIR` lines carry over.

Inside a block, a line starting with `$ ` is a command (a trailing backslash continues it on the
next line); every other line is output and is replaced. A plain `agentledger ...` line runs in
this process through click's CliRunner; a line with shell syntax (a pipe, `;`, a redirection,
`$?`, `echo ...`) runs under `bash` with the same `agentledger` on PATH, and `$?` is the status of
the previous command. Output is stdout and stderr as a terminal shows them, with trailing spaces
removed.

A block can also be a file the following blocks use: `<!-- check: SETUP file=PATH -->` writes the
block's text to PATH in that set-up's working directory, and shows it unchanged.

What varies between runs is normalised, in the output and back again in the commands, so a
shown id can be typed into a later command:

- a timestamp with a random suffix made now (`..._20261201T213941Z_9fc98c`, run and decision
  ids; `lbl_20261201T213941Z_9fc98c1a`, label ids) becomes `20260501T120000Z_` and a counter in
  order of first appearance, as wide as the random part (`000001`, `00000001`, ...);
- today's date, with any time after it, becomes 2026-05-01 12:00:00 (same width, so tables stay
  aligned), and this ISO week 2026-W18;
- the temporary working directory becomes `/home/ops/work`, and the checkout's root is dropped, so a
  packaged file shows as `src/agentledger/data/...`;
- durations the program measured (`in 0.3s`, `"duration_ms": 3.4`) become zero;
- the hash of a journal checkpoint (`<count>:sha256:<hex>`), which covers the time of every
  entry, becomes a stable stand-in.

A block that cannot run here (a live model call needing a key, timings of this machine) is
marked `<!-- illustrative: WHY -->`; it is left as written and listed by `--check`. A fenced
block holding a `$ ` line with neither marker is an error, so no shown output goes unchecked.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MARKER = re.compile(r"^<!--\s*(check|illustrative):\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)(.*)$")
SHELL_SYNTAX = re.compile(r"[|;&<>`$(){}*?]")
NORMAL_STAMP = "20260501T120000Z"
NORMAL_DATE = "2026-05-01"
WORK = "/home/ops/work"


class DocsError(Exception):
    """A doc's markers or commands cannot be run: names the file and line."""


@dataclass
class Command:
    """One `$ ...` line (with its continuation lines) and whether a blank line preceded it."""

    lines: list[str]
    blank_before: bool

    @property
    def text(self) -> str:
        """The command as the shell reads it: continuation lines joined."""
        return "\n".join(line[2:] if i == 0 else line for i, line in enumerate(self.lines))


@dataclass
class Block:
    """A marked fenced block: where it stands, its marker, its body."""

    path: Path
    line: int  # 1-based line of the opening fence
    kind: str  # check | illustrative
    argument: str
    body: list[str]

    @property
    def label(self) -> str:
        """How a message names the block: file, line and its first command."""
        first = next((line[2:] for line in self.body if line.startswith("$ ")), None)
        if first is None:
            first = next((line for line in self.body if line.strip()), "")
        return f"{display_path(self.path)}:{self.line} `{first}`"


def display_path(path: Path) -> str:
    """The path relative to the checkout when it is inside it."""
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(ROOT))
    return str(path)


def parse(path: Path, text: str) -> tuple[list[str], list[tuple[int, int, Block | None]]]:
    """The file's lines, and each fenced block's (start, end) line indexes and its marker.

    An unmarked block holding a `$ ` line is an error: its output would go unchecked.
    """
    lines = text.split("\n")
    blocks: list[tuple[int, int, Block | None]] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence = opening.group(1)
        end = i + 1
        while end < len(lines) and not lines[end].startswith(fence):
            end += 1
        if end == len(lines):
            raise DocsError(f"{display_path(path)}:{i + 1}: a fenced block is never closed")
        body = lines[i + 1 : end]
        marker = MARKER.match(lines[i - 1]) if i else None
        block = None
        if marker:
            block = Block(path, i + 1, marker.group(1), marker.group(2), body)
        elif any(line.startswith("$ ") for line in body):
            raise DocsError(
                f"{display_path(path)}:{i + 1}: a block shows commands but has no marker; "
                "put `<!-- check: SETUP -->` (or `<!-- illustrative: WHY -->`) above it"
            )
        blocks.append((i, end, block))
        i = end + 1
    return lines, blocks


def commands_of(block: Block) -> list[Command]:
    """The block's commands, in order."""
    commands: list[Command] = []
    current: Command | None = None
    previous = ""
    for line in block.body:
        if current is not None and current.lines[-1].endswith("\\"):
            current.lines.append(line)
        elif line.startswith("$ "):
            current = Command([line], blank_before=bool(commands) and previous == "")
            commands.append(current)
        previous = line
    if not commands:
        where = f"{display_path(block.path)}:{block.line}"
        raise DocsError(f"{where}: a checked block has no `$ ` line")
    return commands


class Normaliser:
    """Replaces what varies between runs by stable text, remembering the way back."""

    def __init__(self, work: Path, *built_in: Path) -> None:
        # the set-up was built in another directory, which what it recorded may name
        self.places = [str(place) for place in (work, *built_in)]
        self.back: dict[str, str] = {}
        self.ids: dict[str, str] = {}
        self.heads: dict[str, str] = {}
        self.today = {datetime.now(UTC).date().isoformat()}

    def text(self, output: str) -> str:
        """`output` with ids made now, today's date, paths and durations normalised."""
        for place in self.places:
            output = output.replace(place, WORK)
        output = output.replace(str(ROOT) + "/", "")
        output = re.sub(
            r"(?<!\d)\d{8}T\d{6}Z_[0-9a-f]{6}(?:[0-9a-f]{2})?(?![0-9A-Za-z])", self._id, output
        )
        self.today.add(datetime.now(UTC).date().isoformat())  # a run across midnight
        for day in self.today:
            output = re.sub(re.escape(day) + r"([ T]\d\d:\d\d(:\d\d(\.\d+)?)?)?", _date, output)
            output = output.replace(day.replace("-", ""), NORMAL_DATE.replace("-", ""))
            output = output.replace(_iso_week(day), _iso_week(NORMAL_DATE))
        output = re.sub(r"\bin \d+(\.\d+)?s\b", _duration, output)
        output = re.sub(r'("duration_ms": ?)\d+(\.\d+)?', r"\g<1>0.0", output)
        output = re.sub(r"(?<=[0-9]:)sha256:[0-9a-f]{64}\b", self._head, output)
        return "\n".join(line.rstrip() for line in output.split("\n"))

    def _id(self, match: re.Match[str]) -> str:
        real = match.group(0)
        if real not in self.ids:
            # As many digits as the random part had (6 in run ids, 8 in label ids): same width.
            width = len(real) - len(NORMAL_STAMP) - 1
            shown = f"{NORMAL_STAMP}_{len(self.ids) + 1:0{width}d}"
            self.ids[real] = shown
            self.back[shown] = real
        return self.ids[real]

    def _head(self, match: re.Match[str]) -> str:
        """A checkpoint's hash (``<count>:sha256:<hex>``) covers the time of every journal
        entry: shown as a stable stand-in, numbered in order of first appearance."""
        real = match.group(0)
        if real not in self.heads:
            seed = f"journal head {len(self.heads) + 1}".encode()
            self.heads[real] = "sha256:" + hashlib.sha256(seed).hexdigest()
            self.back[self.heads[real]] = real
        return self.heads[real]

    def command(self, text: str) -> str:
        """`text` with every normalised id a user copied from an output turned back into it."""
        for shown, real in self.back.items():
            text = text.replace(shown, real)
        return text


def _iso_week(day: str) -> str:
    """The ISO week of a date, as reports print it (2026-W18)."""
    year, week, _ = date.fromisoformat(day).isocalendar()
    return f"{year}-W{week:02d}"


def _date(match: re.Match[str]) -> str:
    """Today's date, and the time after it, as the normal date at noon, keeping the width."""
    digits = iter("120000" + "0" * 20)
    time = "".join(next(digits) if c.isdigit() else c for c in match.group(1) or "")
    return NORMAL_DATE + time


def _duration(match: re.Match[str]) -> str:
    """A measured duration (`in 1.37s`) as zero, with as many decimals."""
    decimals = match.group(1)
    return "in 0" + ("." + "0" * (len(decimals) - 1) if decimals else "") + "s"


# A user's terminal: no CI (a doc shows `CI=true ...` when it means it), no colour, no ledger
# chosen by the environment; the response cache inside the working directory.
UNSET = ("CI", "AGENTLEDGER_DIR", "GITHUB_ACTIONS", "FORCE_COLOR")


def _cli_env(work: Path, chosen: dict[str, str] | None = None) -> dict[str, str | None]:
    """The environment of a user's terminal; `chosen` is what a doc tells the user to export
    (`AGENTLEDGER_DIR=agentledger-demo`)."""
    return {
        **dict.fromkeys(UNSET),
        **(chosen or {}),
        "NO_COLOR": "1",
        "COLUMNS": "100",
        "AGENTLEDGER_CACHE_DIR": str(work / ".cache"),
        "AGENTLEDGER_STATE_DIR": str(work / ".state"),
        "PYTHONUNBUFFERED": "1",
    }


@contextlib.contextmanager
def _inside(directory: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


def run_cli(
    args: list[str], cwd: Path, work: Path, chosen: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run `agentledger ARGS` in this process; its exit code and what a terminal shows."""
    from agentledger.cli import main

    with _inside(cwd):
        result = CliRunner(env=_cli_env(work, chosen)).invoke(
            main, args, prog_name="agentledger", terminal_width=100
        )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise DocsError(f"`agentledger {shlex.join(args)}` crashed: {result.exception!r}")
    return result.exit_code, result.output


def run_shell(
    text: str, status: int, cwd: Path, work: Path, chosen: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run a shell line under bash with this agentledger first on PATH; `$?` starts at `status`."""
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    env.update((name, value) for name, value in _cli_env(work, chosen).items() if value is not None)
    env["PATH"] = f"{BIN}{os.pathsep}{os.environ['PATH']}"
    done = subprocess.run(
        ["bash", "-c", f"(exit {status})\n{text}"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, done.stdout


def _workspace(directory: Path) -> Path:
    directory.mkdir(parents=True)
    (directory / "src").symlink_to(ROOT / "src")
    shutil.copytree(ROOT / "src" / "agentledger" / "data" / "examples", directory / "examples")
    return directory


def _setup_samples(work: Path) -> None:
    data = "src/agentledger/data"
    for args in (
        ["import", "--tag", "sample=true", "--agent-name", "ghost", f"{data}/sample_runs"],
        ["judge", "--diagnosis", "--suite", f"{data}/suites/netops"],
    ):
        code, output = run_cli(args, work, work)
        if code:
            raise DocsError(f"set-up samples: `agentledger {shlex.join(args)}`: {output}")


def _setup_demo(work: Path) -> None:
    code, output = run_cli(["demo", "agentledger-demo"], work, work)
    if code:
        raise DocsError(f"set-up demo: `agentledger demo agentledger-demo` exited {code}: {output}")


_HARNESS_RUNS = {
    "run-001": ("2026-02-01T09:31:10Z", "tc qdisc show dev eth0", "tc qdisc del dev eth0 root"),
    "run-002": ("2026-02-02T09:31:02Z", "ip -s link show eth0", "ip link set eth0 mtu 1400"),
}


def _setup_import(work: Path) -> None:
    """Inputs of docs/import.md: another harness's export, and broken copies of sample runs."""
    samples = ROOT / "src" / "agentledger" / "data" / "sample_runs"
    for name, (when, looked, tried) in _HARNESS_RUNS.items():
        run = work / "exported" / name
        run.mkdir(parents=True)
        (run / "task.md").write_text("Latency to the database doubled since 09:00; find out why.\n")
        (run / "trajectory.md").write_text(f"Checked the qdisc first (`{looked}`).\n")
        (run / "final_report.md").write_text(
            f"# Report\nRoot cause: shaping on eth0.\nFix: `{tried}`\n"
        )
        (run / "env_snapshot.json").write_text('{"eth0": {"qdisc": "netem delay 100ms"}}\n')
        lines = [
            {"ts": when, "cmd": looked, "status": "ok", "exit": 0},
            {"ts": when, "cmd": tried, "status": "blocked"},
        ]
        (run / "commands.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (work / "identity.csv").write_text(
        "directory,run_id,scenario,model,provider,started_at,ended_at,tag:suite\n"
        "run-001,use_case_m_gpt-4o_20260201T093000Z,use_case_m,gpt-4o,openai,"
        "2026-02-01T09:30:00Z,2026-02-01T09:34:12Z,sentinel\n"
        "run-002,use_case_m_gpt-4o_20260202T093000Z,use_case_m,gpt-4o,openai,"
        "2026-02-02T09:30:00Z,2026-02-02T09:33:05Z,sentinel\n"
    )
    (work / "prompts").mkdir()
    (work / "prompts" / "base.txt").write_text("You are an SRE agent. Investigate, then report.\n")
    haiku_m = "use_case_m_haiku_20260312"
    broken = work / "bad-json" / haiku_m
    shutil.copytree(samples / haiku_m, broken)
    log = broken / "shell_audit_20260312.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('{"timestamp"', '{timestamp"', 1)
    log.write_text("".join(lines))
    broken = work / "bad-version" / haiku_m
    shutil.copytree(samples / haiku_m, broken)
    metadata = json.loads((broken / "metadata.json").read_text())
    (broken / "metadata.json").write_text(json.dumps({"schema_version": 3, **metadata}, indent=2))
    broken = work / "bad-link" / "use_case_b_haiku_20260308"
    shutil.copytree(samples / "use_case_b_haiku_20260308", broken)
    (broken / "passwd").symlink_to("/etc/passwd")
    loose = work / "loose" / "run42"
    loose.mkdir(parents=True)
    (loose / "report.md").write_text("# Report\nRoot cause: a netem delay on eth0.\n")
    (loose / "shell_audit.jsonl").write_text('{"command": "tc qdisc show dev eth0"}\n')


_OWN_TRACE = [
    {
        "run": {
            "model": "claude-haiku-4-5",
            "system_prompt": "You are Ghost, a network forensics agent.",
        }
    },
    {
        "actor": "user",
        "kind": "message",
        "content": "Packets to 10.0.0.7 are dropped.",
        "time": "2026-03-12T10:15:00Z",
    },
    {
        "actor": "agent",
        "kind": "command",
        "tool": "shell",
        "command": "iptables -L INPUT -n",
        "time": "2026-03-12T10:15:04Z",
    },
    {
        "actor": "tool",
        "kind": "command_output",
        "cause": 1,
        "exit_code": 0,
        "content": "DROP all -- 10.0.0.7 0.0.0.0/0",
        "time": "2026-03-12T10:15:05Z",
    },
    {
        "actor": "agent",
        "kind": "finish",
        "content": "Root cause: a DROP rule for 10.0.0.7 in INPUT.",
        "time": "2026-03-12T10:15:30Z",
    },
]


def _setup_traces(work: Path) -> None:
    """Inputs of docs/traces.md: OpenHands trajectories (the two kept in the tests' data), a
    broken one, a plain trace, an Inspect AI log of the mock model, OTLP spans of the SDK."""
    from trace_inputs import otel_spans

    data = ROOT / "tests" / "data"
    shutil.copytree(data / "openhands", work / "openhands")
    (work / "traj_broken.json").write_text(
        json.dumps(
            [
                {"id": 0, "source": "user", "action": "message", "args": {"content": "Go."}},
                {"id": 1, "source": "agent", "action": "run", "args": {"thought": "list"}},
            ]
        )
    )
    (work / "own").mkdir()
    lines = [json.dumps(line) + "\n" for line in _OWN_TRACE]
    (work / "own" / "use_case_m.jsonl").write_text("".join(lines))
    shutil.copy(data / "inspect" / "security_guide.eval", work / "security_guide.eval")
    otel_spans(work / "agent_spans.json")


def _shared_samples() -> Path:
    """The samples written by others, as tests/conftest.py finds them."""
    beside = ROOT.parents[1] / "shared" / "samples"
    return beside if beside.is_dir() else Path("/work/shared/samples")


def _setup_trajectory(work: Path) -> None:
    """Inputs of docs/trajectory-judge.md: the ops-trajectory blind set (tests/trajectory_blind):
    `openhands/` (its OpenHands sessions, a folder per model), `real/` (the real OpenHands
    trajectories of shared/samples/openhands), `own/` (plain traces), `inspect/` (Inspect AI
    logs), and `blind/` (the labels and the scenarios' knowledge)."""
    blind = ROOT / "tests" / "trajectory_blind"
    shutil.copytree(blind / "openhands", work / "openhands")
    shutil.copytree(blind / "own", work / "own")
    shutil.copytree(blind / "inspect", work / "inspect")
    (work / "blind").mkdir()
    shutil.copy(blind / "labels.csv", work / "blind" / "labels.csv")
    shutil.copytree(blind / "knowledge", work / "blind" / "knowledge")
    real = work / "real"
    real.mkdir()
    for model in ("claude-sonnet", "deepseek_r1", "deepseek_v3", "gpt-4o", "o3-mini"):
        source = _shared_samples() / "openhands" / model
        (real / model).mkdir()
        for path in sorted(source.glob("*.json")):
            shutil.copy(path, real / model / path.name)


SETUPS: dict[str, Callable[[Path], None]] = {
    "empty": lambda work: None,
    "samples": _setup_samples,
    "demo": _setup_demo,
    "import": _setup_import,
    "traces": _setup_traces,
    "trajectory": _setup_trajectory,
}


def _copy_tree(source: Path, target: Path) -> None:
    shutil.copytree(source, target, symlinks=True)


def _make_writable(path: Path) -> None:
    for place in [path, *path.rglob("*")]:
        if not place.is_symlink():
            place.chmod(place.stat().st_mode | 0o700)


@dataclass
class Session:
    """A working directory made from a set-up, for one document: its state carries over."""

    work: Path
    normaliser: Normaliser
    cwd: Path
    status: int = 0

    def run(self, command: Command) -> str:
        """Run one command; what it printed, normalised."""
        text = self.normaliser.command(command.text)
        cd = re.fullmatch(r"cd\s+(\S+)", text.strip())
        if cd:
            self.cwd = (self.cwd / cd.group(1)).resolve()
            self.status = 0
            return ""
        words = _plain_agentledger(text)
        if words is not None:
            self.status, output = run_cli(words, self.cwd, self.work)
        else:
            self.status, output = run_shell(text, self.status, self.cwd, self.work)
        return self.normaliser.text(output)


def _plain_agentledger(text: str) -> list[str] | None:
    """The arguments of a line that is only `agentledger ARGS` (no shell syntax), else None.

    `exec` and `guard` always go through bash: they have their own fast entry point.
    """
    joined = text.replace("\\\n", " ")
    try:
        words = shlex.split(joined)
    except ValueError:
        return None
    if len(words) < 2 or words[0] != "agentledger" or words[1] in ("exec", "guard"):
        return None
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", "", joined)
    if SHELL_SYNTAX.search(unquoted):
        return None
    return words[1:]


@dataclass
class Runner:
    """Builds each set-up once, then hands out a fresh copy per (document, set-up)."""

    scratch: Path
    built: dict[str, Path] = field(default_factory=dict)
    sessions: dict[tuple[Path, str], Session] = field(default_factory=dict)

    def session(self, path: Path, setup: str, where: str) -> Session:
        """The session of `setup` for the document `path`, made on first use."""
        if setup not in SETUPS:
            raise DocsError(f"{where}: unknown set-up {setup!r}; choose from {', '.join(SETUPS)}")
        key = (path, setup)
        if key not in self.sessions:
            if setup not in self.built:
                base = _workspace(self.scratch / "setups" / setup)
                SETUPS[setup](base)
                self.built[setup] = base
            work = self.scratch / "sessions" / str(len(self.sessions))
            _copy_tree(self.built[setup], work)
            normaliser = Normaliser(work, self.built[setup])
            self.sessions[key] = Session(work, normaliser, work)
        return self.sessions[key]

    def close(self) -> None:
        """Remove the scratch directory (sealed runs are read-only, so make them writable)."""
        if self.scratch.exists():
            _make_writable(self.scratch)
            shutil.rmtree(self.scratch)


def _options(argument: str) -> tuple[str, dict[str, str]]:
    setup, *rest = argument.split()
    options = {}
    for item in rest:
        name, _, value = item.partition("=")
        options[name] = value
    return setup, options


def render_block(block: Block, runner: Runner) -> list[str]:
    """The block's new body: each command followed by its real, normalised output."""
    where = f"{display_path(block.path)}:{block.line}"
    setup, options = _options(block.argument)
    session = runner.session(block.path, setup, where)
    if "file" in options:
        target = session.work / options["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(block.body) + "\n", encoding="utf-8")
        return block.body
    unknown = set(options) - {"file"}
    if unknown:
        raise DocsError(f"{where}: unknown marker option {sorted(unknown)[0]!r}")
    body: list[str] = []
    for command in commands_of(block):
        if command.blank_before:
            body.append("")
        body.extend(command.lines)
        output = session.run(command).rstrip("\n")
        if output:
            body.extend(output.split("\n"))
    return body


def render_file(path: Path, runner: Runner) -> tuple[str, list[Block], list[Block]]:
    """The file's new text, the checked blocks whose output changed, and its illustrative blocks."""
    lines, blocks = parse(path, path.read_text(encoding="utf-8"))
    out: list[str] = []
    changed: list[Block] = []
    illustrative: list[Block] = []
    position = 0
    for start, end, block in blocks:
        out.extend(lines[position : start + 1])
        body = lines[start + 1 : end]
        if block is not None and block.kind == "check":
            new = render_block(block, runner)
            if new != body:
                changed.append(block)
            body = new
        elif block is not None:
            illustrative.append(block)
        out.extend(body)
        position = end
    out.extend(lines[position:])
    return "\n".join(out), changed, illustrative


GENERATED_BY_SCRIPT = ("cli.md", "index-schema.md")


def checked_files() -> list[Path]:
    """README.md and every docs/*.md but the reference pages written whole, in a fixed order."""
    docs = sorted((ROOT / "docs").glob("*.md"))
    return [ROOT / "README.md", *(path for path in docs if path.name not in GENERATED_BY_SCRIPT)]


def generate(paths: list[Path], *, check: bool) -> int:
    """Rewrite (or, with `check`, compare) the command blocks of `paths`; 0 when up to date."""
    scratch = Path(tempfile.mkdtemp(prefix="agentledger-docs-"))
    runner = Runner(scratch)
    stale: list[Block] = []
    shown: list[Block] = []
    try:
        for path in paths:
            text, changed, illustrative = render_file(path, runner)
            shown.extend(illustrative)
            if check:
                stale.extend(changed)
            elif changed:
                path.write_text(text, encoding="utf-8")
    except DocsError as error:
        print(f"docs: {error}", file=sys.stderr)
        return 2
    finally:
        runner.close()
    for block in shown:
        print(f"illustrative, not checked: {block.label}: {block.argument}")
    for block in stale:
        print(f"out of date: {block.label}; run `make docs`", file=sys.stderr)
    return 1 if stale else 0
