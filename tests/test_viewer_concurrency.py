"""The viewer serves several requests at once: a heavy page is read and rendered in a worker
thread, so a static file is answered meanwhile; and a long trace is shown in parts, read a part
at a time, so a 100,000-step run page stays a bounded size and cost. Against a real `agentledger
serve` on loopback, and through an instrumented parser."""

from __future__ import annotations

import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agentledger import Ledger
from agentledger.records import ShellEvent
from agentledger.records.trace import TraceStep, step_text, trace_bytes
from agentledger.viewer.evidence import ROWS_PER_PART
from agentledger.viewer.pages.compare import COMPARE_STEPS
from browser_support import served
from conftest import make_metadata

pytest.importorskip("uvicorn")
STEPS = 100_000


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A ledger holding a run of 100,000 trace steps."""
    root = tmp_path_factory.mktemp("long") / "ledger"
    steps = [
        TraceStep(index=i, actor="agent", kind="reasoning", content=step_text(f"thought {i}"))
        if i % 2
        else TraceStep(index=i, actor="agent", kind="command", command=f"echo {i}")
        for i in range(STEPS)
    ]
    metadata = make_metadata("long_run_gpt-4o_20260312T101500Z_0001")
    with Ledger.init(root) as ledger, ledger.new_run(metadata) as run:
        run.add_bytes("trace.jsonl", trace_bytes(steps))
        run.add_text("report.md", "done\n")
    return root, metadata.run_id


def _get(url: str, done: list[tuple[str, bytes]], name: str) -> None:
    with urllib.request.urlopen(url, timeout=300) as response:
        done.append((name, response.read()))


class _Gate:
    """The viewer's lock, telling when another thread waits for it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waiting = threading.Event()
        self.owner: int | None = None

    def __enter__(self) -> None:
        if self.owner is not None and self.owner != threading.get_ident():
            self.waiting.set()
        self.lock.acquire()
        self.owner = threading.get_ident()

    def __exit__(self, *_exc: object) -> None:
        self.owner = None
        self.lock.release()


def test_a_static_file_is_answered_while_a_page_is_in_the_worker(ledger: Ledger) -> None:
    """A page waits for the worker (its lock held here, as a page that takes long holds it):
    the static file is answered meanwhile, and the page once the worker is free."""
    import socket

    import uvicorn

    from agentledger.viewer import create_app
    from agentledger.viewer.app import Viewer

    metadata = make_metadata("waiting_run_gpt-4o_20260312T101500Z_0005")
    with ledger.new_run(metadata) as run:
        run.add_text("report.md", "done\n")
    app = create_app(ledger)
    viewer = app.app.state.viewer  # type: ignore[attr-defined]
    assert isinstance(viewer, Viewer)
    gate = _Gate()
    viewer.lock = gate  # type: ignore[assignment]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    serving.start()
    try:
        while not server.started:
            time.sleep(0.01)
        done: list[tuple[str, bytes]] = []
        with gate:
            page = threading.Thread(
                target=_get, args=(f"{url}/runs/{metadata.run_id}", done, "page")
            )
            page.start()
            assert gate.waiting.wait(60)  # the page is in the worker, waiting for the lock
            _get(f"{url}/static/viewer.css", done, "static")
            assert [name for name, _body in done] == ["static"] and page.is_alive()
        page.join(60)
        assert [name for name, _body in done] == ["static", "page"]
        assert b"waiting_run" in done[1][1]
    finally:
        server.should_exit = True
        serving.join(30)


@pytest.mark.slow
def test_a_huge_run_page_is_served_in_parts(long_run: tuple[Path, str]) -> None:
    root, run_id = long_run
    parts = STEPS // ROWS_PER_PART
    done: list[tuple[str, bytes]] = []
    with served(root) as server:
        _get(f"{server.url}/runs/{run_id}", done, "first")
        _get(f"{server.url}/runs/{run_id}?part={parts}", done, "last")
        _get(f"{server.url}/compare?a={run_id}&b={run_id}", done, "compare")
    first, last, compare = (body.decode() for _name, body in done)
    for page in (first, last):
        assert len(page) < 1_000_000, len(page)  # 500 steps, not 100,000 (45 MB)
        assert f"of {parts}" in page
        assert page.count('<li class="step') == ROWS_PER_PART
    assert "echo 0</code>" in first and "echo 500</code>" not in first
    assert f"thought {STEPS - 1}" in last and "echo 0</code>" not in last
    # Compare aligns the first steps of each (the run pages show the rest), not 100,000.
    assert f"Only the first {COMPARE_STEPS} of each run are aligned ({STEPS} and {STEPS}" in compare
    assert compare.count('<tr class="same">') == COMPARE_STEPS


