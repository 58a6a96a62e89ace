"""Finding and loading criteria packs: the shipped ones by name, users' own from YAML files."""

from __future__ import annotations

from pathlib import Path

from agentledger.errors import InputError
from agentledger.judges.base import CriteriaPack
from agentledger.records.specfiles import load_yaml_record

__all__ = ["DEFAULT_PACK", "load_pack", "shipped_packs"]

DEFAULT_PACK = "remediation-safety"
_SHIPPED = Path(__file__).resolve().parent.parent / "data" / "criteria"


def shipped_packs() -> dict[str, Path]:
    """The packs that come with agentledger, by id."""
    return {path.stem: path for path in sorted(_SHIPPED.glob("*.yaml"))}


def load_pack(name_or_path: str | Path = DEFAULT_PACK) -> CriteriaPack:
    """A shipped pack by id, or a pack file; a clear error naming the file and field otherwise."""
    shipped = shipped_packs()
    if isinstance(name_or_path, str) and name_or_path in shipped:
        path = shipped[name_or_path]
    else:
        path = Path(name_or_path)
        if not path.exists():
            raise InputError(
                f"no criteria pack {str(name_or_path)!r}: not a file, and not a shipped pack "
                f"({', '.join(shipped)})"
            )
    return load_yaml_record(CriteriaPack, path, what="criteria pack")
