"""Run identity: hashes, run ids, safe names, agent commit detection."""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentledger.errors import UnsafeNameError
from agentledger.identity import (
    canonical_json,
    check_artifact_name,
    check_run_id,
    detect_agent_checkout,
    effective_prompt,
    make_run_id,
    normalize_hash_prefix,
    sha256_bytes,
    short_hash,
)


def test_canonical_json_is_order_independent() -> None:
    assert canonical_json({"b": 1, "a": [1, "é"]}) == canonical_json({"a": [1, "é"], "b": 1})
    assert canonical_json({"a": 1}) == b'{"a":1}'


def test_prompt_hash_is_over_exact_bytes() -> None:
    base = b"You are Ghost.\n"
    plain = effective_prompt(base)
    assert plain.text == base
    assert plain.system_prompt_hash == sha256_bytes(base) == plain.base_prompt_hash
    assert plain.addon_hash is None
    # One byte of difference is a different experiment.
    assert effective_prompt(base + b" ").system_prompt_hash != plain.system_prompt_hash


def test_addon_changes_the_effective_hash_but_not_the_base() -> None:
    base = b"You are Ghost.\n"
    variant = effective_prompt(base, b"MANDATORY: decide whether tc or netfilter owns the fault.")
    assert variant.base_prompt_hash == sha256_bytes(base)
    assert variant.system_prompt_hash != variant.base_prompt_hash
    assert variant.text.startswith(base)
    assert (
        variant.text
        == b"You are Ghost.\n\nMANDATORY: decide whether tc or netfilter owns the fault."
    )
    assert variant.addon_hash == sha256_bytes(
        b"MANDATORY: decide whether tc or netfilter owns the fault."
    )


def test_run_ids_are_readable_unique_and_safe() -> None:
    when = datetime(2026, 3, 12, 10, 15, tzinfo=UTC)
    first = make_run_id("use_case_m", "claude-haiku-4-5", when)
    assert re.fullmatch(r"use_case_m_claude-haiku-4-5_20260312T101500Z_[0-9a-f]{6}", first)
    assert len({make_run_id("use_case_m", "claude-haiku-4-5", when) for _ in range(500)}) == 500


def test_run_id_slugs_unsafe_model_names() -> None:
    run_id = make_run_id("case 1/../x", "models/gemini-2.5-flash\n")
    assert "/" not in run_id and ".." not in run_id and "\n" not in run_id
    assert check_run_id(run_id) == run_id


@pytest.mark.parametrize(
    "bad",
    ["", "a/b", "..", "a..b", "../etc", "-rf", ".hidden", "a\nb", "a\x1b[31m", "a b", "x" * 201],
)
def test_unsafe_run_ids_are_refused(bad: str) -> None:
    with pytest.raises(UnsafeNameError):
        check_run_id(bad)


@pytest.mark.parametrize("good", ["report.md", "attachments/trace.png", "snapshot.json"])
def test_artifact_names(good: str) -> None:
    assert check_artifact_name(good) == good


@pytest.mark.parametrize(
    "bad", ["", "/etc/passwd", "../x", "a/../b", "a//b", ".env", "a/.git/x", "x\ty", "a\\b"]
)
def test_unsafe_artifact_names_are_refused(bad: str) -> None:
    with pytest.raises(UnsafeNameError):
        check_artifact_name(bad)


def test_hash_prefix_normalisation() -> None:
    assert normalize_hash_prefix("A3F9") == "sha256:a3f9"
    assert normalize_hash_prefix("sha256:a3f9c2d1") == "sha256:a3f9c2d1"
    with pytest.raises(ValueError, match="not a sha256"):
        normalize_hash_prefix("xyz")
    assert short_hash("sha256:" + "ab" * 32) == "abababab"
    assert short_hash(None) == "-"


def _git(path: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)


def test_agent_commit_from_a_git_checkout(tmp_path: Path) -> None:
    repo = tmp_path / "agent"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "dev@example.com")
    _git(repo, "config", "user.name", "Dev")
    (repo / "agent.py").write_text("print('ghost')\n")
    _git(repo, "add", "agent.py")
    _git(repo, "commit", "-qm", "agent")
    clean = detect_agent_checkout(repo)
    assert clean.commit and re.fullmatch(r"[0-9a-f]{40}", clean.commit)
    assert clean.dirty is False
    (repo / "agent.py").write_text("print('changed')\n")
    assert detect_agent_checkout(repo).dirty is True


def test_agent_commit_unknown_outside_a_checkout(tmp_path: Path) -> None:
    found = detect_agent_checkout(tmp_path)
    assert found.commit is None and found.dirty is None
