"""Labels that come with imported runs: a data set's own verdicts, attached to its runs.

- **OpenAgentSafety** (OpenHands trajectories; see the samples' README): beside each
  ``traj_<task>.json`` the benchmark's post-state checker ``eval_<task>.json``
  (``final_score.result`` 1 means the unsafe behaviour happened: Unsafe; 0: Safe), and an
  LLM judge's ``*_safety_eval_results.json`` (``llm_label`` ``"Label: N"``: 0 Safe, 1 and 2
  Unsafe, -1 could not judge). A label names the run imported from the trajectory in the
  same folder: the run whose scenario is the task and whose recorded original file hash is
  the trajectory's, which fixes the model too (folder names are not model ids).
- **Inspect**: a run imported from an Inspect log keeps its sample's scores
  (``source.scores``); each scorer becomes the label source ``inspect:<scorer>``.

These readers only read what the importers stored; they write nothing until every label is
checked (`LabelStore.write_all`). A data set's "could not judge" is left out and reported,
never turned into a verdict; a label the source already gave the run is not given twice.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentledger.errors import InputError, RecordError
from agentledger.identity import sha256_bytes
from agentledger.labels.entry import make_label, source_name
from agentledger.labels.store import current_labels
from agentledger.records import decode_json
from agentledger.records.labels import Label
from agentledger.store.index import RunFilter
from agentledger.store.storage.checked import read_given

if TYPE_CHECKING:
    from agentledger.store.ledger import Ledger

__all__ = [
    "EXTERNAL_FORMATS",
    "ExternalLabels",
    "inspect_labels",
    "inspect_verdict",
    "openhands_labels",
]

ExternalFormat = Literal["openhands-checker", "openhands-llm-label"]
EXTERNAL_FORMATS: tuple[str, ...] = ("openhands-checker", "openhands-llm-label", "inspect")
# "Label: 2"; a few files of the data set say "Label: Label: 2", which means the same.
_LLM_LABEL = re.compile(r"^\s*(?:Label:\s*)+(-?\d+)\s*$")
_MAX_FILE = 64 * 1024 * 1024


@dataclass
class ExternalLabels:
    """Labels read from a data set, and what was left out and why."""

    labels: list[Label] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    """(what, why): a task the source could not judge, ..."""
    already: int = 0
    """Labels the source had given those runs already (not given again)."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(where, why): files or tasks that could not be read or matched, skipped because the
    caller asked to skip them (`skip_invalid`)."""


def _problem_text(exc: Exception) -> str:
    """`exc` as one line naming file and field (RecordError says both)."""
    return " ".join(str(exc).split())


def _settle(out: ExternalLabels, problems: list[tuple[str, str]], skip_invalid: bool) -> None:
    """Every problem at once: an InputError listing them all (nothing is written), or, with
    `skip_invalid`, the list of what is skipped and why."""
    if not problems:
        return
    if skip_invalid:
        out.skipped.extend(problems)
        return
    lines = "\n".join(f"  {why}" for _where, why in problems)
    raise InputError(
        f"{len(problems)} problem(s); nothing was imported (--skip-invalid imports the rest "
        f"and lists these):\n{lines}"
    )


def _read_json(path: Path) -> Any:
    """The JSON of a label file, read as an import reads its files (`read_given`): a link out
    of the folder holding it, a hard link, a FIFO or a device is refused, never read."""
    return decode_json(read_given(path, _MAX_FILE), str(path))


class _Runs:
    """The runs imported from OpenHands trajectories, found by task and trajectory hash."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def of(self, folder: Path, task: str, where: str) -> str:
        trajectory = folder / f"traj_{task}.json"
        if not trajectory.is_file():
            raise RecordError(
                where,
                f"no {trajectory.name} beside it: the run of task {task!r} is found by its "
                "trajectory (scenario and original file hash)",
                field=task,
            )
        digest = sha256_bytes(trajectory.read_bytes())
        found = [
            run.run_id
            for run in self.ledger.runs(RunFilter(scenarios=(task,)))
            if (run.metadata.get("source") or {}).get("original_sha256") == digest
        ]
        if not found:
            raise RecordError(
                where,
                f"no run in {self.ledger.root} was imported from {trajectory} (scenario "
                f"{task!r}); import the trajectories first: agentledger import --format openhands",
                field=task,
            )
        if len(found) > 1:
            raise RecordError(
                where, f"{len(found)} runs were imported from {trajectory}: {', '.join(found)}"
            )
        return found[0]


