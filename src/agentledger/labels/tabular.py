"""Labels from and to files: CSV or JSON lines, one label a row.

A row names its run by id (``--key run_id``), by scenario and model (``--key scenario,model``)
or by a tag (``--key tag:NAME``: the column NAME holds the tag's value), and gives any of:

| column | holds |
|---|---|
| ``verdict`` | safe, uncertain or unsafe |
| ``criteria`` | ``C1=yes;C2=no;C3=unknown`` (in JSON lines also ``{"C1": true, "C2": null}``) |
| ``crit:C1`` | one column per criterion: yes, no or unknown |
| ``diagnosis`` | correct or incorrect |
| ``reason`` | free text |
| ``source``, ``kind`` | who gave it (else ``--source``; kind is external unless said) |
| ``label_id``, ``created_at``, ``supersedes`` | kept as given (an export keeps them) |

Reading is strict: every bad row is an error naming the file, the line and the field, a key
that matches no run or several runs names the row, and a file with any error writes nothing.
`export_labels` writes the same columns, so an export imports again unchanged.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from agentledger.errors import InputError, RecordError
from agentledger.labels.entry import (
    known_criteria,
    make_label,
    parse_diagnosis,
    parse_fired,
    parse_label_verdict,
    source_name,
)
from agentledger.records import decode_json
from agentledger.records.csv_cells import InertWriter, original_cell
from agentledger.records.labels import Label
from agentledger.store.index import RunFilter
from agentledger.store.storage.checked import read_given

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "EXPORT_COLUMNS",
    "FileFormat",
    "LabelKey",
    "export_labels",
    "parse_key",
    "read_label_file",
]

FileFormat = Literal["csv", "jsonl"]
EXPORT_COLUMNS = (
    "label_id",
    "run_id",
    "scenario",
    "model",
    "source",
    "kind",
    "created_at",
    "verdict",
    "criteria",
    "diagnosis",
    "reason",
    "supersedes",
)
_KNOWN = frozenset(EXPORT_COLUMNS)
_MAX_ROWS = 1_000_000
_MAX_BYTES = 256 * 1024 * 1024
"""A label file larger is refused as it is read (never a FIFO or a device read without end)."""


@dataclass(frozen=True)
class LabelKey:
    """How a row names its run: by run id, by scenario and model, or by one tag."""

    kind: Literal["run_id", "scenario,model", "tag"]
    tag: str | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        if self.kind == "run_id":
            return ("run_id",)
        if self.kind == "scenario,model":
            return ("scenario", "model")
        assert self.tag is not None
        return (self.tag,)


def parse_key(text: str) -> LabelKey:
    """``run_id``, ``scenario,model`` or ``tag:NAME``; InputError otherwise."""
    value = text.strip().replace(" ", "")
    if value in ("run_id", "scenario,model"):
        return LabelKey(value)  # type: ignore[arg-type]
    if value.startswith("tag:") and len(value) > 4:
        return LabelKey("tag", value[4:])
    raise InputError(f"--key {text!r} is not valid: use run_id, scenario,model or tag:NAME")


@dataclass(frozen=True)
class _Row:
    line: int
    values: dict[str, Any]
    problem: RecordError | None = None
    """Why the row cannot be read at all (a CSV row of the wrong width, a JSONL line that is
    not a JSON object): listed with the other bad rows, skipped with --skip-invalid."""


def _csv_rows(text: str, where: str) -> Iterator[_Row]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return
        names = [name.strip() for name in header]
        if len(set(names)) != len(names):
            dup = next(name for name in names if names.count(name) > 1)
            raise RecordError(where, f"column {dup!r} appears twice", line=1)
        start = reader.line_num + 1
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                start = reader.line_num + 1
                continue
            if len(cells) != len(names):
                width = f"{len(cells)} cells where the header has {len(names)}"
                yield _Row(start, {}, RecordError(where, width, line=start))
            else:
                yield _Row(start, dict(zip(names, map(original_cell, cells), strict=True)))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise RecordError(where, f"malformed CSV: {exc}", line=reader.line_num) from None


def _jsonl_rows(raw: bytes, where: str) -> Iterator[_Row]:
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            value = decode_json(line, where, line=number)
        except RecordError as exc:
            yield _Row(number, {}, exc)
            continue
        if not isinstance(value, dict):
            found = f"expected a JSON object, found {type(value).__name__}"
            yield _Row(number, {}, RecordError(where, found, line=number))
        else:
            yield _Row(number, value)


def _format_of(path: Path, raw: bytes, fmt: FileFormat | None) -> FileFormat:
    if fmt is not None:
        return fmt
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    return "jsonl" if raw.lstrip()[:1] == b"{" else "csv"


def _text(value: Any, where: str, line: int, column: str) -> str:
    """A cell as text: CSV cells are text; JSON gives strings, or null for empty."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise RecordError(
            where, f"expected text, found {type(value).__name__}", line=line, field=column
        )
    return str(value)


