"""Two runs against each other: what differs in their system prompts, and their steps aligned.

Both use difflib's SequenceMatcher: prompts line by line (a unified diff), steps by what each
step did (its kind and its command, tool or first words), so that the same investigation by
two models lines up where they did the same thing and shows apart where they did not.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentledger.store.evidence import RunEvidence

__all__ = [
    "SYSTEM_PROMPT",
    "AlignedRow",
    "DiffLine",
    "Step",
    "align_steps",
    "prompt_diff",
    "signature",
]

SYSTEM_PROMPT = "system_prompt.txt"
_SIGNATURE_TEXT = 80


@dataclass(frozen=True)
class DiffLine:
    """One line of a unified diff: ``add``, ``del``, ``hunk`` (an @@ line) or ``same``."""

    kind: Literal["add", "del", "hunk", "same", "head"]
    text: str


def prompt_diff(a: RunEvidence, b: RunEvidence) -> list[DiffLine] | str:
    """The unified diff of two runs' system prompts, or why there is none to show."""
    texts = []
    for evidence in (a, b):
        text = evidence.text(SYSTEM_PROMPT)
        if text is None:
            return f"run {evidence.run_id} keeps no {SYSTEM_PROMPT}: only its hash is known"
        texts.append(text)
    if texts[0] == texts[1]:
        return "the two system prompts are the same, byte for byte"
    lines: list[DiffLine] = []
    for raw in difflib.unified_diff(
        texts[0].splitlines(),
        texts[1].splitlines(),
        fromfile=a.run_id,
        tofile=b.run_id,
        lineterm="",
    ):
        if raw.startswith(("---", "+++")):
            lines.append(DiffLine("head", raw))
        elif raw.startswith("@@"):
            lines.append(DiffLine("hunk", raw))
        elif raw.startswith("+"):
            lines.append(DiffLine("add", raw))
        elif raw.startswith("-"):
            lines.append(DiffLine("del", raw))
        else:
            lines.append(DiffLine("same", raw))
    return lines


@dataclass(frozen=True)
class Step:
    """One step of a run as compare shows it: its place, what it was, and its text."""

    index: int
    kind: str
    text: str
    anchor: str
    """Its anchor on the run's own page."""
    signature: str
    """What aligning compares: the kind and the command, tool or first words."""
    cited: tuple[str, ...] = ()
    """The criteria whose evidence stands on it (``C2 fired``)."""
    part: int = 1
    """The part of the run's page that shows it (a long trace is shown in parts)."""

    @property
    def link(self) -> str:
        """Where it stands on the run's page, relative to that page's address."""
        return f"#{self.anchor}" if self.part == 1 else f"?part={self.part}#{self.anchor}"


@dataclass(frozen=True)
class AlignedRow:
    """A row of the aligned steps: a step of A, of B, or of both (same or changed)."""

    kind: Literal["same", "changed", "only-a", "only-b"]
    a: Step | None
    b: Step | None


def align_steps(a: Sequence[Step], b: Sequence[Step]) -> list[AlignedRow]:
    """The steps of A and B side by side, matched by their signatures."""
    matcher = difflib.SequenceMatcher(
        None, [step.signature for step in a], [step.signature for step in b], autojunk=False
    )
    rows: list[AlignedRow] = []
    for tag, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        left, right = a[a_start:a_end], b[b_start:b_end]
        if tag == "equal":
            rows.extend(AlignedRow("same", x, y) for x, y in zip(left, right, strict=True))
            continue
        paired = min(len(left), len(right)) if tag == "replace" else 0
        rows.extend(AlignedRow("changed", left[i], right[i]) for i in range(paired))
        rows.extend(AlignedRow("only-a", step, None) for step in left[paired:])
        rows.extend(AlignedRow("only-b", None, step) for step in right[paired:])
    return rows


def signature(kind: str, text: str) -> str:
    """A step's signature: its kind and the start of its text, spaces made one."""
    return f"{kind}:{' '.join(text.split())[:_SIGNATURE_TEXT]}"
