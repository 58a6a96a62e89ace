"""Records on disk: schema versions, clear errors naming file, line and field."""

from __future__ import annotations

import json

import pytest

from agentledger.cli.schemas import json_schema
from agentledger.errors import RecordError
from agentledger.records import (
    RunMetadata,
    ShellEvent,
    parse_record,
    parse_shell_audit,
)

GOOD = {
    "schema_version": 1,
    "run_id": "use_case_m_haiku_20260312",
    "scenario": "use_case_m",
    "model": "claude-haiku-4-5",
    "system_prompt_hash": "sha256:" + "a" * 64,
    "started_at": "2026-03-12T10:15:00Z",
}


def _raw(data: object) -> bytes:
    return json.dumps(data).encode()


def test_metadata_round_trips() -> None:
    meta = parse_record(RunMetadata, _raw(GOOD), "metadata.json")
    assert meta.model == "claude-haiku-4-5"
    assert meta.started_at is not None and meta.started_at.tzinfo is not None


def test_newer_schema_version_is_refused() -> None:
    with pytest.raises(RecordError) as caught:
        parse_record(RunMetadata, _raw(GOOD | {"schema_version": 7}), "runs/x/metadata.json")
    assert "runs/x/metadata.json" in str(caught.value)
    assert "newer agentledger" in str(caught.value)


def test_missing_field_is_named() -> None:
    data = dict(GOOD)
    del data["model"]
    with pytest.raises(RecordError) as caught:
        parse_record(RunMetadata, _raw(data), "metadata.json")
    assert caught.value.field == "model"
    assert "metadata.json, field 'model'" in str(caught.value)


def test_recorded_run_needs_prompt_hash_but_backfilled_may_lack_it() -> None:
    data = {k: v for k, v in GOOD.items() if k != "system_prompt_hash"}
    with pytest.raises(RecordError, match="system_prompt_hash is required"):
        parse_record(RunMetadata, _raw(data), "metadata.json")
    assert parse_record(RunMetadata, _raw(data | {"backfilled": True}), "m.json").backfilled


def test_short_hash_from_a_backfill_is_kept() -> None:
    meta = RunMetadata.model_validate(GOOD | {"system_prompt_hash": "sha256:a3f9c2d1"})
    assert meta.system_prompt_hash == "sha256:a3f9c2d1"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"{not json", "malformed JSON"),
        (b"\xff\xfe{}", "not valid UTF-8"),
        (b"[1, 2]", "expected a JSON object"),
    ],
)
def test_malformed_files_name_the_file(raw: bytes, problem: str) -> None:
    with pytest.raises(RecordError, match=problem) as caught:
        parse_record(RunMetadata, raw, "runs/r1/metadata.json")
    assert str(caught.value).startswith("runs/r1/metadata.json")


def test_control_characters_in_identity_are_refused() -> None:
    with pytest.raises(RecordError, match="control characters"):
        parse_record(RunMetadata, _raw(GOOD | {"model": "haiku\x1b[2J"}), "metadata.json")


def test_run_id_with_path_tricks_is_refused() -> None:
    with pytest.raises(RecordError) as caught:
        parse_record(RunMetadata, _raw(GOOD | {"run_id": "../../etc"}), "metadata.json")
    assert caught.value.field == "run_id"


def test_shell_audit_accepts_common_shapes_and_counts_denials() -> None:
    raw = (
        b'{"ts": "2026-03-12T10:15:00Z", "command": "iptables -L f2b-sshd -n"}\n'
        b"\n"
        b'{"cmd": "iptables -F f2b-sshd", "decision": "denied", "reason": "mutating"}\n'
        b'{"cmd": "systemctl restart fail2ban", "allowed": false}\n'
    )
    events = parse_shell_audit(raw, "shell_audit.jsonl")
    assert [e.command for e in events] == [
        "iptables -L f2b-sshd -n",
        "iptables -F f2b-sshd",
        "systemctl restart fail2ban",
    ]
    assert [e.denied for e in events] == [False, True, True]


def test_shell_audit_errors_name_the_line() -> None:
    raw = b'{"command": "ls"}\n{"command": "ls"\n'
    with pytest.raises(RecordError) as caught:
        parse_shell_audit(raw, "shell_audit.jsonl")
    assert caught.value.line == 2
    raw = b'{"command": "ls"}\n{"exit_code": 0}\n'
    with pytest.raises(RecordError) as caught:
        parse_shell_audit(raw, "shell_audit.jsonl")
    assert caught.value.line == 2 and caught.value.field == "command"


def test_every_schema_is_printable() -> None:
    for name in ("metadata", "summary", "shell-event", "manifest", "ledger"):
        schema = json_schema(name)
        assert schema["type"] == "object"
        assert "schema_version" in schema["properties"]


def test_shell_event_keeps_foreign_keys() -> None:
    event = ShellEvent.model_validate({"cmd": "ls", "host": "vm-1"})
    assert event.model_extra == {"host": "vm-1"}


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"duration_s": NaN}', "NaN is not a JSON number"),
        (b'{"duration_s": Infinity}', "Infinity is not a JSON number"),
        (b'{"cost_usd": 1e400}', "finite number"),
    ],
)
def test_non_finite_numbers_are_refused(raw: bytes, problem: str) -> None:
    from agentledger.records import RunSummary

    with pytest.raises(RecordError, match=problem):
        parse_record(RunSummary, raw, "run_summary.json")


def test_a_run_says_what_it_is_and_older_files_read_as_agent_runs() -> None:
    assert parse_record(RunMetadata, _raw(GOOD), "metadata.json").kind == "agent"
    backfilled = GOOD | {"backfilled": True, "source": {"importer": "directory"}}
    assert parse_record(RunMetadata, _raw(backfilled), "metadata.json").kind == "agent"
    # The fixtures runner's runs from before kinds say what they are in their source.
    fixture = GOOD | {"source": {"runner": "agentledger fixtures", "mode": "replay"}}
    assert parse_record(RunMetadata, _raw(fixture), "metadata.json").kind == "fixture"
    # A kind written down is kept, whatever the source says.
    assert parse_record(RunMetadata, _raw(fixture | {"kind": "agent"}), "m.json").kind == "agent"
    sentinel = parse_record(RunMetadata, _raw(GOOD | {"kind": "sentinel"}), "m.json")
    assert json.loads(sentinel.model_dump_json())["kind"] == "sentinel"


def test_an_unknown_run_kind_is_refused_naming_the_field() -> None:
    with pytest.raises(RecordError) as caught:
        parse_record(RunMetadata, _raw(GOOD | {"kind": "probe"}), "runs/x/metadata.json")
    assert caught.value.field == "kind"
    assert "runs/x/metadata.json" in str(caught.value) and "'fixture'" in str(caught.value)
