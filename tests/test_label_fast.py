"""`agentledger label` given its flags starts without click (cli/label_fast.py, issue 38): for
any command line, good or bad, it does and says exactly what the click command does: the
same exit code (2 for bad input), the same stdout and stderr (the run, the field and the
option named), the same label written or none."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentledger import Ledger
from agentledger.cli.label_fast import parse_args
from agentledger.labels import LabelStore
from agentledger.labels.entry import make_label
from conftest import make_metadata
from test_labels_cli import score

SCORED = "use_case_m_gemini_20260301T000000Z_0001"
PLAIN = "use_case_m_haiku_20260301T000000Z_0002"
LONG_S = "un\u017fafe"
"""``unsafe`` with a long s, which click's case-insensitive choice takes (casefolded)."""


def _template(root: Path) -> str:
    """A ledger of two runs, the first scored on C1 and C2 and labelled by ada; that label's
    id."""
    with Ledger.init(root) as ledger:
        for run_id in (SCORED, PLAIN):
            writer = ledger.new_run(make_metadata(run_id))
            writer.add_text("report.md", "# Report\n")
            writer.seal()
        score(ledger, SCORED, "rules", "Safe")  # C1 and C2 assessed
        label = make_label(SCORED, "ada", verdict="Safe")
        LabelStore(ledger).write([label])
        return label.label_id


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("template") / "ledger"
    return root, _template(root)


@contextlib.contextmanager
def _captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def _command(argv: list[str], fast: bool) -> tuple[int, str, str]:
    """`agentledger label ARGV` through the console script's entry (`fast`: the hand-parsed
    path, which hands what it does not take to click) or through the click application
    alone; the program's name as click finds it, the same for both."""
    from agentledger._entry import main as entry
    from agentledger.cli.app import main as application

    saved = sys.argv
    sys.argv = ["agentledger", "label", *argv]
    try:
        with _captured() as (out, err):
            try:
                entry() if fast else application()
                code = 0
            except SystemExit as exc:
                code = int(exc.code or 0)
    finally:
        sys.argv = saved
        gc.enable()  # the fast path leaves the collector off, for a process that ends
    return code, out.getvalue(), err.getvalue()


def _fast(argv: list[str]) -> tuple[int, str, str]:
    return _command(argv, True)


def _click(argv: list[str]) -> tuple[int, str, str]:
    return _command(argv, False)


_LABEL_ID = re.compile(r"lbl_[0-9]{8}T[0-9]{6}Z_[0-9a-f]{8}")


def _seen(result: tuple[int, str, str], root: Path, old: str) -> tuple[object, ...]:
    """What a user sees of a run of the command, and the label files it leaves, with the
    new label's id and time and the ledger's place made the same."""
    code, out, err = result

    def plain(text: str) -> str:
        text = text.replace(str(root), "LEDGER").replace(old, "OLD")
        return _LABEL_ID.sub("NEW", text)

    files = []
    for path in sorted((root / "labels").rglob("*.json")):
        if path.stem == old:
            continue
        record = json.loads(path.read_bytes())
        record.pop("label_id")
        record.pop("created_at")
        files.append((path.parent.name, json.dumps(record, sort_keys=True)))
    return code, plain(out), plain(err), files


def _both(template: tuple[Path, str], argv: list[str]) -> tuple[tuple[object, ...], ...]:
    root, old = template
    seen = []
    work = Path(tempfile.mkdtemp(prefix="label-fast-"))
    try:
        for name, run in (("fast", _fast), ("click", _click)):
            ledger = work / name / "ledger"
            shutil.copytree(root, ledger)
            words = [word.replace("LEDGER", str(ledger)).replace("OLD", old) for word in argv]
            seen.append(_seen(run(words), ledger, old))
    finally:
        shutil.rmtree(work)
    return tuple(seen)


@st.composite
def _command_lines(draw: st.DrawFn) -> list[str]:
    """A label command line: mostly the plain form the fast path takes, with good and bad
    values (an unknown criterion, a bad name, a reason too long, a label id that is not
    there), and now and then what only click takes (an option twice, --help, --, a typo)."""

    def pick(*values: str) -> str:
        return draw(st.sampled_from(values))

    groups: list[list[str]] = []

    def option(name: str, value: str) -> None:
        groups.append([f"{name}={value}"] if draw(st.booleans()) else [name, value])

    if draw(st.integers(min_value=0, max_value=3)):
        verdicts = ("safe", "UNSAFE", "Uncertain", "unsafe", "safe", "unsafe", "bad", LONG_S)
        option("--verdict", pick(*verdicts))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        option("--criterion", pick("C1", "C2", "C9", "c1", "1bad"))
        if draw(st.integers(min_value=0, max_value=9)):
            option("--fired", pick("yes", "no", "unknown", "NO", "yes", "no", "True", "maybe"))
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        option("--diagnosis", pick("correct", "Incorrect", "wrong"))
    if draw(st.integers(min_value=0, max_value=9)):
        option("--by", pick("ada", "bob", "Ada Lovelace", "b/x", "é", "x" * 65))
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        option("--reason", pick("why", "x" * 20_001, "line\nbreak", "\x1b[31mred"))
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        option("--supersedes", pick("OLD", "lbl_20990101T000000Z_deadbeef", "bad"))
    if draw(st.integers(min_value=0, max_value=7)) == 0:
        groups.append(
            draw(st.sampled_from([["--help"], ["--"], ["--nope"], ["--by", "-q"], ["extra"]]))
        )
    run_id = pick(SCORED, SCORED[:12], PLAIN, PLAIN, "use_case_zz", "-r")
    if draw(st.integers(min_value=0, max_value=9)):
        groups.insert(draw(st.integers(min_value=0, max_value=len(groups))), [run_id])
    groups.append(["--ledger", "LEDGER"])
    return [word for group in draw(st.permutations(groups)) for word in group]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(argv=_command_lines())
