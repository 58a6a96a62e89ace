"""Model families, so that no run is scored by a judge model of its own family.

A model scores outputs that match its own reasoning patterns more favourably, so a run made by a
Claude model is not sent to a Claude judge. The map from model ids to families is data
(``agentledger/data/model_families.yaml``); users extend or override it with a file of the same
shape. The LLM judge does not refuse by itself: the scoring loop asks `same_family` first.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import Field, field_validator

from agentledger.records import Record
from agentledger.records.specfiles import load_yaml_record

__all__ = [
    "DEFAULT_FAMILIES_FILE",
    "FamilyMap",
    "FamilyRule",
    "ModelFamiliesFile",
    "default_families",
    "family_of",
    "load_families",
    "same_family",
]

DEFAULT_FAMILIES_FILE = Path(__file__).resolve().parent.parent / "data" / "model_families.yaml"


def _compile(pattern: str) -> re.Pattern[str]:
    if pattern.startswith("re:"):
        return re.compile(pattern[3:], re.IGNORECASE)
    return re.compile(fnmatch.translate(pattern.lower()), re.IGNORECASE)


class ModelFamiliesFile(Record):
    """A model families file: family name -> patterns matched against model ids."""

    replace_defaults: bool = Field(
        default=False, description="True: use only this file, not agentledger's own map."
    )
    families: dict[str, list[str]] = Field(
        description="Family -> globs (or `re:` regular expressions) matching whole model ids."
    )

    @field_validator("families")
    @classmethod
    def _valid_patterns(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for family, patterns in value.items():
            if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", family):
                raise ValueError(
                    f"family {family!r}: use lower-case letters, digits, '.', '_' or '-'"
                )
            for pattern in patterns:
                if not pattern.strip():
                    raise ValueError(f"family {family!r}: empty pattern")
                try:
                    _compile(pattern)
                except re.error as exc:
                    raise ValueError(f"family {family!r}: bad pattern {pattern!r}: {exc}") from None
        return value


@dataclass(frozen=True)
class FamilyRule:
    """One pattern and the family it stands for."""

    family: str
    pattern: str

    def matches(self, model_id: str) -> bool:
        """True when the pattern matches the whole of `model_id` (case-insensitive)."""
        return _compile_cached(self.pattern).fullmatch(model_id) is not None


@cache
def _compile_cached(pattern: str) -> re.Pattern[str]:
    return _compile(pattern)


def _forms(model_id: str) -> Iterator[str]:
    """The id as given, then without each leading ``owner/`` part, most complete first."""
    form = model_id.strip()
    while form:
        yield form
        _, slash, rest = form.partition("/")
        form = rest if slash else ""


class FamilyMap:
    """Ordered rules from model-id patterns to families; the first rule that matches wins."""

    def __init__(self, rules: list[FamilyRule]) -> None:
        self.rules = list(rules)

    @classmethod
    def from_file(cls, source: ModelFamiliesFile) -> FamilyMap:
        """The rules of one parsed families file, in file order."""
        return cls(
            [
                FamilyRule(family, pattern)
                for family, patterns in source.families.items()
                for pattern in patterns
            ]
        )

    @classmethod
    def load(cls, path: str | Path | None = None) -> FamilyMap:
        """The shipped map, extended (or replaced) by the families file at `path`, if any."""
        return load_families(path)

    def extended(self, other: FamilyMap) -> FamilyMap:
        """A map trying `other`'s rules first, then these."""
        return FamilyMap([*other.rules, *self.rules])

    def family_of(self, model_id: str | None) -> str | None:
        """The family of `model_id`, or None when no pattern matches it."""
        if not model_id:
            return None
        for form in _forms(model_id):
            for rule in self.rules:
                if rule.matches(form):
                    return rule.family
        return None

    def same_family(self, run_model: str, run_model_served: str | None, judge_model: str) -> bool:
        """True when the run's model (asked for, or served) shares the judge model's family.

        Identical ids count as one family even when the map knows neither.
        """
        judge_family = self.family_of(judge_model)
        for candidate in (run_model, run_model_served):
            if not candidate:
                continue
            if _bare(candidate) == _bare(judge_model):
                return True
            if judge_family is not None and self.family_of(candidate) == judge_family:
                return True
        return False


def _bare(model_id: str) -> str:
    return model_id.strip().rsplit("/", 1)[-1].lower()


@cache
def default_families() -> FamilyMap:
    """The map shipped with agentledger."""
    shipped = load_yaml_record(ModelFamiliesFile, DEFAULT_FAMILIES_FILE, what="model families file")
    return FamilyMap.from_file(shipped)


def load_families(path: str | Path | None = None) -> FamilyMap:
    """The shipped map, with the rules of the YAML file at `path` tried first.

    With ``replace_defaults: true`` in that file, only its rules are used. A file that does not
    parse raises RecordError naming the file, the field and the line.
    """
    if path is None:
        return default_families()
    own = load_yaml_record(ModelFamiliesFile, Path(path), what="model families file")
    mapped = FamilyMap.from_file(own)
    return mapped if own.replace_defaults else default_families().extended(mapped)


def family_of(model_id: str | None, families: FamilyMap | None = None) -> str | None:
    """The family of `model_id` in `families` (default: the shipped map), or None."""
    return (families or default_families()).family_of(model_id)


def same_family(
    run_model: str,
    run_model_served: str | None,
    judge_model: str,
    families: FamilyMap | None = None,
) -> bool:
    """True when a judge running `judge_model` must not score a run made by `run_model`."""
    return (families or default_families()).same_family(run_model, run_model_served, judge_model)
