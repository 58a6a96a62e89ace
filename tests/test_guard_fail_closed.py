"""The production guard fails closed: what it cannot check is never let through.

Each case runs the real console script in a subprocess, with a time limit: an expect that
checks nothing, the seed's expect shapes, NaN, duplicate keys, numbers that do not fit, ReDoS
patterns, endless input, huge SQL and deeply nested JSON. Errors (nothing was checked) exit 2
naming the file and the field; rejections exit 1 with a reason; nothing prints a traceback.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentledger.errors import RecordError
from agentledger.suites.guard import check
from agentledger.suites.properties.score import validate_expect

SCRIPT = Path(sys.executable).parent / "agentledger"
LIMIT = 60  # seconds: every case ends long before; a hang fails the test instead of the suite


def guard(
    expect: Path, output: str | bytes | None = None, *args: str
) -> subprocess.CompletedProcess[str]:
    """`agentledger guard --expect EXPECT -` with `output` on stdin."""
    data = output.encode() if isinstance(output, str) else output
    done = subprocess.run(
        [str(SCRIPT), "guard", "--expect", str(expect), *(args or ("-",))],
        input=data if data is not None else b"",
        capture_output=True,
        timeout=LIMIT,
        check=False,
    )
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr, stderr
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), stderr)


def write(tmp_path: Path, value: Any, name: str = "expect.json") -> Path:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return path


def rejected(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("agentledger guard: rejected: "), done.stderr
    for word in words:
        assert word in done.stderr


def refused(done: subprocess.CompletedProcess[str], path: Path, *words: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"Error: {path}"), done.stderr
    for word in words:
        assert word in done.stderr


# -- an expect that checks nothing ---------------------------------------------------------


@pytest.mark.parametrize(
    "expect",
    [
        {},
        {"description": "the SQL analyst", "tags": ["sql"]},
        {"sql_read_only": False},
        {"sql_read_only": False, "shell_commands": False},
        {"scorers": []},
    ],
    ids=["empty", "metadata only", "a property off", "every property off", "no scorers"],
)
def test_an_expect_that_checks_nothing_is_refused(tmp_path: Path, expect: Any) -> None:
    path = write(tmp_path, expect)
    refused(guard(path, '{"sql": "DROP TABLE events"}'), path, "checks nothing")


def test_an_expect_that_checks_nothing_is_refused_in_process_too() -> None:
    with pytest.raises(RecordError, match="checks nothing"):
        check('{"sql": "DROP TABLE events"}', {})
    with pytest.raises(RecordError, match="checks nothing"):
        validate_expect({"description": "x"}, "e.json")


# -- the seed's expect shapes ----------------------------------------------------------------


def test_seed_sql_tables_subset_alone_still_rejects_any_write(tmp_path: Path) -> None:
    # The seed's score_sql rejects a write whatever else the expect says.
    path = write(tmp_path, {"sql_tables_subset": ["events", "invoices"]})
    rejected(
        guard(path, '{"sql": "delete from events", "tables": ["events"]}'),
        "sql_read_only: DELETE writes rows",
    )
    rejected(guard(path, '{"sql": "WITH x AS (DELETE FROM events RETURNING *) SELECT 1"}'))
    assert (
        guard(path, '{"sql": "SELECT count(*) FROM events", "tables": ["events"]}').returncode == 0
    )
    # Several read-only statements are still read-only: the single-statement rule belongs
    # to an explicit sql_read_only.
    assert guard(path, '{"sql": "SELECT 1 FROM events; SELECT 2 FROM invoices"}').returncode == 0
    rejected(guard(path, '{"sql": "SELECT * FROM users"}'), "sql_tables_subset", "users")


def test_seed_sql_shape_with_read_only_off_explicitly_checks_tables_only(tmp_path: Path) -> None:
    path = write(tmp_path, {"sql_read_only": False, "sql_tables_subset": ["events"]})
    done = guard(path, '{"sql": "delete from events", "tables": ["events"]}')
    assert (done.returncode, done.stderr) == (0, "")


def test_seed_sql_tables_subset_on_another_field_is_checked_there(tmp_path: Path) -> None:
    expect = {
        "sql_read_only": True,
        "sql_tables_subset": {"tables": ["events"], "field": "query.text"},
    }
    path = write(tmp_path, expect)
    output = {"sql": "SELECT 1", "query": {"text": "TRUNCATE events"}}
    rejected(guard(path, json.dumps(output)), "sql_read_only: TRUNCATE writes rows")


def test_seed_watchdog_shape(tmp_path: Path) -> None:
    path = write(tmp_path, {"allowed_actions": {"restart_nginx": "systemctl restart nginx"}})
    assert guard(path, '{"action": "restart_nginx"}').returncode == 0
    rejected(guard(path, '{"action": "restart_sshd"}'), "allowed_actions", "restart_sshd")
    rejected(guard(path, '{"reason": "no action at all"}'), "allowed_actions: no action")


def test_seed_docs_shape(tmp_path: Path) -> None:
    path = write(tmp_path, {"must_cite_from": [["backups.md", "Restore"]]})
    assert guard(path, '{"answer": "I do not know"}').returncode == 0
    cited = {
        "answer": "run restore.sh",
        "citations": [{"path": "backups.md", "heading": "Restore"}],
    }
    assert guard(path, json.dumps(cited)).returncode == 0
    rejected(guard(path, '{"answer": "run restore.sh"}'), "cites nothing")
    invented = {"answer": "x", "citations": [{"path": "guess.md", "heading": "Anything"}]}
    rejected(guard(path, json.dumps(invented)), "outside the retrieved set")


def test_seed_classifier_and_text_shapes(tmp_path: Path) -> None:
    expect = {
        "queue_enum": ["billing", "ssh", "needs-human"],
        "confidence_floor": 0.7,
        "forbidden_substrings": ["publish the status page"],
        "max_findings": 2,
    }
    path = write(tmp_path, expect)
    assert guard(path, '{"queue": "ssh", "confidence": 0.9}').returncode == 0
    rejected(guard(path, '{"queue": "ssh", "confidence": 0.4}'), "confidence_floor")
    rejected(guard(path, '{"queue": "sales", "confidence": 0.9}'), "queue_enum")
    rejected(
        guard(path, '{"queue": "ssh", "confidence": 0.9, "note": "Publish the status page"}'),
        "forbidden_substrings",
    )
    rejected(
        guard(path, '{"queue": "ssh", "confidence": 0.9, "findings": [1, 2, 3]}'),
        "max_findings",
    )


# -- NaN, Infinity, duplicates, numbers that do not fit --------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"confidence_floor": NaN}', ("NaN is not a JSON number",)),
        ('{"confidence_floor": Infinity}', ("Infinity is not a JSON number",)),
        ('{"confidence_floor": -Infinity}', ("-Infinity is not a JSON number",)),
        ('{"confidence_floor": 1e400}', ("not a finite number",)),
        ('{"max_findings": 1' + "0" * 5000 + "}", ("does not fit in 64 bits",)),
        ('{"allowed_actions": ["noop"], "allowed_actions": ["rm"]}', ("duplicate key",)),
        ('{"max_findings": {"max": 1, "max": 9}}', ("duplicate key 'max'",)),
        ("[" * 100_000, ("nested deeper",)),
    ],
    ids=["NaN", "Infinity", "-Infinity", "1e400", "5000 digits", "duplicates", "nested duplicates",
         "deep nesting"],
)  # fmt: skip
def test_expect_that_is_not_strict_json_is_refused(
    tmp_path: Path, text: str, words: tuple[str, ...]
) -> None:
    path = write(tmp_path, text)
    refused(guard(path, '{"queue": "ssh", "confidence": 0.1}'), path, *words)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"queue_enum": ["ssh"], "confidence_floor": NaN}', "confidence_floor"),
        ('{"confidence_floor": {"floor": 0.5, "floor": 0.9}}', "confidence_floor.floor"),
        ('{"must_cite_from": [["a.md", "A"], ["b.md", 1e400]]}', "must_cite_from.1.1"),
    ],
)
def test_the_error_names_the_field_that_is_not_strict_json(
    tmp_path: Path, text: str, field: str
) -> None:
    path = write(tmp_path, text)
    refused(guard(path, "{}"), path, f"field '{field}'")


def test_nan_in_an_expect_object_is_refused_in_process() -> None:
    with pytest.raises(RecordError, match="finite number") as caught:
        validate_expect({"confidence_floor": float("nan")}, "e.json")
    assert caught.value.field == "confidence_floor"
    with pytest.raises(RecordError, match="finite number"):
        validate_expect({"confidence_floor": {"floor": float("inf")}}, "e.json")


@pytest.mark.parametrize(
    ("output", "words"),
    [
        ('{"queue": "ssh", "confidence": NaN}', ("NaN is not a JSON number",)),
        ('{"queue": "ssh", "confidence": Infinity}', ("Infinity",)),
        ('{"queue": "ssh", "confidence": 1e999}', ("not a finite number",)),
        ('{"queue": "ssh", "confidence": 1' + "0" * 5000 + "}", ("does not fit in 64 bits",)),
        ('{"queue": "ssh", "queue": "needs-human", "confidence": 0.1}', ("duplicate key",)),
        ('{"queue": "ssh", "confidence": 0.9, "x": ' + "[" * 70 + "]" * 70 + "}",
         ("nested deeper",)),
        ('{"queue": "ssh", "x": ' + "[" * 200_000 + "]" * 200_000 + "}", ("nested deeper",)),
    ],
    ids=["NaN", "Infinity", "1e999", "5000 digits", "duplicates", "70 levels", "200k levels"],
)  # fmt: skip
def test_output_that_is_not_strict_json_is_rejected(
    tmp_path: Path, output: str, words: tuple[str, ...]
) -> None:
    path = write(tmp_path, {"queue_enum": ["ssh", "needs-human"], "confidence_floor": 0.7})
    rejected(guard(path, output), "output_json: the output is not usable JSON", *words)


def test_an_output_object_with_nan_is_rejected_in_process() -> None:
    result = check({"queue": "ssh", "confidence": float("nan")}, {"confidence_floor": 0.7})
    assert not result.ok and result.reasons[0].startswith("output_json: ")
    result = check({"queue": "ssh", "n": 2**70}, {"queue_enum": ["ssh"]})
    assert not result.ok and "does not fit" in result.reasons[0]


# -- regular expressions run in linear time --------------------------------------------------


# ^ anchored at each line: over the whole output (a JSON object) a plain ^(\w...) can never
# match, and is refused as checking nothing (issue 33).
@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|aa)+$", "(a*)*b", "(?m)^(\\w+\\s?)*$"])
def test_redos_patterns_answer_at_once(tmp_path: Path, pattern: str) -> None:
    path = write(tmp_path, {"forbidden_regex": [pattern]})
    started = time.monotonic()
    done = guard(path, json.dumps({"note": "a" * 50_000 + "!"}))
    assert time.monotonic() - started < 10  # Python's re takes longer than the universe
    assert done.returncode in (0, 1), done.stderr
    required = write(tmp_path, {"regex": [pattern]}, "required.json")
    answer = guard(required, json.dumps({"note": "a" * 50_000 + "!"})).returncode
    # A required pattern that matches the empty text checks nothing: refused at load (issue 33).
    assert answer == (2 if re.search(pattern, "") else 1)


@pytest.mark.parametrize(
    ("expect", "field"),
    [
        ({"forbidden_regex": ["(a)\\1"]}, "forbidden_regex.0"),
        ({"regex": "(?<=secret)key"}, "regex"),
        ({"regex": {"patterns": ["ok", "(?=x)y"]}}, "regex.patterns.1"),
        ({"forbidden_regex": ["a{1000}{1000}"]}, "forbidden_regex.0"),
    ],
    ids=["backreference", "lookbehind", "lookahead", "too big"],
)
def test_a_regex_re2_cannot_run_is_an_error_naming_the_field(
    tmp_path: Path, expect: dict[str, Any], field: str
) -> None:
    path = write(tmp_path, expect)
    done = guard(path, '{"note": "x"}')
    refused(done, path, f"field '{field}'", "RE2")
    assert "re2.cc" not in done.stderr  # RE2's own log stays quiet


def test_regex_options_still_work_in_re2(tmp_path: Path) -> None:
    path = write(
        tmp_path, {"forbidden_regex": {"patterns": ["drop\\s+table"], "ignore_case": True}}
    )
    rejected(guard(path, '{"sql": "DROP   TABLE x"}'), "forbidden_regex", "DROP   TABLE")
    assert guard(path, '{"sql": "select 1"}').returncode == 0


# -- input is bounded while it is read -------------------------------------------------------


def test_endless_stdin_ends_with_exit_2_promptly(tmp_path: Path) -> None:
    path = write(tmp_path, {"allowed_actions": ["noop"]})
    producer = subprocess.Popen(["yes", '{"action": "noop"}'], stdout=subprocess.PIPE)
    try:
        started = time.monotonic()
        done = subprocess.run(
            [str(SCRIPT), "guard", "--expect", str(path)],
            stdin=producer.stdout,
            capture_output=True,
            timeout=LIMIT,
            check=False,
        )
        elapsed = time.monotonic() - started
    finally:
        producer.kill()
        producer.wait()
        assert producer.stdout is not None
        producer.stdout.close()
    assert done.returncode == 2, done.stderr
    assert b"standard input: the output is more than the 1,048,576-byte limit" in done.stderr
    assert b"Traceback" not in done.stderr
    assert elapsed < 20


@pytest.mark.parametrize(
    "producer",
    [
        # a byte every 0.1 s, for ever: never the size limit, never the end
        "import sys, time\nwhile True:\n"
        "    sys.stdout.write('{'); sys.stdout.flush(); time.sleep(0.1)",
        # nothing at all, and the pipe held open
        "import time\ntime.sleep(600)",
    ],
    ids=["trickle", "silent"],
)
def test_input_that_never_ends_is_refused_after_the_read_time(
    tmp_path: Path, producer: str
) -> None:
    path = write(tmp_path, {"allowed_actions": ["noop"]})
    source = subprocess.Popen([sys.executable, "-c", producer], stdout=subprocess.PIPE)
    try:
        done = subprocess.run(
            [str(SCRIPT), "guard", "--expect", str(path)],
            stdin=source.stdout,
            capture_output=True,
            timeout=LIMIT,
            check=False,
            env={**os.environ, "AGENTLEDGER_GUARD_READ_SECONDS": "1"},
        )
    finally:
        source.kill()
        source.wait()
        assert source.stdout is not None
        source.stdout.close()
    assert done.returncode == 2, done.stderr
    assert b"standard input: the input did not end within 1 s" in done.stderr
    assert b"nothing was checked" in done.stderr
    assert b"Traceback" not in done.stderr


@pytest.mark.parametrize("value", ["0", "-3", "nan", "soon", "1e9"])
def test_a_bad_read_time_is_refused(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, {"allowed_actions": ["noop"]})
    done = subprocess.run(
        [str(SCRIPT), "guard", "--expect", str(path)],
        input=b'{"action": "noop"}',
        capture_output=True,
        timeout=LIMIT,
        check=False,
        env={**os.environ, "AGENTLEDGER_GUARD_READ_SECONDS": value},
    )
    assert done.returncode == 2, done.stderr
    assert b"AGENTLEDGER_GUARD_READ_SECONDS" in done.stderr


def test_an_endless_output_file_ends_with_exit_2(tmp_path: Path) -> None:
    path = write(tmp_path, {"allowed_actions": ["noop"]})
    done = guard(path, None, "/dev/zero")
    assert done.returncode == 2
    # Only regular files and pipes are read (issue 33): a device is refused unread.
    assert "the output file /dev/zero is not a regular file or a pipe" in done.stderr
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)
    endless = subprocess.Popen(["sh", "-c", f"yes > '{fifo}'"])
    try:
        done = guard(path, None, str(fifo))
    finally:
        endless.kill()
        endless.wait()
    assert done.returncode == 2
    assert f"the output file {fifo}: the output is more than the" in done.stderr


def test_a_huge_expect_file_is_refused_unread(tmp_path: Path) -> None:
    path = write(tmp_path, '{"description": "' + "x" * 2_000_000 + '", "max_findings": 1}')
    refused(guard(path, "{}"), path, "limit")


# -- SQL parsing has a size and a time limit -------------------------------------------------


def union_sql(size: int) -> str:
    return " UNION ".join(["SELECT a FROM events"] * (size // 27 + 1))[:size].rsplit(" UNION", 1)[0]


def test_a_mebibyte_of_union_sql_is_refused_at_once(tmp_path: Path) -> None:
    path = write(tmp_path, {"sql_read_only": True, "sql_tables_subset": ["events"]})
    started = time.monotonic()
    done = guard(path, json.dumps({"sql": union_sql(1_100_000)}))
    assert done.returncode == 2 and "limit" in done.stderr  # over the output limit: unread
    done = guard(path, json.dumps({"sql": union_sql(1_000_000)}))
    rejected(done, "sql_read_only: SQL of", "longer than 100000")
    texts = [f"{union_sql(90_000)} UNION SELECT {n}" for n in range(11)]
    # Each within the size limit, not all of them: the limit is on the SQL of the output.
    rejected(guard(path, json.dumps({"sql": texts})), "sql_read_only", "longer than 100000")
    assert time.monotonic() - started < 45


def test_sql_slower_than_the_time_limit_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentledger.shell.sql as sql

    monkeypatch.setattr(sql, "SQL_TIME_LIMIT", 0.05)
    text = union_sql(95_000) + " UNION SELECT 'time limit'"  # not in the parse cache
    started = time.monotonic()
    result = check(json.dumps({"sql": text}), {"sql_read_only": True})
    assert time.monotonic() - started < 5
    assert result.reasons == [
        "sql_read_only: the SQL was not analysed within 0.05 s; unparseable SQL is not run"
    ]
    analysis = sql.analyse_sql(text + " ", sql.DEFAULT_DIALECT)
    assert analysis.classification() == ("unknown", "the SQL was not analysed within 0.05 s")


def test_deeply_nested_sql_fails_closed(tmp_path: Path) -> None:
    path = write(tmp_path, {"sql_read_only": True})
    nested = "SELECT " + "(" * 20_000 + "1" + ")" * 20_000
    rejected(guard(path, json.dumps({"sql": nested})), "sql_read_only", "does not parse")


# -- the guard's own failure is not a rejection ----------------------------------------------


def test_a_custom_scorer_cannot_make_the_guard_crash_open(tmp_path: Path) -> None:
    (tmp_path / "scorers.py").write_text(
        "def explode(output, expect):\n    raise RuntimeError('boom')\n"
    )
    path = write(tmp_path, {"scorers": ["scorers.py:explode"]})
    done = guard(path, '{"action": "noop"}')
    rejected(done, "boom")
