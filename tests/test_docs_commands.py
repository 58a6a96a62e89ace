"""The commands the docs show outside checked blocks run as written after `make demo`.

docs/checked.py re-runs every marked block (`<!-- check: ... -->`). What it does not see: the
unmarked blocks of commands without a `$ ` prompt (the synopses at the top of a page, a shell
snippet to copy), commands quoted in prose, and illustrative blocks. Here every such line of
README.md and docs/*.md is found. A command given in full is run where a new user runs it: in a
directory holding what `make demo` made (the Makefile's own `agentledger demo ...` lines, run as
it runs them), with `AGENTLEDGER_DIR` exported as README says, and must not end in a usage or
input error (exit 2) or an integrity failure (exit 3); so are the lines of illustrative blocks
that name a ledger `make demo` made. A command named in prose (`agentledger runs --judge`) must
name a real command and real options. A line that cannot run here is listed in NOT_RUN with the
reason, and that list must stay true to the docs.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from agentledger.cli import main

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))
import checked  # noqa: E402

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GENERATED = ("cli.md", "index-schema.md")
SYNOPSIS = re.compile(r"(?<!\$)\b[A-Z][A-Z_]*\b|\[|\.\.\.|<|\\\|")
"""A placeholder (RUN_ID, [--json], ...): the line is a synopsis, not a command."""
ASSIGNMENT = re.compile(r"^[A-Z_]+=\S+$")
MAKE_DEMO = re.compile(r"^\t\$\(BIN\)/agentledger (demo .*)$", re.MULTILINE)
"""A line of the Makefile's `demo` recipe that runs agentledger."""
DEMO_LEDGERS = ("agentledger-demo", "agentledger-demo-labs")
EXPORTED = {"AGENTLEDGER_DIR": "agentledger-demo"}
"""What README tells a user to export after `make demo`, so the docs' commands that name no
ledger read the demo's."""

NOT_RUN = {
    "agentledger exec -- 'journalctl -u nginx | grep -c error'": (
        "runs inside an agent's run: the runner sets AGENTLEDGER_RUN_DIR"
    ),
    "agentledger exec -- grep -c 'a b' /etc/hosts": (
        "runs inside an agent's run: the runner sets AGENTLEDGER_RUN_DIR"
    ),
    "agentledger exec -- true": "runs inside an agent's run: the runner sets AGENTLEDGER_RUN_DIR",
    "agentledger demo agentledger-demo": "is `make demo`, run before the others",
    "agentledger review --next": "asks a person on a terminal (tests/test_labels_prompt.py)",
    "agentledger serve --ledger agentledger-demo": (
        "serves the viewer until stopped (tests/test_viewer*.py run it)"
    ),
    "agentledger labels import labels.csv --source team-b": "a team's own labels.csv",
    "agentledger import --format promptfoo results.json": "a promptfoo results file of yours",
    "agentledger lab check": "the lab to check is named in the next line of its page",
    "agentledger lab up": "starts a lab: needs user namespaces (tests/test_labs*.py)",
    "agentledger lab snapshot": "needs a lab that is up",
    "agentledger demo --labs": "runs real labs (tests/test_outcomes*.py)",
    "agentledger init --storage s3://team-ledger/agents "
    "--index postgresql://agentledger@db.internal:5432/agentledger": (
        "a team's own S3 bucket and PostgreSQL server (tests/test_scale*.py use real ones)"
    ),
}


def _code_spans(line: str) -> list[str]:
    return re.findall(r"`(agentledger\s[^`]+)`", line)


def documented() -> list[tuple[str, str, str]]:
    """(where, kind, line) of each command outside checked blocks: `block` lines of unmarked
    fenced blocks (a variable assignment before them carried into each), `prose` spans, and
    `illustrative` lines that name a ledger `make demo` made."""
    found: list[tuple[str, str, str]] = []
    for doc in DOCS:
        if doc.name in GENERATED:
            continue
        lines = doc.read_text(encoding="utf-8").splitlines()
        marker, fenced, assigned = "", False, []
        for number, line in enumerate(lines, start=1):
            where = f"{doc.relative_to(ROOT)}:{number}"
            if line.startswith("```"):
                fenced = not fenced
                before = [text for text in lines[: number - 1] if text.strip()]
                marker = before[-1] if before and before[-1].startswith("<!-- ") else ""
                assigned = []
                continue
            if fenced and marker.startswith("<!-- illustrative"):
                if line.startswith("$ agentledger ") and _names_a_demo_ledger(line):
                    found.append((where, "illustrative", line.removeprefix("$ ").strip()))
            elif fenced and not marker.startswith("<!-- check"):
                if ASSIGNMENT.match(line.strip()):
                    assigned.append(line.strip())
                elif line.startswith(("agentledger ", "$ agentledger ")):
                    command = re.sub(r"\s+#\s.*$", "", line.removeprefix("$ ")).strip()
                    found.append((where, "block", "; ".join([*assigned, command])))
            elif not fenced:
                found.extend((where, "prose", span.strip()) for span in _code_spans(line))
    return found