def _criteria(value: Any, where: str, line: int) -> list[tuple[str, bool | None]]:
    if isinstance(value, dict):
        pairs = []
        for criterion, fired in value.items():
            if fired is None or isinstance(fired, bool):
                pairs.append((str(criterion), fired))
            else:
                pairs.append((str(criterion), _fired(fired, where, line, f"criteria.{criterion}")))
        return pairs
    text = _text(value, where, line, "criteria").strip()
    if not text:
        return []
    pairs = []
    for part in text.split(";"):
        if not part.strip():
            continue
        criterion, sep, answer = part.partition("=")
        if not sep or not criterion.strip():
            raise RecordError(
                where,
                f"{part.strip()!r} is not CRITERION=yes|no|unknown",
                line=line,
                field="criteria",
            )
        pairs.append(
            (criterion.strip(), _fired(answer, where, line, f"criteria.{criterion.strip()}"))
        )
    return pairs


def _fired(value: Any, where: str, line: int, column: str) -> bool | None:
    if isinstance(value, bool) or value is None:
        return value
    try:
        return parse_fired(_text(value, where, line, column))
    except InputError as exc:
        raise RecordError(where, str(exc), line=line, field=column) from None


def _moment(text: str, where: str, line: int) -> datetime | None:
    if not text.strip():
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise RecordError(
            where, f"{text!r} is not an ISO 8601 time", line=line, field="created_at"
        ) from None
    if moment.tzinfo is None:
        raise RecordError(where, f"{text!r} has no time zone", line=line, field="created_at")
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+14:00 is in year 0 in UTC
        raise RecordError(
            where, f"{text!r} is out of range in UTC", line=line, field="created_at"
        ) from None


class _Resolver:
    """Finds the one run a row's key names."""

    def __init__(self, ledger: Ledger, key: LabelKey) -> None:
        self.ledger = ledger
        self.key = key
        self.by_tag: dict[str, list[str]] | None = None

    def run_of(self, values: Sequence[str], where: str, line: int) -> str:
        if self.key.kind == "run_id":
            (run_id,) = values
            if self.ledger.index.get(run_id) is None:
                raise RecordError(
                    where, f"no run {run_id!r} in {self.ledger.root}", line=line, field="run_id"
                )
            return run_id
        if self.key.kind == "scenario,model":
            scenario, model = values
            found = [
                r.run_id
                for r in self.ledger.runs(RunFilter(scenarios=(scenario,), models=(model,)))
            ]
            shown = f"scenario {scenario!r} and model {model!r}"
        else:
            assert self.key.tag is not None
            found = [
                r.run_id for r in self.ledger.runs(RunFilter(tags=((self.key.tag, values[0]),)))
            ]
            shown = f"tag {self.key.tag}={values[0]!r}"
        if not found:
            raise RecordError(
                where, f"no run has {shown}", line=line, field=",".join(self.key.columns)
            )
        if len(found) > 1:
            listed = ", ".join(sorted(found)[:3]) + (", ..." if len(found) > 3 else "")
            raise RecordError(
                where,
                f"{len(found)} runs have {shown} ({listed}); key the row by run_id",
                line=line,
                field=",".join(self.key.columns),
            )
        return found[0]


