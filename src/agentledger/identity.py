"""Run identity: canonical JSON, prefixed hashes, run ids, prompt hashes, agent commit detection.

`system_prompt_hash` is the load-bearing field of a run: the sha256 of the exact bytes of the
effective system prompt (base + addon). Two runs with the same hash ran the same experiment.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentledger.errors import UnsafeNameError

__all__ = [
    "HASH_PREFIX",
    "AgentCheckout",
    "EffectivePrompt",
    "canonical_json",
    "check_artifact_name",
    "check_run_id",
    "detect_agent_checkout",
    "effective_prompt",
    "make_run_id",
    "normalize_hash_prefix",
    "sha256_bytes",
    "short_hash",
    "slug",
]

HASH_PREFIX = "sha256:"
RUN_ID_MAX = 200
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_ARTIFACT_PART_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]*$")
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_HEX_RE = re.compile(r"^[0-9a-f]+$")


def canonical_json(value: Any) -> bytes:
    """JSON with sorted keys, no insignificant whitespace, UTF-8: equal values give equal bytes."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def json_text_field(data: bytes, name: str) -> str | None:
    """The text `data`, a JSON object, holds under `name`; None when it holds none (or is not
    JSON, or not an object)."""
    try:
        value = json.loads(data)
    except ValueError:
        return None
    found = value.get(name) if isinstance(value, dict) else None
    return found if isinstance(found, str) else None


def sha256_bytes(data: bytes) -> str:
    """The prefixed sha256 of `data`, e.g. ``sha256:a3f9...``."""
    return HASH_PREFIX + hashlib.sha256(data).hexdigest()


def short_hash(prefixed: str | None, length: int = 8) -> str:
    """The first hex digits of a prefixed hash, for display only."""
    if not prefixed:
        return "-"
    return prefixed.removeprefix(HASH_PREFIX)[:length]


def normalize_hash_prefix(text: str) -> str:
    """Turn user input (``a3f9``, ``sha256:a3f9``, ``A3F9``) into a prefix of a stored hash.

    Raises ValueError when what is left is not hexadecimal.
    """
    digits = text.strip().lower().removeprefix(HASH_PREFIX)
    if not digits or not _HEX_RE.match(digits) or len(digits) > 64:
        raise ValueError(f"'{text}' is not a sha256 hash or a prefix of one (hex digits expected)")
    return HASH_PREFIX + digits


@dataclass(frozen=True)
class EffectivePrompt:
    """The system prompt a run actually used, and the hashes that identify it."""

    text: bytes
    system_prompt_hash: str
    base_prompt_hash: str
    addon_hash: str | None


def effective_prompt(base: bytes, addon: bytes | None = None) -> EffectivePrompt:
    """Append `addon` to `base` without touching `base`, and hash both and the result.

    The addon is separated from the base by exactly one blank line, so the effective prompt
    is reproducible from the two files alone.
    """
    text = base if addon is None else base.rstrip(b"\n") + b"\n\n" + addon
    return EffectivePrompt(
        text=text,
        system_prompt_hash=sha256_bytes(text),
        base_prompt_hash=sha256_bytes(base),
        addon_hash=sha256_bytes(addon) if addon is not None else None,
    )


def slug(text: str, *, max_length: int = 60) -> str:
    """A run-id-safe form of a name: ``models/gemini-2.5`` -> ``models-gemini-2.5``."""
    cleaned = _SLUG_UNSAFE.sub("-", text).strip("-._")
    cleaned = re.sub(r"\.{2,}", ".", cleaned)
    return cleaned[:max_length].strip("-._") or "x"


def make_run_id(scenario: str, model: str, when: datetime | None = None) -> str:
    """A readable, unique run id: ``<scenario>_<model>_<UTC timestamp>_<short random>``."""
    moment = (when or datetime.now(UTC)).astimezone(UTC)
    stamp = moment.strftime("%Y%m%dT%H%M%SZ")
    run_id = f"{slug(scenario)}_{slug(model)}_{stamp}_{secrets.token_hex(3)}"
    check_run_id(run_id)
    return run_id


def check_run_id(run_id: str) -> str:
    """Return `run_id` if it is safe as a directory name; raise UnsafeNameError otherwise."""
    if not isinstance(run_id, str) or not run_id:
        raise UnsafeNameError("run id is empty")
    if len(run_id) > RUN_ID_MAX:
        raise UnsafeNameError(f"run id is {len(run_id)} characters long (at most {RUN_ID_MAX})")
    if ".." in run_id or not _RUN_ID_RE.match(run_id):
        raise UnsafeNameError(
            f"run id {run_id!r} is not safe: use letters, digits, '.', '_' and '-' only, "
            "starting with a letter or digit, and no '..'"
        )
    return run_id


def check_artifact_name(name: str) -> str:
    """Return `name` if it is a safe relative artifact path (``attachments/x.png``)."""
    if not isinstance(name, str) or not name:
        raise UnsafeNameError("artifact name is empty")
    parts = name.split("/")
    if len(name) > 255 or len(parts) > 8:
        raise UnsafeNameError(f"artifact name {name!r} is too long or too deep")
    for part in parts:
        if part in ("", ".", "..") or ".." in part or not _ARTIFACT_PART_RE.match(part):
            raise UnsafeNameError(
                f"artifact name {name!r} is not safe: each path part may hold letters, digits, "
                "'.', '_', '+' and '-', must not start with '.' or '-', and '..' is refused"
            )
    return name


@dataclass(frozen=True)
class AgentCheckout:
    """What a git checkout says about the agent's code: its commit and whether it was modified."""

    commit: str | None
    dirty: bool | None


def detect_agent_checkout(path: str | Path) -> AgentCheckout:
    """Read the commit and dirty state of the git checkout at `path`.

    Returns unknowns (None) when `path` is not a git checkout or git is not installed: an
    unknown commit is recorded as unknown, never guessed.
    """
    import subprocess  # here: the commands that never look at a checkout (label) skip it

    where = str(path)
    try:
        head = subprocess.run(
            ["git", "-C", where, "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if head.returncode != 0:
            return AgentCheckout(commit=None, dirty=None)
        status = subprocess.run(
            ["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return AgentCheckout(commit=None, dirty=None)
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return AgentCheckout(commit=head.stdout.strip(), dirty=dirty)
