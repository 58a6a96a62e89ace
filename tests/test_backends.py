"""Which backends a ledger uses: named in ledger.json, picked by URI scheme, and isolated.

The end-to-end test runs a whole ledger on the in-memory backend through the library (import,
judge, read the scores, decide, cache) and finds nothing of it on disk: the seam isolates.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli import main
from agentledger.errors import InputError, RecordError, RecordExistsError
from agentledger.store import LocalStorage, StorageBackend
from agentledger.store.backends import (
    UnknownBackendError,
    make_index,
    make_storage,
    register_storage,
    split_uri,
)
from agentledger.store.storage.memory import MemoryStorage, forget

OLD_LEDGER_JSON = """{
  "schema_version": 1,
  "kind": "agentledger",
  "created_at": "2026-03-01T09:00:00Z",
  "max_artifact_bytes": 104857600
}
"""


def _config(root: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((root / "ledger.json").read_text())
    return loaded


def test_init_records_the_backends_in_ledger_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", str(tmp_path / "l")])
    assert result.exit_code == 0, result.output
    config = _config(tmp_path / "l")
    assert (config["storage"], config["index"]) == ("local", "sqlite")
    with Ledger.open(tmp_path / "l") as ledger:
        assert isinstance(ledger.storage, LocalStorage)
        assert ledger.storage.uri == "local"


def test_a_ledger_json_from_before_backends_opens_as_local_and_sqlite(tmp_path: Path) -> None:
    root = tmp_path / "old"
    root.mkdir()
    (root / "ledger.json").write_text(OLD_LEDGER_JSON)
    with Ledger.open(root) as ledger:
        assert isinstance(ledger.storage, LocalStorage)
        assert (ledger.config.storage, ledger.config.index) == ("local", "sqlite")
        assert ledger.runs() == []
    assert (root / "index.sqlite").is_file()
    assert (root / "ledger.json").read_text() == OLD_LEDGER_JSON  # opening rewrites nothing


@pytest.mark.parametrize("field", ["storage", "index"])
def test_an_unknown_backend_names_ledger_json_and_the_field(tmp_path: Path, field: str) -> None:
    root = tmp_path / "l"
    Ledger.init(root).close()
    config = _config(root)
    config[field] = "s4://bucket/prefix"
    (root / "ledger.json").write_text(json.dumps(config))
    with pytest.raises(RecordError) as caught:
        Ledger.open(root)
    assert caught.value.field == field
    assert caught.value.source == str(root / "ledger.json")
    assert f"unknown {field} backend 's4'" in str(caught.value)
    result = CliRunner().invoke(main, ["runs", "--ledger", str(root)])
    assert result.exit_code == 2
    assert "ledger.json" in result.output and f"field '{field}'" in result.output


def test_init_refuses_an_unknown_backend_and_writes_nothing(tmp_path: Path) -> None:
    for settings in ({"storage": "s4://bucket"}, {"index": "nosql"}, {"storage": "local:/x"}):
        with pytest.raises(InputError, match="cannot create a ledger"):
            Ledger.init(tmp_path / "l", **settings)
        assert not (tmp_path / "l").exists()


def test_uris_split_into_scheme_and_location() -> None:
    assert split_uri("local") == ("local", "")
    assert split_uri("memory://team") == ("memory", "team")
    assert split_uri("sqlite:///var/ledger/index.sqlite") == ("sqlite", "/var/ledger/index.sqlite")
    for bad in ("", "Local Disk", "://x", "1s3://x"):
        with pytest.raises(UnknownBackendError):
            split_uri(bad)


def test_callers_name_a_uri_and_the_registry_picks_the_class(tmp_path: Path) -> None:
    assert isinstance(make_storage("local", tmp_path), LocalStorage)
    memory = make_storage("memory://registry-test", tmp_path)
    assert isinstance(memory, MemoryStorage)
    assert make_storage("memory://registry-test", tmp_path / "elsewhere") is memory
    index = make_index(f"sqlite://{tmp_path / 'other.sqlite'}", tmp_path)
    index.close()
    assert (tmp_path / "other.sqlite").is_file()
    forget("registry-test")


def test_a_new_scheme_is_one_registration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agentledger.store.backends as backends

    # The registration ends with the test: other tests list the schemes a ledger may name.
    monkeypatch.setattr(backends, "_storage", dict(backends._storage))
    made: list[tuple[Path, str]] = []

    def vault(root: Path, rest: str) -> StorageBackend:
        made.append((root, rest))
        return MemoryStorage(f"vault-{rest}")

    register_storage("vault", vault)
    root = tmp_path / "l"
    with Ledger.init(root, storage="vault://team-a") as ledger:
        assert isinstance(ledger.storage, MemoryStorage)
    assert _config(root)["storage"] == "vault://team-a"
    assert made[-1] == (root, "team-a")


def test_a_whole_ledger_runs_on_the_memory_backend(tmp_path: Path) -> None:
    """Import, judge, read scores, decide and cache, all through the seam: nothing on disk."""
    from agentledger.gates.decisions import DecisionStore
    from agentledger.importers import import_runs, sample_runs_dir
    from agentledger.judges.factory import make_judge, parse_judge_spec
    from agentledger.judges.pack import load_pack
    from agentledger.judges.scores import ScoreStore, reindex_scores, run_scores
    from agentledger.judges.scoring import score_runs
    from agentledger.providers import ModelClient, ResponseCache, ScriptedProvider
    from agentledger.providers.base import CompletionRequest
    from agentledger.records.decisions import Decision, new_decision_id
    from agentledger.store import verify_ledger

    root = tmp_path / "mem"
    forget("e2e")
    with Ledger.init(root, storage="memory://e2e") as ledger:
        report = import_runs(ledger, [sample_runs_dir()])
        run_ids = sorted(report.imported)
        assert len(run_ids) > 10
        judge, _ = make_judge(parse_judge_spec("rules"), load_pack(), ledger_root=ledger.root)
        scored = score_runs(ledger, judge, run_ids)
        assert len(scored.scored) == len(run_ids) and not scored.failed
        first = scored.scored[0]
        assert run_scores(ledger, first.run_id) == [first]
        with pytest.raises(RecordExistsError, match="already scored"):
            ScoreStore(ledger).write([first])
        decision = Decision(
            decision_id=new_decision_id("variant", "memory"),
            kind="variant",
            subject="memory",
            outcome="ACCEPTED",
            rule="every model passes",
        )
        DecisionStore(ledger).write([decision])
        assert DecisionStore(ledger).list() == [decision]
        client = ModelClient(
            ScriptedProvider(["cached answer"], cacheable=True), cache=ResponseCache(ledger.storage)
        )
        request = CompletionRequest.from_prompt("m", "hi")
        assert client.complete(request).text == "cached answer"
        assert client.complete(request).cached
        assert verify_ledger(ledger).ok
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith("index.sqlite")) == [
        "ledger.json"
    ]
    with Ledger.open(root) as reopened:  # the same process finds the same named store
        assert sorted(reopened.storage.run_ids()) == run_ids
        assert reindex_scores(reopened) == len(run_ids)
        assert reopened.reindex().indexed == len(run_ids)
        assert len(reopened.storage.keys("cache")) == 1
    forget("e2e")


def test_a_response_cache_made_before_its_ledger_opens_the_ledgers_storage(
    tmp_path: Path,
) -> None:
    """A run or judge command makes its model client before it creates the ledger."""
    from agentledger.providers import ModelClient, ResponseCache, ScriptedProvider
    from agentledger.providers.base import CompletionRequest
    from agentledger.store import open_storage

    root = tmp_path / "later"
    cache = ResponseCache(lambda: open_storage(root))
    client = ModelClient(ScriptedProvider(["answer"], cacheable=True), cache=cache)
    assert not root.exists()  # nothing opened yet
    forget("later")
    Ledger.init(root, storage="memory://later").close()
    client.complete(CompletionRequest.from_prompt("m", "hi"))
    with Ledger.open(root) as ledger:
        assert ledger.storage.keys("cache") == [
            ResponseCache.key_for(client.key(CompletionRequest.from_prompt("m", "hi")))
        ]
    forget("later")