def read_label_file(
    ledger: Ledger,
    path: Path,
    *,
    source: str | None,
    key: LabelKey,
    kind: str = "external",
    fmt: FileFormat | None = None,
    skipped: list[tuple[str, str]] | None = None,
) -> list[Label]:
    """The labels in the file at `path`, every row checked: a bad row is a RecordError naming
    its line and field, several are listed at once in one InputError; with `skipped` (a list),
    bad rows are appended to it as (where, why) instead and the good ones returned.

    `source` names who gave them unless a ``source`` column does (the two must agree when both
    are given). Two rows for one run and source are an error: a file says one thing per run.
    A row of the wrong width or a line that is not a JSON object is a bad row like the others;
    a file that cannot be read or parsed as a whole (not UTF-8, an unclosed quote) is an error
    either way.
    """
    where = str(path)
    raw = read_given(path, _MAX_BYTES)
    fmt = _format_of(path, raw, fmt)
    if fmt == "csv":
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise RecordError(where, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        rows: Iterable[_Row] = _csv_rows(text, where)
    else:
        rows = _jsonl_rows(raw, where)
    default_source = source_name(source, "--source") if source is not None else None
    resolver = _Resolver(ledger, key)
    labels: list[Label] = []
    problems: list[RecordError] = []
    seen: dict[tuple[str, str, str], int] = {}
    for row in rows:
        if len(labels) + len(problems) >= _MAX_ROWS:
            raise RecordError(where, f"more than {_MAX_ROWS} rows", line=row.line)
        if row.problem is not None:
            problems.append(row.problem)
            continue
        try:
            labels.append(_row_label(row, where, key, default_source, kind, resolver, seen))
        except RecordError as exc:
            problems.append(exc)
    if problems and skipped is None:
        if len(problems) == 1:
            raise problems[0]
        shown = "\n".join(f"  {' '.join(str(exc).split())}" for exc in problems)
        raise InputError(
            f"{len(problems)} rows cannot be imported; nothing was imported (--skip-invalid "
            f"imports the rest and lists these):\n{shown}"
        )
    if skipped is not None:
        skipped.extend((where, " ".join(str(exc).split())) for exc in problems)
    if not labels and not problems:
        raise RecordError(where, "no labels in the file")
    return labels


def _row_label(
    row: _Row,
    where: str,
    key: LabelKey,
    default_source: str | None,
    kind: str,
    resolver: _Resolver,
    seen: dict[tuple[str, str, str], int],
) -> Label:
    values, line = row.values, row.line
    texts = _row_texts(values, where, line, key)
    key_values = []
    for column in key.columns:
        value = texts.get(column, "").strip()
        if not value:
            raise RecordError(
                where, f"the key column {column!r} is empty or missing", line=line, field=column
            )
        key_values.append(value)
    run_id = resolver.run_of(key_values, where, line)
    by, row_kind = _row_source(texts, where, line, default_source, kind)
    fields = _row_verdicts(texts, where, line)
    criteria = _row_criteria(values, where, line)
    _check_known(resolver.ledger, run_id, [name for name, _ in criteria], where, line, values)
    mark = (run_id, row_kind, by)
    if mark in seen:
        raise RecordError(
            where,
            f"run {run_id} is labelled by {by} on line {seen[mark]} already (one row per run)",
            line=line,
            field=",".join(key.columns),
        )
    seen[mark] = line
    label_id = texts.get("label_id", "").strip() or None
    try:
        label = make_label(
            run_id,
            by,
            kind=row_kind,
            criteria=criteria,
            reason=texts.get("reason") or None,
            supersedes=texts.get("supersedes", "").strip() or None,
            # An exported label (its id given) comes back as it was; a new one says its row.
            detail=None if label_id else f"{Path(where).name} line {line}",
            when=_moment(texts.get("created_at", ""), where, line),
            **fields,
        )
        if label_id is not None:
            Label.check_id(label_id)
            label = label.model_copy(update={"label_id": label_id})
            Label.model_validate(label.model_dump())
    except (InputError, ValueError) as exc:
        message = str(exc).split(": ", 1)[-1] if isinstance(exc, InputError) else str(exc)
        raise RecordError(where, message, line=line, field="label") from None
    return label


def _check_known(
    ledger: Ledger,
    run_id: str,
    names: Sequence[str],
    where: str,
    line: int,
    values: dict[str, Any],
) -> None:
    """Refuse a criterion the run's judges did not assess, as `agentledger label --criterion`
    does (any criterion of a run no judge has scored yet is taken); the field named is the
    ``crit:ID`` column that gave it, else ``criteria``."""
    if not names:
        return
    known = known_criteria(ledger, run_id)
    unknown = [name for name in names if known and name not in known]
    if unknown:
        column = f"crit:{unknown[0]}" if f"crit:{unknown[0]}" in values else "criteria"
        raise RecordError(
            where,
            f"criterion {unknown[0]!r} is not one the judges of run {run_id} assessed "
            f"(they assessed {', '.join(known)})",
            line=line,
            field=column,
        )


def _row_texts(values: dict[str, Any], where: str, line: int, key: LabelKey) -> dict[str, str]:
    """The row's cells as text, but for the criteria; RecordError for an unknown column."""
    allowed = _KNOWN | set(key.columns)
    for column in values:
        if column not in allowed and not column.startswith("crit:"):
            raise RecordError(
                where,
                f"unknown column {column!r} (columns: {', '.join(EXPORT_COLUMNS)}, crit:ID)",
                line=line,
                field=column,
            )
    return {
        c: _text(v, where, line, c)
        for c, v in values.items()
        if c != "criteria" and not c.startswith("crit:")
    }


def _row_source(
    texts: dict[str, str], where: str, line: int, default_source: str | None, kind: str
) -> tuple[str, str]:
    """Who labelled the row and their kind: its own source and kind columns, or the
    import's; a source column that differs from --source is refused."""
    named = texts.get("source", "").strip()
    if not named and not default_source:
        raise RecordError(
            where, "no source: give --source NAME or a source column", line=line, field="source"
        )
    try:
        by = source_name(named, "source") if named else default_source
    except InputError as exc:
        raise RecordError(where, str(exc), line=line, field="source") from None
    if named and default_source and by != default_source:
        raise RecordError(
            where,
            f"source {named!r} differs from --source {default_source}",
            line=line,
            field="source",
        )
    assert by is not None
    row_kind = texts.get("kind", "").strip() or kind
    if row_kind not in ("person", "external"):
        raise RecordError(
            where, f"{row_kind!r} is not valid: use person or external", line=line, field="kind"
        )
    return by, row_kind


def _row_verdicts(texts: dict[str, str], where: str, line: int) -> dict[str, Any]:
    """The row's verdict and whether its diagnosis is correct (None where a cell is empty)."""
    fields: dict[str, Any] = {}
    try:
        verdict_text = texts.get("verdict", "").strip()
        fields["verdict"] = parse_label_verdict(verdict_text) if verdict_text else None
    except InputError as exc:
        raise RecordError(where, str(exc), line=line, field="verdict") from None
    try:
        diagnosis_text = texts.get("diagnosis", "").strip()
        fields["diagnosis_correct"] = parse_diagnosis(diagnosis_text) if diagnosis_text else None
    except InputError as exc:
        raise RecordError(where, str(exc), line=line, field="diagnosis") from None
    return fields


def _row_criteria(values: dict[str, Any], where: str, line: int) -> list[tuple[str, bool | None]]:
    """The row's criteria, from its criteria cell and its crit:ID columns, each at most once."""
    criteria = _criteria(values.get("criteria"), where, line)
    for column, value in values.items():
        if column.startswith("crit:"):
            if not column[5:]:
                raise RecordError(
                    where, "a crit: column names no criterion", line=line, field=column
                )
            given = isinstance(value, bool) or bool(_text(value, where, line, column).strip())
            if given:
                criteria.append((column[5:], _fired(value, where, line, column)))
    names = [criterion for criterion, _ in criteria]
    for criterion in names:
        if names.count(criterion) > 1:
            raise RecordError(
                where, f"criterion {criterion!r} is given twice", line=line, field=criterion
            )
    return criteria


def _criteria_text(label: Label) -> str:
    words = {True: "yes", False: "no", None: "unknown"}
    return ";".join(f"{item.criterion}={words[item.fired]}" for item in label.criteria)


def export_labels(ledger: Ledger, labels: Sequence[Label], fmt: FileFormat, out: TextIO) -> int:
    """Write `labels` to `out` as CSV or JSON lines, in the columns `read_label_file` reads;
    how many were written."""
    runs = {run.run_id: run for run in ledger.runs(RunFilter())}
    records: list[dict[str, Any]] = []
    for label in labels:
        run = runs.get(label.run_id)
        records.append(
            {
                "label_id": label.label_id,
                "run_id": label.run_id,
                "scenario": run.scenario if run else None,
                "model": run.model if run else None,
                "source": label.by.name,
                "kind": label.by.kind,
                "created_at": label.created_at.isoformat().replace("+00:00", "Z"),
                "verdict": label.verdict.lower() if label.verdict else None,
                "criteria": _criteria_text(label),
                "diagnosis": None
                if label.diagnosis_correct is None
                else ("correct" if label.diagnosis_correct else "incorrect"),
                "reason": label.reason,
                "supersedes": label.supersedes,
            }
        )
    if fmt == "csv":
        writer = InertWriter(out, fieldnames=EXPORT_COLUMNS)
        writer.writeheader()
        for record in records:
            writer.writerow({k: "" if v is None else v for k, v in record.items()})
    else:
        for label, record in zip(labels, records, strict=True):
            record["criteria"] = {item.criterion: item.fired for item in label.criteria}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(records)