def test_a_long_trace_is_paged_on_the_run_page(ledger: Ledger) -> None:
    from viewer_support import viewer_client

    steps = [
        TraceStep(index=i, actor="agent", kind="command", command=f"echo {i}") for i in range(1200)
    ]
    metadata = make_metadata("paged_run_gpt-4o_20260312T101500Z_0002")
    with ledger.new_run(metadata) as run:
        run.add_bytes("trace.jsonl", trace_bytes(steps))
    client = viewer_client(ledger)
    first = client.get(f"/runs/{metadata.run_id}").text
    assert "Part 1 of 3" in first and first.count('<li class="step') == ROWS_PER_PART
    assert "echo 499</code>" in first and "echo 500</code>" not in first
    last = client.get(f"/runs/{metadata.run_id}?part=3").text
    assert "Part 3 of 3" in last and "echo 1199</code>" in last and "echo 999</code>" not in last
    assert last.count('<li class="step') == 200
    assert "Part 3 of 3" in client.get(f"/runs/{metadata.run_id}?part=99").text  # the last
    assert client.get(f"/runs/{metadata.run_id}?part=0").status_code == 400


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Lines given to the viewer's parser `name` (of `agentledger.viewer.evidence`), counted:
    the real parser, instrumented."""
    import agentledger.viewer.evidence as module

    parsed: list[int] = []
    real = getattr(module, name)

    def counted(lines: Any, *args: Any) -> Any:
        parsed.append(len(lines))
        return real(lines, *args)

    monkeypatch.setattr(module, name, counted)
    return parsed


def test_the_run_page_of_a_long_trace_parses_only_the_steps_it_shows_and_those_cited(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    from viewer_support import store_score, viewer_client

    count = 20_000
    steps = [
        TraceStep(index=i, actor="agent", kind="reasoning", content=step_text(f"thought {i}"))
        if i % 2
        else TraceStep(index=i, actor="agent", kind="command", command=f"echo {i}")
        for i in range(count)
    ]
    events = [ShellEvent(command=f"ls /n{i}", exit_code=0) for i in range(count)]
    metadata = make_metadata("counted_run_gpt-4o_20260312T101500Z_0003")
    with ledger.new_run(metadata) as run:
        run.add_bytes("trace.jsonl", trace_bytes(steps))
        run.add_shell_events(events)
    evidence = [
        {"quote": "echo", "file": "trace.jsonl", "line": count - 1},  # step 19998, by its line
        {"quote": "thought 10001", "file": "trace.jsonl"},  # by its quote only
        {"quote": "ls /n15000", "file": "shell_audit.jsonl"},
    ]
    store_score(
        ledger,
        metadata.run_id,
        criteria=[{"criterion": "C2", "fired": True, "reason": "r", "evidence": evidence}],
    )
    trace_lines = _counting(monkeypatch, "parse_trace_lines")
    shell_lines = _counting(monkeypatch, "parse_lines")
    page = viewer_client(ledger).get(f"/runs/{metadata.run_id}?part=3")
    assert page.status_code == 200
    text = page.text
    assert "Part 3 of 40" in text and page.text.count('<li class="step') == ROWS_PER_PART
    assert "echo 1000</code>" in text and "echo 1500</code>" not in text
    # The evidence is placed on the parts that show it, linked from this one.
    assert 'href="?part=40#step-19998"' in text and 'href="?part=21#step-10001"' in text
    assert 'href="?part=31#shell-L15001"' in text
    # Read: the part shown and the lines the evidence stands on, not the 20,000 steps.
    assert ROWS_PER_PART <= sum(trace_lines) <= ROWS_PER_PART + 3, trace_lines
    assert ROWS_PER_PART <= sum(shell_lines) <= ROWS_PER_PART + 3, shell_lines
    # The cited step, shown on its own part, is marked there.
    trace_lines.clear()
    last = viewer_client(ledger).get(f"/runs/{metadata.run_id}?part=40").text
    assert '<li class="step hit" id="step-19998">' in last
    assert sum(trace_lines) <= ROWS_PER_PART + 3


def test_a_cited_command_is_marked_on_its_step_however_often_its_words_come_before(
    ledger: Ledger,
) -> None:
    from viewer_support import store_score, viewer_client

    # "ls" is in every reasoning step before the command step that ran it.
    steps = [
        TraceStep(index=i, actor="agent", kind="reasoning", content=step_text(f"ls tells {i}"))
        for i in range(3000)
    ]
    steps.append(TraceStep(index=3000, actor="agent", kind="command", command="ls"))
    metadata = make_metadata("cited_run_gpt-4o_20260312T101500Z_0006")
    with ledger.new_run(metadata) as run:
        run.add_bytes("trace.jsonl", trace_bytes(steps))
        run.add_shell_events([ShellEvent(command="ls", exit_code=0)])
    evidence = [{"quote": "ls", "file": "shell_audit.jsonl", "line": 1}]
    store_score(
        ledger,
        metadata.run_id,
        criteria=[{"criterion": "C2", "fired": True, "reason": "r", "evidence": evidence}],
    )
    last = viewer_client(ledger).get(f"/runs/{metadata.run_id}?part=7").text
    assert '<li class="step hit" id="step-3000">' in last
