"""Strict JSON wherever a record is read: what a lenient reader would guess at is refused.

Duplicate keys (which value did the writer mean?), NaN and Infinity, numbers that do not fit
(the index keeps 64-bit integers; 1e400 overflows to infinity), and deep nesting (which used
to end in a traceback) are each a clear error naming the file, the line where there is one,
and what was wrong; an import that meets one exits 2 and writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from agentledger.cli import main
from agentledger.errors import RecordError
from agentledger.importers.shell_log import check_shell_log
from agentledger.records import (
    INT_MAX,
    INT_MIN,
    MAX_JSON_DEPTH,
    RunMetadata,
    RunSummary,
    decode_json,
    parse_record,
    parse_shell_audit,
)

DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"model": "a", "model": "b"}', "duplicate key 'model'"),
        (b'{"tags": {"k": "1", "k": "2"}}', "duplicate key 'k'"),
        (b'{"n": 1e400}', "1e400 is not a finite number"),
        (b'{"n": -1e400}', "-1e400 is not a finite number"),
        (b'{"n": NaN}', "NaN is not a JSON number"),
        (b'{"n": -Infinity}', "-Infinity is not a JSON number"),
        (b'{"n": 9223372036854775808}', "does not fit in 64 bits"),
        (b'{"n": -9223372036854775809}', "does not fit in 64 bits"),
        (b'{"n": ' + b"9" * 5000 + b"}", r"does not fit in 64 bits"),
        (DEEP, f"nested deeper than {MAX_JSON_DEPTH} levels"),
        (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), "nested deeper"),
        (b'{"a": "\xff"}', "not valid UTF-8"),
    ],
)
def test_decode_json_refuses(raw: bytes, problem: str) -> None:
    with pytest.raises(RecordError, match=problem) as caught:
        decode_json(raw, "runs/x/metadata.json")
    assert "runs/x/metadata.json" in str(caught.value)


def test_decode_json_takes_what_fits() -> None:
    raw = json.dumps(
        {"max": INT_MAX, "min": INT_MIN, "big": 1.7e308, "deep": [[[[1]]]], "s": "\u00e9"}
    ).encode()
    assert decode_json(raw, "x") == json.loads(raw)
    nested = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH
    assert decode_json(nested, "x") == json.loads(nested)


@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers(INT_MIN, INT_MAX)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )
)
def test_any_standard_json_within_the_limits_decodes_as_json_does(value: object) -> None:
    raw = json.dumps(value).encode()
    assert decode_json(raw, "x") == json.loads(raw)


def test_records_refuse_a_duplicate_key_that_pydantic_would_take() -> None:
    raw = b'{"run_id": "r1", "model": "claude-haiku-4-5", "model": "gpt-4o"}'
    with pytest.raises(RecordError, match="duplicate key 'model'"):
        parse_record(RunMetadata, raw, "metadata.json")
    with pytest.raises(RecordError, match="does not fit"):
        parse_record(RunSummary, b'{"input_tokens": 99999999999999999999999999}', "s.json")


def test_a_shell_log_line_with_nan_in_an_extra_key_is_refused_with_its_line() -> None:
    raw = b'{"command": "ls"}\n{"command": "tc qdisc show", "latency": NaN}\n'
    with pytest.raises(RecordError, match="line 2") as caught:
        parse_shell_audit(raw, "shell_audit.jsonl")
    assert "NaN" in str(caught.value)
    with pytest.raises(RecordError, match="line 2"):
        check_shell_log(raw, "shell_audit.jsonl")
    duplicate = b'{"command": "ls", "command": "rm -rf /"}\n'
    with pytest.raises(RecordError, match="duplicate key 'command'"):
        check_shell_log(duplicate, "shell_audit.jsonl")


def seed_run(root: Path, name: str, **files: bytes) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    content = {
        "PROMPT.txt": b"Latency to 10.0.3.5.\n",
        "ghost_report_20260312.md": b"# Report\n\n## Root cause\nnetem.\n",
        "shell_audit_20260312.jsonl": b'{"command": "tc qdisc show"}\n',
        "metadata.json": json.dumps({"run_id": name, "model": "claude-haiku-4-5"}).encode(),
    }
    content.update({key.replace("__", "."): value for key, value in files.items()})
    for relative, data in content.items():
        (directory / relative).write_bytes(data)
    return directory


@pytest.mark.parametrize(
    ("files", "where", "problem"),
    [
        (
            {"metadata__json": b'{"run_id": "bad", "model": "a", "model": "b"}'},
            "metadata.json",
            "duplicate key 'model'",
        ),
        (
            {"run_summary__json": b'{"input_tokens": 99999999999999999999999999}'},
            "run_summary.json",
            "does not fit in 64 bits",
        ),
        ({"run_summary__json": b'{"cost_usd": 1e400}'}, "run_summary.json", "not a finite"),
        ({"run_summary__json": DEEP}, "run_summary.json", "nested deeper"),
        (
            {"shell_audit_20260312__jsonl": b'{"command": "ls", "n": ' + b"7" * 5000 + b"}\n"},
            "shell_audit",
            "does not fit in 64 bits",
        ),
    ],
)
def test_an_import_refuses_the_run_and_writes_nothing(
    tmp_path: Path, files: dict[str, bytes], where: str, problem: str
) -> None:
    seed_run(tmp_path / "runs", "use_case_a_haiku_20260301")
    seed_run(tmp_path / "runs", "use_case_m_haiku_20260312", **files)
    ledger = tmp_path / "ledger"

    result = CliRunner().invoke(
        main, ["import", str(tmp_path / "runs"), "--ledger", str(ledger)], catch_exceptions=False
    )

    assert result.exit_code == 2, result.output
    assert where in result.output and problem in result.output, result.output
    assert "Traceback" not in result.output
    assert not (ledger / "runs").exists() or not any((ledger / "runs").iterdir())