def _checker_verdict(data: Any, where: str) -> str | None:
    final = data.get("final_score") if isinstance(data, dict) else None
    if final is None:
        return None
    result = final.get("result") if isinstance(final, dict) else None
    if isinstance(result, bool) or not isinstance(result, int | float) or result < 0:
        raise RecordError(
            where, f"expected a number >= 0, found {result!r}", field="final_score.result"
        )
    return "Unsafe" if result > 0 else "Safe"


def _llm_verdict(entry: Any, where: str, task: str) -> str | None:
    text = entry.get("llm_label") if isinstance(entry, dict) else None
    match = _LLM_LABEL.match(text) if isinstance(text, str) else None
    if match is None:
        raise RecordError(where, f"expected 'Label: N', found {text!r}", field=f"{task}.llm_label")
    value = int(match.group(1))
    if value == -1:
        return None
    if value == 0:
        return "Safe"
    if value in (1, 2):
        return "Unsafe"
    raise RecordError(where, f"label {value} is not -1, 0, 1 or 2", field=f"{task}.llm_label")


def openhands_labels(
    ledger: Ledger,
    folder: Path,
    fmt: ExternalFormat,
    source: str | None = None,
    *,
    skip_invalid: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ExternalLabels:
    """The OpenAgentSafety labels under `folder` (one model's folder or a folder of them) as
    labels of the runs imported from the trajectories beside them.

    Every file and task that cannot be read or matched (a checker with no trajectory beside
    it, a label that is not 'Label: N') is a problem; all of them are raised at once in one
    InputError, or, with `skip_invalid`, listed in `skipped` while the rest are labelled.
    `progress(done, total)` is called once per file."""
    pattern = "eval_*.json" if fmt == "openhands-checker" else "*_safety_eval_results.json"
    if folder.is_file():  # one file of the data set, given itself
        if not fnmatch.fnmatch(folder.name, pattern):
            raise InputError(
                f"{folder}: --format {fmt} reads {pattern} files (or a folder of them)"
            )
        files, base = [folder], folder.parent
    elif folder.is_dir():
        files, base = sorted(folder.rglob(pattern)), folder
    else:
        raise InputError(f"{folder}: no such file or folder")
    name = source_name(source or fmt, "--source")
    runs = _Runs(ledger)
    out = ExternalLabels()
    found: list[tuple[str, str | None, str, str]] = []  # run, verdict, reason, detail
    problems: list[tuple[str, str]] = []
    read = _checker_file if fmt == "openhands-checker" else _llm_label_file
    for done, path in enumerate(files, 1):
        read(path, base, runs, out, found, problems)
        if progress is not None:
            progress(done, len(files))
    _settle(out, problems, skip_invalid)
    _collect(ledger, out, name, found)
    return out


_Found = list[tuple[str, str | None, str, str]]


def _checker_file(
    path: Path,
    base: Path,
    runs: _Runs,
    out: ExternalLabels,
    found: _Found,
    problems: list[tuple[str, str]],
) -> None:
    task = path.name.removeprefix("eval_").removesuffix(".json")
    where = str(path)
    try:
        data = _read_json(path)
        verdict = _checker_verdict(data, where)
        run_id = runs.of(path.parent, task, where)
    except InputError as exc:
        problems.append((where, _problem_text(exc)))
        return
    if verdict is None:
        out.left_out.append((f"{path}", "no final_score"))
        return
    final = data["final_score"]
    reason = f"post-state checker: final_score.result {final.get('result')} of {final.get('total')}"
    found.append((run_id, verdict, reason, str(path.relative_to(base))))


def _llm_label_file(
    path: Path,
    base: Path,
    runs: _Runs,
    out: ExternalLabels,
    found: _Found,
    problems: list[tuple[str, str]],
) -> None:
    where = str(path)
    try:
        data = _read_json(path)
    except InputError as exc:
        problems.append((where, _problem_text(exc)))
        return
    if not isinstance(data, dict):
        problem = RecordError(where, f"expected an object of tasks, found {type(data).__name__}")
        problems.append((where, _problem_text(problem)))
        return
    for task in sorted(data):
        try:
            verdict = _llm_verdict(data[task], where, task)
            run_id = runs.of(path.parent, task, where)
        except InputError as exc:
            problems.append((f"{where} {task}", _problem_text(exc)))
            continue
        if verdict is None:
            out.left_out.append((f"{path} {task}", "the LLM judge could not judge (-1)"))
            continue
        reason = f"LLM judge: {data[task]['llm_label']}"
        found.append((run_id, verdict, reason, f"{path.relative_to(base)} {task}"))


def _collect(
    ledger: Ledger,
    out: ExternalLabels,
    name: str,
    found: Iterable[tuple[str, str | None, str, str]],
) -> None:
    held = {
        label.run_id: label for label in current_labels(ledger, name) if label.by.kind == "external"
    }
    seen: set[str] = set()
    for run_id, verdict, reason, detail in found:
        if run_id in seen:
            raise InputError(f"{detail}: run {run_id} is labelled twice by {name}")
        seen.add(run_id)
        old = held.get(run_id)
        if old is not None and old.verdict == verdict and old.reason == reason:
            out.already += 1
            continue
        out.labels.append(
            make_label(
                run_id,
                name,
                kind="external",
                verdict=verdict,
                reason=reason,
                detail=detail[:500],
                supersedes=old.label_id if old is not None else None,
            )
        )


def inspect_verdict(value: Any, *, inverted: bool = False) -> str | None:
    """The verdict an Inspect score value stands for: CORRECT (``C``, true, 1) Safe,
    INCORRECT (``I``, false, 0) Unsafe, PARTIAL (``P``) Uncertain, anything else None (no
    answer, a number between). `inverted` for scorers whose "correct" means the harm happened.
    """
    safe, unsafe = ("Unsafe", "Safe") if inverted else ("Safe", "Unsafe")
    if value in ("C", True) or (
        isinstance(value, int | float) and not isinstance(value, bool) and value == 1
    ):
        return safe
    if value in ("I", False) or (
        isinstance(value, int | float) and not isinstance(value, bool) and value == 0
    ):
        return unsafe
    if value == "P":
        return "Uncertain"
    return None


def _scorer_source(scorer: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._@+:-]", "-", scorer)[:55] or "score"
    return source_name(f"inspect:{cleaned}", "scorer")


def inspect_labels(
    ledger: Ledger, *, scorer: str | None = None, inverted: bool = False
) -> ExternalLabels:
    """Labels of source ``inspect:<scorer>`` from the scores kept in runs imported from
    Inspect logs (one scorer, or every one)."""
    out = ExternalLabels()
    per_source: dict[str, list[tuple[str, str | None, str, str]]] = {}
    for run in ledger.runs(RunFilter()):
        source = run.metadata.get("source") or {}
        if source.get("importer") != "inspect":
            continue
        for name, score in sorted((source.get("scores") or {}).items()):
            if scorer is not None and name != scorer:
                continue
            value = score.get("value") if isinstance(score, dict) else None
            verdict = inspect_verdict(value, inverted=inverted)
            if verdict is None:
                out.left_out.append(
                    (f"{run.run_id} {name}", f"value {json.dumps(value)} is not a verdict")
                )
                continue
            reason = f"Inspect scorer {name}: value {json.dumps(value)}"
            explanation = score.get("explanation") if isinstance(score, dict) else None
            if isinstance(explanation, str) and explanation:
                reason += f"; {explanation[:2000]}"
            per_source.setdefault(_scorer_source(name), []).append(
                (run.run_id, verdict, reason, f"{source.get('file') or 'inspect log'} {name}")
            )
    if scorer is not None and not per_source and not out.left_out:
        raise InputError(f"no run imported from an Inspect log has scores of scorer {scorer!r}")
    for name, found in sorted(per_source.items()):
        _collect(ledger, out, name, found)
    return out
