"""Labelling in the viewer: the form writes a label record through labels/, the same one
`agentledger label` writes, visible in `agentledger labels list`; a bad form writes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from agentledger import Ledger
from agentledger.cli import main
from agentledger.labels import labels_of_run
from conftest import WriteRun
from viewer_support import csrf_of, store_score, viewer_client


@pytest.fixture
def run_id(ledger: Ledger, write_run: WriteRun) -> str:
    made = write_run()
    store_score(ledger, made, "Unsafe")
    return made


def post_label(client: TestClient, run_id: str, **fields: Any) -> Any:
    token = csrf_of(client.get(f"/runs/{run_id}").text)
    return client.post(f"/runs/{run_id}/label", data={"csrf": token, **fields})


def no_label_files(ledger: Ledger) -> bool:
    folder = ledger.root / "labels"
    return not folder.exists() or not any(folder.rglob("*.json"))


def test_the_form_offers_the_criteria_the_judges_assessed(ledger: Ledger, run_id: str) -> None:
    page = viewer_client(ledger, labeller="Ada Lovelace").get(f"/runs/{run_id}").text
    assert '<select name="criterion.C2">' in page and '<select name="criterion.C4">' in page
    # The server's own name is not every visitor's: "By" starts empty.
    assert (
        '<input name="by" value="" placeholder="your name (remembered in this browser)" '
        "required>" in page
    )


def test_by_is_remembered_in_the_browser_that_saved_and_saving_says_so_by_the_form(
    ledger: Ledger, run_id: str
) -> None:
    client = viewer_client(ledger, labeller="server owner")
    response = post_label(client, run_id, verdict="safe", by="grace")
    assert response.status_code == 303
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("agentledger_by=grace;") and "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    (label,) = labels_of_run(ledger, run_id)
    page = client.get(response.headers["location"]).text
    assert f'<p class="notice" role="status" id="saved-here">Saved: label {label.label_id}' in (
        page
    )
    assert '<input name="by" value="grace" placeholder=' in page
    # Another browser (no cookie) starts empty.
    other = viewer_client(ledger, labeller="server owner").get(f"/runs/{run_id}").text
    assert '<input name="by" value="" placeholder=' in other


def test_a_label_is_written_and_listed_by_the_cli(ledger: Ledger, run_id: str) -> None:
    client = viewer_client(ledger)
    response = post_label(
        client,
        run_id,
        verdict="unsafe",
        **{"criterion.C2": "yes", "criterion.C4": ""},
        diagnosis="correct",
        reason="deleted the shaper's qdisc",
        by="Ada Lovelace",
    )
    assert response.status_code == 303
    (label,) = labels_of_run(ledger, run_id)
    assert response.headers["location"] == f"/runs/{run_id}?saved={label.label_id}#labels"
    assert label.by.name == "Ada.Lovelace" and label.by.kind == "person"
    assert label.verdict == "Unsafe" and label.diagnosis_correct is True
    assert [(c.criterion, c.fired) for c in label.criteria] == [("C2", True)]
    assert label.reason == "deleted the shaper's qdisc"
    listed = CliRunner().invoke(main, ["labels", "list", "--ledger", str(ledger.root), "--json"])
    assert listed.exit_code == 0
    (record,) = json.loads(listed.stdout)
    assert record["label_id"] == label.label_id and record["verdict"] == "Unsafe"
    table = CliRunner().invoke(main, ["labels", "list", "--ledger", str(ledger.root)])
    assert run_id in table.stdout and "C2=yes" in table.stdout
    page = client.get(response.headers["location"]).text
    assert f"Label {label.label_id} saved." in page
    assert "deleted the shaper&#39;s qdisc" in page


def test_a_newer_label_by_the_same_person_replaces_the_older(ledger: Ledger, run_id: str) -> None:
    client = viewer_client(ledger)
    post_label(client, run_id, verdict="safe", by="alice")
    post_label(client, run_id, verdict="unsafe", by="alice")
    page = client.get(f"/runs/{run_id}").text
    assert page.count("(not current)") == 1
    runs = client.get("/runs?label_source=alice&label_verdict=unsafe").text
    assert f'href="/runs/{run_id}"' in runs


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"by": "alice"}, "nothing to label"),
        ({"verdict": "maybe", "by": "alice"}, "verdict &#39;maybe&#39; is not valid"),
        ({"verdict": "safe", "by": ""}, "who is labelling"),
        ({"verdict": "safe", "by": "../etc"}, "is not a valid source name"),
        ({"diagnosis": "sort of", "by": "alice"}, "diagnosis"),
        ({"criterion.C2": "perhaps", "by": "alice"}, "fired &#39;perhaps&#39; is not valid"),
        ({"criterion.C9": "yes", "by": "alice"}, "is not one the judges of run"),
        ({"verdict": "safe", "by": "alice", "colour": "red"}, "parameter &#39;colour&#39;"),
        ({"verdict": "safe", "by": "alice", "reason": "x" * 10_001}, "at most 10000"),
    ],
)
def test_a_bad_form_is_a_400_that_says_why_and_writes_nothing(
    ledger: Ledger, run_id: str, fields: dict[str, str], says: str
) -> None:
    response = post_label(viewer_client(ledger), run_id, **fields)
    assert response.status_code == 400
    assert says in response.text
    assert no_label_files(ledger)


def test_a_label_of_a_run_that_is_not_there_is_refused(ledger: Ledger, run_id: str) -> None:
    client = viewer_client(ledger)
    token = csrf_of(client.get(f"/runs/{run_id}").text)
    missing = client.post("/runs/nope/label", data={"csrf": token, "verdict": "safe"})
    assert missing.status_code == 404
    tricky = client.post("/runs/..%2Fx/label", data={"csrf": token, "verdict": "safe"})
    assert tricky.status_code in (400, 404)
    assert client.get(f"/runs/{run_id}/label").status_code == 405
    assert no_label_files(ledger)


def test_labelling_from_the_queue_goes_on_to_the_next_run(
    ledger: Ledger, write_run: WriteRun
) -> None:
    older, newer = write_run(), write_run()
    client = viewer_client(ledger)
    start = client.get("/review/next").headers["location"]
    assert start == f"/runs/{newer}?review=1"
    page = client.get(start).text
    assert '<input type="hidden" name="next" value="1">' in page
    token = csrf_of(page)
    saved = client.post(
        f"/runs/{newer}/label", data={"csrf": token, "verdict": "safe", "by": "bob", "next": "1"}
    )
    assert saved.status_code == 303
    assert saved.headers["location"] == f"/review/next?after={newer}"
    assert client.get(saved.headers["location"]).headers["location"] == (f"/runs/{older}?review=1")
    assert "1 run(s) wait: 1 unlabelled." in client.get("/review").text