def _names_a_demo_ledger(line: str) -> bool:
    """A whole line (no continuation) whose `--ledger` is one `make demo` made."""
    ledgers = "|".join(DEMO_LEDGERS)
    named = re.search(rf"\s--ledger[ =]({ledgers})(\s|$)", line)
    return named is not None and not line.endswith("\\")


def _words(line: str) -> list[str]:
    return shlex.split(line.split("; ")[-1])


def _command(words: list[str]) -> tuple[click.Command, list[str]]:
    """The (sub)command the words name, and the words after it."""
    command: click.Command = main
    rest = words[1:]
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(click.Context(command), rest[0])
        if sub is None:
            break
        command, rest = sub, rest[1:]
    return command, rest


def _is_reference(line: str) -> bool:
    """A command named in prose, not given in full: no argument after its options
    (`agentledger gc`, `agentledger runs --judge`); `_command_named` checks it."""
    command, rest = _command(_words(line))
    valued = {
        name
        for param in command.params
        if isinstance(param, click.Option) and not param.is_flag
        for name in param.opts
    }
    given, words = [], iter(rest)
    for word in words:
        if word in valued:
            next(words, None)
        elif not word.startswith("-"):
            given.append(word)
    return not given


def _to_run() -> list[tuple[str, str]]:
    lines = []
    for where, kind, line in documented():
        last = line.split("; ")[-1]
        if "..." in last or SYNOPSIS.search(re.sub(r"'[^']*'|\"[^\"]*\"", "", last)):
            continue
        if line.split("; ")[-1] in NOT_RUN or (kind == "prose" and _is_reference(line)):
            continue
        lines.append((where, line))
    return lines


def test_the_docs_have_commands_outside_checked_blocks_and_the_finder_sees_them() -> None:
    found = documented()
    lines = {line for _, _, line in found}
    assert "agentledger runs --tag suite=netops --no-backfilled --csv" in lines
    assert any(line.endswith("agentledger sentinel protocol $S") for line in lines)
    assert "agentledger criteria list --pack ops-trajectory" in lines
    assert len(_to_run()) > 30


def test_every_not_run_entry_is_still_in_the_docs() -> None:
    lines = {line.split("; ")[-1] for _, _, line in documented()}
    assert sorted(set(NOT_RUN) - lines) == []


def test_every_command_named_in_prose_is_a_real_command_with_real_options() -> None:
    wrong = []
    for where, _kind, line in documented():
        words = _words(re.sub(r"\s*(\[|\\\|).*$", "", line))
        if words[1].endswith(":"):  # a message it prints (`agentledger guard: rejected: ...`)
            continue
        command, rest = _command(words)
        names = {name for param in command.params for name in param.opts + param.secondary_opts}
        names |= {"--help"}  # click adds it to every command, outside `params`
        for word in rest:
            option = word.split("=", 1)[0]
            if option.startswith("--") and option != "--" and option not in names:
                wrong.append(f"{where}: `{line}`: {command.name} has no {option}")
        if rest and not rest[0].startswith("-") and isinstance(command, click.Group):
            wrong.append(f"{where}: `{line}`: no command {rest[0]!r} in {command.name}")
    assert wrong == []


def make_demo_commands() -> list[list[str]]:
    """The agentledger commands of the Makefile's `demo` target, in order (after its `rm`)."""
    return [shlex.split(line) for line in MAKE_DEMO.findall((ROOT / "Makefile").read_text())]


def test_the_demo_set_up_is_the_makefiles_and_readme_says_what_to_export() -> None:
    commands = make_demo_commands()
    assert [words[-1] for words in commands] == list(DEMO_LEDGERS)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "export AGENTLEDGER_DIR=agentledger-demo" in readme
    assert any(kind == "illustrative" for _, kind, _ in documented())


def _make_demo(work: Path) -> None:
    """What `make demo` leaves: its agentledger lines run as it runs them, the two at once."""
    env = {name: value for name, value in os.environ.items() if name not in checked.UNSET}
    env.update((k, v) for k, v in checked._cli_env(work).items() if v is not None)
    started = [
        subprocess.Popen(
            [str(checked.BIN / "agentledger"), *words],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for words in make_demo_commands()
    ]
    for words, process in zip(make_demo_commands(), started, strict=True):
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0, f"`agentledger {shlex.join(words)}`: {output[-2000:]}"
    for name in DEMO_LEDGERS:
        assert (work / name / "ledger.json").is_file(), f"make demo made no {name}"


@pytest.mark.slow
def test_every_command_given_in_full_runs_after_make_demo_without_a_usage_or_integrity_error(
    tmp_path: Path,
) -> None:
    work = checked._workspace(tmp_path / "work")
    _make_demo(work)
    failed = []
    for where, line in _to_run():
        words = checked._plain_agentledger(line)
        if words is not None:
            code, output = checked.run_cli(words, work, work, EXPORTED)
        else:
            code, output = checked.run_shell(line, 0, work, work, EXPORTED)
        if code in (2, 3):
            failed.append(f"{where}: `{line}` exited {code}: {output.strip()[-300:]}")
    assert failed == []