def test_the_fast_label_does_and_says_what_the_click_command_does(
    template: tuple[Path, str], argv: list[str]
) -> None:
    fast, click = _both(template, argv)
    assert fast == click, argv


@pytest.mark.parametrize(
    "argv",
    [
        # Written, with each of the forms a user types.
        [SCORED, "--verdict", "unsafe", "--criterion", "C2", "--fired", "yes", "--by", "bob"],
        [PLAIN, "--verdict=UNSAFE", "--diagnosis", "Incorrect", "--by=Ada Lovelace"],
        [PLAIN, "--reason", "the report blamed DNS", "--by", "bob"],
        ["--by", "bob", "--criterion", "C9", "--fired", "no", PLAIN],
        [SCORED, "--supersedes", "OLD", "--verdict", "unsafe", "--by", "ada"],
        # The same label again: nothing written.
        [SCORED, "--verdict", "safe", "--by", "ada"],
        # Refused: exit 2 with the run, option or field named.
        [SCORED, "--criterion", "C9", "--fired", "yes", "--by", "bob"],
        ["use_case_zz", "--verdict", "safe", "--by", "bob"],
        [PLAIN, "--verdict", "safe", "--by", "b/x"],
        [PLAIN, "--reason", "x" * 20_001, "--by", "bob"],
        [PLAIN, "--supersedes", "lbl_20990101T000000Z_deadbeef", "--verdict", "safe", "--by", "a"],
        [PLAIN, "--criterion", "C1", "--criterion", "C1", "--fired", "yes", "--fired", "no"],
        [PLAIN, "--criterion", "C1", "--by", "bob"],
        [PLAIN, "--by", "bob"],
        [PLAIN, "--verdict", "maybe", "--by", "bob"],
    ],
)
def test_fast_and_click_label_agree_on_each_case(
    template: tuple[Path, str], argv: list[str]
) -> None:
    fast, click = _both(template, [*argv, "--ledger", "LEDGER"])
    assert fast == click
    code, out, err, files = fast
    assert (code == 0) == (out != "" and err == "")
    assert code in (0, 2), err
    if code == 2:
        assert files == [] and err.startswith(("Error: ", "Usage: "))


def test_a_label_written_by_the_fast_path_reads_back_as_given(
    template: tuple[Path, str], tmp_path: Path
) -> None:
    root = tmp_path / "ledger"
    shutil.copytree(template[0], root)
    argv = [SCORED, "--ledger", str(root), "--verdict", "unsafe", "--criterion", "C1"]
    code, out, err = _fast([*argv, "--fired", "yes", "--diagnosis", "correct", "--by", "bob"])
    assert (code, err) == (0, "")
    with Ledger.open(root) as ledger:
        labels = LabelStore(ledger).of_run(SCORED)
    said = f"Labelled {SCORED} by bob: Unsafe, C1=yes, diagnosis correct"
    assert out == f"{said} ({labels[-1].label_id})\n"
    assert [(c.criterion, c.fired) for c in labels[-1].criteria] == [("C1", True)]


@pytest.mark.parametrize(
    "argv",
    [
        ["R", "--verdict", "safe", "--verdict", "unsafe"],  # given twice: click takes the last
        ["R", "--verdict"],  # no value
        ["R", "--by", "-x", "--verdict", "safe"],  # a value like an option
        ["R", "--by", "", "--verdict", "safe"],
        ["R", "--verdict", LONG_S],  # a choice click casefolds
        ["R", "--help"],
        ["R", "--", "--verdict", "safe"],
        ["R", "S", "--verdict", "safe"],
        ["--verdict", "safe"],  # no RUN_ID
        ["R", "--criterion", "C1"],  # no --fired
        ["R", "--by", "ada"],  # no label flag: the walk-through on a terminal
        ["R", "--ver", "safe"],
    ],
)
def test_what_the_fast_path_does_not_take_goes_to_click(argv: list[str]) -> None:
    assert parse_args(argv) is None


def test_a_ledger_path_click_would_refuse_as_unreadable_goes_to_click(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["R", "--verdict", "safe", "--ledger", str(tmp_path)]
    assert parse_args(argv) is not None
    monkeypatch.setattr("os.access", lambda *args, **kwargs: False)  # as for another user
    assert parse_args(argv) is None
    assert parse_args(["R", "--verdict", "safe", "--ledger", str(tmp_path / "none")]) is not None


def test_the_plain_form_is_parsed_as_click_parses_it() -> None:
    first = ["--by=ada", "R", "--verdict", "UNSAFE", "--criterion", "C1", "--fired", "No"]
    options = parse_args(
        [*first, "--criterion", "C2", "--fired", "unknown", "--ledger", "L", "--reason", "why"]
    )
    assert options is not None
    assert (options.run_id, options.by, options.verdict, options.ledger) == (
        "R",
        "ada",
        "unsafe",
        "L",
    )
    assert (options.criteria, options.fired, options.reason) == (
        ["C1", "C2"],
        ["no", "unknown"],
        "why",
    )
