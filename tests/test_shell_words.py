"""Words bash makes that the command line does not show (issue 33, "bash and the parser
disagree"): word splitting of unquoted expansions (`a${IFS}-o`), brace expansion
(`-{delete,print}`), `~+` and `~-`. The classifier must see the words bash gives the command,
or refuse; an allow pattern never vouches for such a command.

The brace expansion is checked against the bash on this machine: generated words through
`printf` (no command runs: the words hold no substitution) and through the classifier."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from agentledger.runner.shell_gate import Gate, load_policy
from agentledger.shell.braces import LIMIT, TooMany, expand
from agentledger.shell.classifier import CommandVisitor, classify, walk
from agentledger.shell.knowledge import READ_ONLY, UNKNOWN

SPLIT = {
    "find, glob then IFS": "find /tmp/d -name keep*$IFS-delete",
    "tar, IFS": "tar -tf a$IFS--to-command=id",
    "sort, ${IFS}": "sort a${IFS}-o${IFS}/tmp/x",
    "git log": "git log x${IFS}--output=F",
    "substring of IFS": "sort a${IFS:0:1}-o",
    "the line itself": "sort x$BASH_EXECUTION_STRING",
    "command substitution": "sort a$(printf ' -o /tmp/x')",
    "arithmetic": "sort a$((1))",
    "an option's value": "find /x -name $X",
    "in a trailing position": "sort /etc/hosts x$X",
    "over ssh": "ssh h 'sort a${IFS}-o${IFS}/tmp/x'",
    "OLDPWD": "find ~- -name x",
    "PWD": "find ~+ -name x",
    "quoted, leading": 'sort "$X"',
    "quoted $@": 'sort "a$@"',
    "quoted array": 'sort "a${X[@]}"',
    "quoted names": 'sort "a${!BASH@}"',
}
BRACES = {
    "find -delete": "find /tmp/d/ -{delete,print}",
    "tar --to-command": "tar -tf a --to-comm{and=id,}",
    "git log --output": "git log --out{put=/tmp/x,}",
    "sort -o": "sort {a,-o,/tmp/x}",
    "ssh words": "ssh h find / -{delete,print}",
    "ssh line": "ssh h 'find / -{delete,print}'",
    "sequence": "sort {-o,x}{1..2}",
    "nested": "sort {a,{-o,b}} /tmp/x",
    "quoted element": "sort {a,'-o'} /tmp/x",
    "after ${}": "sort ${x}{a,-o} /tmp/x",
    "a literal {} inside": "sort {-o,{}} /tmp/x",
    "sudo": "sudo sort {-o,/tmp/x}",
}


@pytest.mark.parametrize("line", list(SPLIT.values()), ids=list(SPLIT))
def test_words_bash_splits_are_refused_where_options_write(line: str) -> None:
    found = classify(line)
    assert found.kind != READ_ONLY, found
    assert any(part.kind != READ_ONLY and part.reason for part in found.parts)


@pytest.mark.parametrize("line", list(BRACES.values()), ids=list(BRACES))
def test_brace_expansion_is_classified_as_bash_runs_it(line: str) -> None:
    found = classify(line)
    assert found.kind != READ_ONLY, found


@pytest.mark.parametrize(
    "line",
    [
        "ls /etc/{passwd,group}",
        "echo $HOME",
        "cat /var/log/{syslog,messages}",
        "ls -la /etc/{ssh,pam.d}/",
        "echo {1..3} {a..c}",
        'sort "a$X" /etc/hosts',  # quoted: one word, starting with a
        "echo a${IFS}-n",  # echo has no option that writes
        "find /etc -name '{a,-delete}'",
        'find /etc -name "x{a,b}"',
        "find /etc -name x\\{a,-delete}",
        "grep -r x /etc/{hosts,hostname}",
        "find ~ -maxdepth 1 -name x",
        "echo {} {a} x{}y",
        'sort "a${#X[@]}" /etc/hosts',
    ],
)
def test_ordinary_lines_still_run(line: str) -> None:
    assert classify(line).kind == READ_ONLY, classify(line)


def test_an_expansion_to_too_many_words_is_refused_not_expanded() -> None:
    for line in ["cat /etc/{1..100000000}", "cat {1..10}{1..10}{1..11}", "cat {a,b}{1..999}"]:
        found = classify(line)
        assert found.kind == UNKNOWN
        assert any("brace expansion makes more than" in part.reason for part in found.parts)
    with pytest.raises(TooMany):
        expand("{1..9999999999999999999}")
    assert len(expand(f"{{1..{LIMIT}}}")) == LIMIT


class _Words(CommandVisitor):
    def __init__(self) -> None:
        self.argv: list[list[str | None]] = []

    def command(self, words, via, text, kind, reason):  # type: ignore[no-untyped-def]
        self.argv.append([word.value if not word.split else None for word in words])


def test_brace_words_are_the_words_bash_gives_the_command(tmp_path: Path) -> None:
    """Generated words (braces, commas, sequences, quotes, escapes, `${}`) through bash's
    printf and through the classifier: the same words, whenever the classifier knows them."""
    pick = random.Random(33)
    pieces = ["{", "}", ",", "..", "a", "b", "1", "0", "-", "x", "3", "Z", "'", '"', "\\",
              "${x}", "$'-o'", "{a,b}", "{1..3}", "-o", "''", "~"]  # fmt: skip
    words = {"".join(pick.choice(pieces) for _ in range(pick.randint(1, 8))) for _ in range(900)}
    cases = []
    for word in sorted(words):
        seen = _Words()
        line = f"printf '%s\\0' {word}"
        found = walk(line, seen)
        if any("parse" in part.reason for part in found.parts) or len(seen.argv) != 1:
            continue  # an open quote: bash runs nothing either
        if None not in seen.argv[0]:  # else only known at run time
            cases.append((line, seen.argv[0][2:]))
    source = tmp_path / "lines"
    source.write_bytes(b"".join(line.encode() + b"\0" for line, _ in cases))
    driver = "while IFS= read -r -d '' line; do eval \"$line\"; printf '\\1'; done < \"$1\""
    # HOME=~ keeps `~` as written (the classifier reads it as written, paths resolve it).
    done = subprocess.run(["bash", "-c", driver, "bash", str(source)], capture_output=True,
                          env={"HOME": "~"}, timeout=60)  # fmt: skip
    outputs = done.stdout.decode("utf-8", "surrogateescape").split("\x01")
    assert len(outputs) == len(cases) + 1
    for (line, mine), output in zip(cases, outputs, strict=False):
        theirs = output.split("\x00")[:-1]
        if not mine:
            theirs = [item for item in theirs if item]  # printf with no word prints one
        assert mine == theirs, line
    assert len(cases) > 300


def test_expand_follows_bash_on_words_without_quotes() -> None:
    pick = random.Random(7)
    alphabet = ["{", "}", ",", "..", "a", "b", "1", "0", "-", "x", "3", "Z", "2"]
    words = sorted(
        {"".join(pick.choice(alphabet) for _ in range(pick.randint(1, 9))) for _ in range(2000)}
    )
    script = "".join(f"printf '%s\\0' {word}; printf '\\1'\n" for word in words)
    done = subprocess.run(["bash", "-c", script], capture_output=True, env={}, timeout=60)
    for word, output in zip(words, done.stdout.decode().split("\x01"), strict=False):
        theirs = [item for item in output.split("\x00")[:-1] if item]
        assert [item for item in expand(word) if item] == theirs, word


REMEDIATE = "mode: remediate\non_mutating: deny\non_unknown: deny\nallow: ['systemctl reload *']\n"


@pytest.mark.parametrize(
    "line",
    [
        "systemctl reload x${IFS}--root=/tmp",
        "systemctl reload {x,--root=/tmp}",
        'systemctl reload "$UNIT"',
        "sudo systemctl reload x$IFS--root=/tmp",
    ],
)
def test_an_allow_pattern_never_vouches_for_words_bash_makes(line: str, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(REMEDIATE)
    gate = Gate(load_policy(policy), ci=False)
    decision = gate.decide(line)
    assert decision.decision == "denied", decision.reason
    assert "does not vouch for it" in decision.reason
    assert gate.decide("systemctl reload nginx").decision == "allowed"
