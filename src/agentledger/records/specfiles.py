"""Reading the hand-written spec files (YAML and TOML) into pydantic records.

Every problem becomes a `RecordError` that names the file, the field, and for YAML the line, so a
user can go straight to the mistake.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from agentledger.errors import RecordError

__all__ = [
    "load_toml_record",
    "load_yaml_record",
    "read_spec_bytes",
    "read_text_file",
    "validation_problem",
    "yaml_line",
]

M = TypeVar("M", bound=BaseModel)

MAX_SPEC_BYTES = 10 * 1024 * 1024


def read_spec_bytes(path: Path, *, what: str) -> bytes:
    """The bytes of `path`; a RecordError naming it when it is missing, a directory or huge."""
    try:
        if path.is_dir():
            raise RecordError(path, f"{what} is a directory, expected a file")
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise RecordError(path, f"{what} is {size} bytes; the limit is {MAX_SPEC_BYTES}")
        return path.read_bytes()
    except FileNotFoundError:
        raise RecordError(path, f"{what} does not exist") from None
    except PermissionError:
        raise RecordError(path, f"{what} cannot be read (permission denied)") from None


def read_text_file(path: Path, *, what: str, allow_empty: bool = False) -> str:
    """The UTF-8 text of `path`; a clear error when it is missing, binary, empty or huge."""
    raw = read_spec_bytes(path, what=what)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(path, f"{what} is not UTF-8 text (byte {exc.start})") from None
    if "\x00" in text:
        raise RecordError(path, f"{what} holds NUL bytes; expected text")
    if not allow_empty and not text.strip():
        raise RecordError(path, f"{what} is empty")
    return text


def validation_problem(error: ValidationError) -> tuple[tuple[str | int, ...], str]:
    """The location and message of the first problem, with a count of the others."""
    first = error.errors()[0]
    problem = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        problem = "unknown field (check its spelling)"
    more = error.error_count() - 1
    if more:
        problem += f" (and {more} more problem{'s' if more > 1 else ''})"
    return tuple(first["loc"]), problem


def _dotted(loc: tuple[str | int, ...]) -> str | None:
    return ".".join(str(part) for part in loc) or None


def yaml_line(node: yaml.Node | None, loc: tuple[str | int, ...]) -> int | None:
    """The 1-based line of the value at `loc` in a composed YAML tree, as deep as it goes."""
    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    node, line = value, key.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def load_yaml_record(cls: type[M], path: Path, *, what: str, context: Any = None) -> M:
    """Parse the YAML file at `path` as `cls` (safe loader only; no tags, no code)."""
    text = read_text_file(path, what=what)
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise RecordError(path, f"not valid YAML: {exc.problem}", line=line) from None
    except yaml.YAMLError as exc:
        raise RecordError(path, f"not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        found = "nothing" if data is None else type(data).__name__
        raise RecordError(path, f"expected a mapping of fields at the top, found {found}")
    try:
        return cls.model_validate(data, context=context)
    except ValidationError as exc:
        loc, problem = validation_problem(exc)
        line = yaml_line(yaml.compose(text, Loader=yaml.SafeLoader), loc)
        raise RecordError(path, problem, field=_dotted(loc), line=line) from None


def load_toml_record(cls: type[M], path: Path, *, what: str, context: Any = None) -> M:
    """Parse the TOML file at `path` as `cls`."""
    text = read_text_file(path, what=what)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RecordError(path, f"not valid TOML: {exc}") from None
    try:
        return cls.model_validate(data, context=context)
    except ValidationError as exc:
        loc, problem = validation_problem(exc)
        raise RecordError(path, problem, field=_dotted(loc)) from None
