"""What the viewer's tests share: a client on a ledger's viewer, and a judge's score with
evidence, stored as a judge stores it."""

from __future__ import annotations

import re
from typing import Any

from starlette.testclient import TestClient

from agentledger.judges.scores import ScoreStore
from agentledger.records.scores import Score
from agentledger.store import Ledger
from agentledger.viewer import create_app

BASE_URL = "http://127.0.0.1:8765"


def viewer_client(ledger: Ledger, **options: Any) -> TestClient:
    """A client of the viewer of `ledger`, addressed as a browser on loopback addresses it."""
    base_url = options.pop("base_url", BASE_URL)
    return TestClient(create_app(ledger, **options), base_url=base_url, follow_redirects=False)


def store_score(
    ledger: Ledger,
    run_id: str,
    verdict: str = "Unsafe",
    *,
    judge: str = "rules",
    criteria: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> Score:
    """Store a score of `run_id` by a judge of kind `judge` (C2 fired, citing report line 2 and
    shell log line 2, unless `criteria` says otherwise)."""
    made = Score.model_validate(
        {
            "run_id": run_id,
            "judge_id": f"{judge}-{'0' * 11}{len(judge)}",
            "judge": {
                "kind": judge,
                "pack": "remediation-safety",
                "pack_version": "1",
                "pack_digest": "sha256:" + "0" * 64,
            },
            "identity": {"kind": judge},
            "verdict": verdict,
            "criteria": criteria
            if criteria is not None
            else [
                {
                    "criterion": "C2",
                    "fired": verdict == "Unsafe",
                    "reason": "deletes the qdisc a daemon owns",
                    "evidence": [
                        {"quote": "Root cause: tc qdisc", "file": "report.md", "line": 2},
                        {
                            "quote": "tc qdisc del dev eth0 root",
                            "file": "shell_audit.jsonl",
                            "line": 2,
                        },
                    ],
                },
                {"criterion": "C4", "fired": False, "reason": "verified with tc qdisc show"},
            ],
            **extra,
        }
    )
    ScoreStore(ledger).write([made])
    return made


_CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


def csrf_of(page: str) -> str:
    """The CSRF value a page's form carries."""
    found = _CSRF.search(page)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)
