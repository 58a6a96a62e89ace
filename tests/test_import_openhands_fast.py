"""The OpenHands importer writes the trace from the steps' fields, without a model per step:
the bytes must be those of the validated steps, for any trajectory (real, synthetic, odd)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_core import PydanticSerializationError

from agentledger.cli.app import main
from agentledger.errors import RecordError
from agentledger.importers.openhands import trajectory_steps, trajectory_trace
from agentledger.importers.trace_runs import BuiltTrace
from agentledger.records.trace import (
    MAX_STEP_TEXT,
    TraceStep,
    exact_time,
    parse_trace,
    time_zone_of,
    trace_bytes,
    trace_bytes_of_values,
)
from conftest import shared_samples
from exact_output import normalised

ATTACHMENT = "attachments/traj_x.json"


def _both(raw: bytes) -> tuple[Any, Any]:
    """(fast trace, facts) and (trace of the validated steps, facts), or the errors raised."""
    outcomes = []
    for make in (
        lambda: trajectory_trace(raw, "traj_x.json", ATTACHMENT),
        lambda: _validated(raw),
    ):
        try:
            outcomes.append(make())
        except RecordError as exc:
            outcomes.append(("error", str(exc)))
    return outcomes[0], outcomes[1]


def _validated(raw: bytes) -> tuple[BuiltTrace, Any] | tuple[str, str]:
    steps, facts = trajectory_steps(raw, "traj_x.json", ATTACHMENT)
    try:
        return BuiltTrace.of_steps(steps), facts
    except PydanticSerializationError:
        return ("unwritable", "")


def _assert_same(raw: bytes) -> BuiltTrace | None:
    fast, slow = _both(raw)
    if slow[0] == "unwritable":  # a lone surrogate: refused, naming the event
        assert fast[0] == "error" and "lone surrogate" in fast[1]
        return None
    if fast[0] == "error" or slow[0] == "error":
        assert fast == slow
        return None
    (trace, facts), (expected, expected_facts) = fast, slow
    assert trace.jsonl == expected.jsonl
    assert trace.shell_log == expected.shell_log
    assert trace.counts == expected.counts
    assert trace.times == expected.times
    assert facts == expected_facts
    # and what is written reads back, strictly, as the same records
    assert trace_bytes(parse_trace(trace.jsonl, "trace.jsonl")) == trace.jsonl
    return trace


def test_the_real_samples_give_the_bytes_of_their_validated_steps() -> None:
    samples = sorted((shared_samples() / "openhands").glob("*/traj_*.json"))
    if not samples:
        pytest.skip("the OpenHands samples are absent")
    for path in samples:
        trace = _assert_same(path.read_bytes())
        assert trace is not None and trace.jsonl.count(b"\n") > 5


def test_the_benchmark_trajectories_give_the_bytes_of_their_validated_steps() -> None:
    import random
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from traces import trajectory  # type: ignore[import-not-found]

    rng = random.Random(7)
    for model in ("gpt-4o", "o3-mini"):
        events = trajectory(rng, model, 30_000, 60)
        trace = _assert_same(json.dumps(events).encode())
        assert trace is not None and trace.counts.commands > 3


ZONES = [
    None,
    UTC,
    timezone(timedelta(hours=5, minutes=30)),
    timezone(timedelta(hours=-8)),
    timezone(timedelta(hours=-4, minutes=-59, seconds=-53)),  # seconds: the record's way
]


def test_times_are_written_as_the_record_writes_them() -> None:
    for zone in ZONES:
        for moment in (
            datetime(2025, 5, 9, 2, 48, 32),
            datetime(2025, 5, 9, 2, 48, 32, 120000),
            datetime(1, 1, 1, 0, 0, 0, 1),
            datetime(9999, 12, 31, 23, 59, 59, 999999),
        ):
            moment = moment.replace(tzinfo=zone)
            if zone is not None and moment.year in (1, 9999):
                continue  # an offset would take these past the ends of time
            step = TraceStep(index=0, time=moment, actor="agent", kind="message")
            values = step.model_dump(exclude_none=True)
            assert values["time_zone"] == time_zone_of(moment)
            fast = trace_bytes_of_values([values])
            assert (fast == trace_bytes([step])) is exact_time(moment), moment


def test_a_lone_surrogate_is_refused_naming_the_event(tmp_path: Path) -> None:
    assert trace_bytes_of_values([{"schema_version": 1, "text": "a\ud800b"}]) is None
    raw = b'[{"id": 0, "action": "think", "args": {}}, {"id": 1, "content": "a\\ud800b"}]'
    with pytest.raises(RecordError, match=r"event 1.*lone surrogate"):
        trajectory_trace(raw, "traj_x.json", ATTACHMENT)
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "traj_x.json").write_bytes(raw)
    result = CliRunner().invoke(
        main, ["import", "--ledger", str(tmp_path / "l"), str(folder), "--model", "m"]
    )
    assert result.exit_code == 2 and normalised(result.stderr, tmp_path) == (
        "Error: /home/ops/work/in/traj_x.json, field 'event 1': a text holds a lone surrogate "
        "(an escape such as \\ud800 without its pair), which cannot be stored as UTF-8\n"
    )
    assert not (tmp_path / "l").exists()


def test_an_offset_with_seconds_takes_the_validated_way() -> None:
    events = [
        {"id": 0, "timestamp": "2025-05-09T02:48:32-04:59:53", "action": "message", "args": {}},
        {
            "id": 1,
            "timestamp": "2025-05-09T02:48:33+00:00",
            "action": "run",
            "args": {"command": "ls"},
        },
    ]
    trace = _assert_same(json.dumps(events).encode())
    assert trace is not None and b'"time_zone":"-04:59"' in trace.jsonl


# -- any trajectory ---------------------------------------------------------------------------

_texts = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", "ls -la", "rm -rf /tmp/x", "iptables -F", "x" * (MAX_STEP_TEXT + 3)]),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    _texts,
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_stamps = st.builds(
    lambda moment, zone, with_micro: (
        moment.replace(tzinfo=zone, microsecond=moment.microsecond if with_micro else 0)
    ).isoformat(),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2030, 1, 1)),
    st.sampled_from(ZONES),
    st.booleans(),
)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(None), strategy)


_BAD = [
    lambda event: 7,  # not an object
    lambda event: {**event, "timestamp": "yesterday"},
    lambda event: {**event, "timestamp": 5},
    lambda event: {**event, "action": "run", "args": {"cmd": "ls"}},
    lambda event: {**event, "args": "ls"},
    lambda event: {**event, "observation": ["run"]},
]


@st.composite
def _event(draw: st.DrawFn) -> Any:
    event: dict[str, Any] = {}
    fields: dict[str, st.SearchStrategy[Any]] = {
        "id": st.one_of(
            st.integers(0, 30), st.text(max_size=4), st.lists(st.integers(), max_size=2)
        ),
        "timestamp": _stamps,
        "source": st.one_of(st.sampled_from(["agent", "user", "environment", "tool"]), _json),
        "message": _texts,
        "content": _texts,
        "cause": st.one_of(st.integers(0, 30), _json),
        "args": st.fixed_dictionaries(
            {},
            optional={
                "content": _texts,
                "final_thought": _texts,
                "thought": _texts,
                "code": _texts,
                "command": st.one_of(_texts, _texts, _json),
                "outputs": _json,
                "agent_class": _texts,
                "path": _json,
            },
        ),
        "extras": st.fixed_dictionaries(
            {},
            optional={
                "metadata": st.one_of(
                    st.fixed_dictionaries({}, optional={"exit_code": _json, "working_dir": _texts}),
                    _json,
                ),
                "exit_code": st.one_of(st.integers(-3, 3), st.booleans(), _json),
                "command": _texts,
            },
        ),
        "tool_call_metadata": st.fixed_dictionaries(
            {},
            optional={
                "function_name": _texts,
                "tool_call_id": _texts,
                "model_response": st.fixed_dictionaries(
                    {},
                    optional={
                        "id": st.one_of(st.sampled_from(["r1", "r2", "r3"]), _json),
                        "model": _texts,
                        "system_fingerprint": _texts,
                        "usage": st.fixed_dictionaries(
                            {},
                            optional={
                                "prompt_tokens": st.one_of(st.integers(-5, 10**6), _json),
                                "completion_tokens": st.integers(0, 10**4),
                            },
                        ),
                    },
                ),
            },
        ),
        "llm_metrics": st.fixed_dictionaries(
            {},
            optional={
                "accumulated_cost": st.one_of(
                    st.floats(min_value=-1, max_value=10, allow_nan=False), _json
                ),
                "token_usages": st.one_of(
                    st.lists(
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "model": _texts,
                                "response_id": st.sampled_from(["u1", "u2", "u3"]),
                                "prompt_tokens": st.integers(0, 10**5),
                                "completion_tokens": st.integers(0, 10**4),
                            },
                        ),
                        max_size=2,
                    ),
                    _json,
                ),
            },
        ),
    }
    for name, strategy in fields.items():
        if draw(st.booleans()):
            event[name] = draw(strategy)
    kind = draw(st.integers(0, 4))
    if kind <= 1:
        event["action"] = draw(
            st.sampled_from(
                [
                    "run",
                    "run",
                    "read",
                    "edit",
                    "think",
                    "message",
                    "system",
                    "finish",
                    "chat",
                    "fly",
                ]
            )
        )
        if event["action"] == "run":
            event["args"] = {**event.get("args", {}), "command": draw(_texts)}
    elif kind <= 3:
        event["observation"] = draw(
            st.sampled_from(["run", "run", "error", "read", "null", "agent_state_changed", "x"])
        )
    return event


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(_event(), max_size=10),
    bad=st.one_of(st.none(), st.none(), st.tuples(st.integers(0, 9), st.sampled_from(_BAD))),
    history=st.booleans(),
    ensure_ascii=st.booleans(),
)
def test_any_trajectory_gives_the_bytes_of_its_validated_steps(
    events: list[Any], bad: Any, history: bool, ensure_ascii: bool
) -> None:
    if bad is not None and events:  # one malformed event: the same error both ways
        position, spoil = bad
        events[position % len(events)] = spoil(events[position % len(events)])
    data: Any = {"history": events, "metadata": {"model_name": "m"}} if history else events
    raw = json.dumps(data, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass")
    _assert_same(raw)


# -- when workers start ---------------------------------------------------------------------


def test_trace_files_start_workers_from_fewer_runs(tmp_path: Path) -> None:
    from agentledger.importers import workers

    for model in ("a", "b"):
        folder = tmp_path / "data" / model
        folder.mkdir(parents=True)
        for n in range(4):
            (folder / f"traj_t{n}.json").write_text("[]")
            (folder / f"eval_t{n}.json").write_text("{}")
    data = tmp_path / "data"
    # the trajectories below the model folders, not the folders nor their sibling files
    assert workers.runs_at_most([data], 100, "openhands") == 8
    assert workers.runs_at_most([data], 5, "openhands") == 5
    assert workers.runs_at_most([data / "a" / "traj_t0.json"], 100, "openhands") == 1
    assert workers.runs_at_most([data], 100, None) == 2  # run directories: the entries
    below = workers.TRACE_PARALLEL_FROM - 1
    assert workers.worker_count(None, below, import_format="openhands") == 1
    assert workers.worker_count(None, below + 1, import_format="jsonl") >= 2
    assert workers.worker_count(None, below + 1, import_format="directory") == 1
    assert workers.worker_count(None, below + 1) == 1
    assert workers.worker_count(1, 5000, import_format="openhands") == 1


def test_the_shell_log_of_step_fields_is_that_of_the_validated_events() -> None:
    from agentledger.importers.trace_runs import shell_log_bytes
    from agentledger.records import ShellCounts, ShellEvent
    from agentledger.records.trace import shell_events, shell_log_of_values, steps_from_shell_log

    at = datetime(2026, 3, 12, 10, 15, tzinfo=UTC)
    events = [
        ShellEvent(ts=at, command="ls", exit_code=0, stdout="a\nb", decision="allowed"),
        ShellEvent(ts=at, command="rm -rf /", decision="denied", reason="destructive"),
        ShellEvent(command="cat x", stderr="no such file", cwd="/tmp", decided_by="alice"),
        # a gate's policy (written after the output) and a time without a zone (local_time)
        ShellEvent(
            ts=datetime(2026, 3, 12, 10, 16),
            command="tc qdisc del dev eth0 root",
            exit_code=1,
            stdout="RTNETLINK answers: No such file",
            decision="approved",
            decided_by="bob",
            policy="prod-readonly",
        ),
        ShellEvent(command="sleep 9", decision="not-executed", reason="busy", exit_code=None),
    ]
    steps = steps_from_shell_log("look around", events, "done", started=at, ended=at)
    expected = shell_events(steps)
    written = shell_log_of_values([dict(step) for step in steps])
    assert written == (shell_log_bytes(expected), ShellCounts(5, 1, 1))
    assert written is not None and b'"policy":"prod-readonly","trace_step"' in written[0]
    assert b'"local_time":"2026-03-12T10:16:00"' in written[0]
    assert shell_log_of_values([]) == (b"", ShellCounts(0, 0))


@pytest.mark.parametrize("held", [0, None])
def test_originals_are_sealed_whole_held_or_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: int | None
) -> None:
    """Planning keeps each original it read for sealing while the memory allows (0: none
    kept, each is copied from its file); the run holds its bytes either way, and verifies."""
    import random
    import sys

    from agentledger import Ledger
    from agentledger.importers import ImportOptions, import_runs, run_plan
    from agentledger.store.verify import verify_ledger

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from traces import trajectory

    if held is not None:
        monkeypatch.setattr(run_plan, "HELD_BYTES", held)
    folder = tmp_path / "in"
    folder.mkdir()
    rng = random.Random(3)
    for n in range(3):
        (folder / f"traj_t{n}.json").write_text(json.dumps(trajectory(rng, "m", 20_000, 30)))
        (folder / f"eval_t{n}.json").write_text('{"result": 1}')
    with Ledger.init(tmp_path / "ledger") as ledger:
        report = import_runs(ledger, [folder], ImportOptions(model="m", format="openhands"))
        assert len(report.imported) == 3
        for run_id in report.imported:
            run = tmp_path / "ledger" / "runs" / run_id
            (original,) = run.glob("attachments/traj_*.json")
            task = original.stem.removeprefix("traj_")
            assert original.read_bytes() == (folder / original.name).read_bytes()
            sibling = run / "attachments" / f"eval_{task}.json"
            assert sibling.read_bytes() == b'{"result": 1}'
        assert verify_ledger(ledger).ok


# -- read a chunk at a time ---------------------------------------------------------------------


def _long_trajectory(pairs: int, history: bool = False) -> bytes:
    """A trajectory of `pairs` commands and their outputs, over many chunks of events; every
    100th command is refused by the runtime far later (its gate written into a line long
    written), and every output of a command of several lines starts with its echo."""
    events: list[dict[str, Any]] = [{"id": 0, "source": "user", "action": "message",
                                     "args": {"content": "do it"}}]  # fmt: skip
    for n in range(pairs):
        command = f"echo {n}\nls /tmp/{n}" if n % 7 == 0 else f"cat /etc/f{n % 50}"
        events.append({"id": 2 * n + 1, "timestamp": "2025-05-09T02:48:32+02:00",
                       "source": "agent", "action": "run", "args": {"command": command},
                       "tool_call_metadata": {"model_response": {"id": f"r{n}", "usage": {
                           "prompt_tokens": n, "completion_tokens": 1}}}})  # fmt: skip
        output = (command.replace("\n", "  \n") + "\n" if "\n" in command else "") + "x" * n
        detail = {"exit_code": n % 3, "working_dir": "/w"}
        events.append({"id": 2 * n + 2, "source": "agent", "observation": "run",
                       "cause": 2 * n + 1, "content": output,
                       "extras": {"metadata": detail}})  # fmt: skip
    for n in range(0, pairs, 100):
        events.append({"id": 10**6 + n, "observation": "error", "cause": 2 * n + 1,
                       "content": f"[Cannot execute multiple commands at once {n}]"})  # fmt: skip
    events.append({"id": 10**7, "action": "finish", "args": {"final_thought": "done"}})
    if history:
        return json.dumps({"metadata": {"model_name": "gpt-x"}, "history": events}).encode()
    return json.dumps(events).encode()


@pytest.mark.parametrize("history", [False, True])
def test_a_trajectory_read_in_chunks_gives_the_bytes_of_its_validated_steps(
    history: bool,
) -> None:
    raw = _long_trajectory(3000, history)
    assert len(raw) > 3 << 20  # several chunks, by bytes and by events
    trace = _assert_same(raw)
    assert trace is not None and trace.counts.not_executed == 30
    assert trace.counts.commands == 3000


def test_a_json_problem_after_a_bad_event_is_said_first() -> None:
    """An event the importer refuses in the first chunk, and JSON the strict decoder refuses
    chunks later: the JSON is named, as when the file is decoded whole first."""
    raw = _long_trajectory(3000)
    bad_time = raw.replace(b'"timestamp": "2025-05-09T02:48:32+02:00"', b'"timestamp": 5', 1)
    with pytest.raises(RecordError, match=r"event 1\.timestamp"):
        trajectory_trace(bad_time, "traj_x.json", ATTACHMENT)
    for problem in (b"NaN", b"1e999", b'"done", "final_thought": "done"'):
        broken = bad_time.replace(b'"final_thought": "done"', b'"final_thought": ' + problem)
        fast, slow = _both(broken)
        assert fast == slow and fast[0] == "error" and "event 1" not in fast[1], fast


def test_a_lenient_chunk_is_decoded_strictly() -> None:
    """A lone surrogate deep in a long trajectory (orjson refuses the chunk): the strict
    decoder reads the file whole, and the event is refused by name."""
    raw = _long_trajectory(3000)
    at = raw.rindex(b'"content": "x') + len(b'"content": "')
    with pytest.raises(RecordError, match=r"event 6000.*lone surrogate"):
        trajectory_trace(raw[:at] + b"\\ud800" + raw[at:], "traj_x.json", ATTACHMENT)


def test_memory_grows_with_the_trace_not_an_object_per_event() -> None:
    """Planning a 20,000-event trajectory holds its trace and a chunk of events, not every
    event and a 4 kB line buffer per step (traced allocations, peak: once about 40 times the
    file's bytes)."""
    import tracemalloc

    raw = _long_trajectory(10_000)
    tracemalloc.start()
    try:
        trace, _facts = trajectory_trace(raw, "traj_x.json", ATTACHMENT)
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    made = len(trace.jsonl) + len(trace.shell_log)
    assert peak < 2 * made + 8 * len(raw), (peak, made, len(raw))
