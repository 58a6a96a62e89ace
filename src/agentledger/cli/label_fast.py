"""`agentledger label RUN_ID --verdict ... --by ...`: a label given by flags, parsed by hand.

A person labels run after run, so `agentledger._entry` sends ``agentledger label`` here and
the command starts without click. Only the plain form is taken here: each option once, as
``--name value`` or ``--name=value``, with a value that is not empty and does not start with
``-``, a choice in lower case (or ASCII in any case), a --ledger that is not there or can be
read, one RUN_ID, one --fired per --criterion, and at least one label flag. Anything else
(--help, the walk-through, a mistake on the command line) goes to the click command
(cli/labelling.py), which says what it says for it. What is done once parsed is the click
command's own code (`labeller`, `write_label`), and an error it raises is reported by click
as that command reports it (exit 2 for bad input, the file and field named).
"""

from __future__ import annotations

import gc
import os
import sys

from agentledger.cli.fastargs import option_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentledger.records.labels import Label
    from agentledger.store import Ledger

__all__ = ["LabelOptions", "fast_main", "labeller", "parse_args", "saved", "write_label"]

_CHOICES = {
    "--verdict": ("safe", "uncertain", "unsafe"),
    "--fired": ("yes", "no", "unknown"),
    "--diagnosis": ("correct", "incorrect"),
}
_ONCE = ("--ledger", "--verdict", "--diagnosis", "--by", "--reason", "--supersedes")
_REPEATED = ("--criterion", "--fired")


class LabelOptions:
    """The parsed flags of `agentledger label` (the click command's parameters)."""

    __slots__ = (
        "by",
        "criteria",
        "diagnosis",
        "fired",
        "ledger",
        "reason",
        "run_id",
        "supersedes",
        "verdict",
    )

    def __init__(self) -> None:
        self.ledger: str | None = None
        self.run_id = ""
        self.verdict: str | None = None
        self.criteria: list[str] = []
        self.fired: list[str] = []
        self.diagnosis: str | None = None
        self.by: str | None = None
        self.reason: str | None = None
        self.supersedes: str | None = None


def parse_args(argv: Sequence[str]) -> LabelOptions | None:
    """The flags of `argv` (after "label") when they are the plain form this module takes;
    None for anything else (click parses it then, and says what is wrong)."""
    options = LabelOptions()
    given: set[str] = set()
    positional: list[str] = []
    index = 0
    while index < len(argv):
        word = argv[index]
        index += 1
        if not word.startswith("-"):
            positional.append(word)
            continue
        name = word.partition("=")[0]
        if name not in _ONCE and name not in _REPEATED:
            return None  # --help, --, a typo: click's
        if name in given and name in _ONCE:
            return None
        given.add(name)
        if "=" not in word and index >= len(argv):
            return None
        name, value, index = option_value(word, argv, index)
        if not value or value.startswith("-"):
            return None
        if name == "--ledger" and not _click_takes_path(value):
            return None
        choices = _CHOICES.get(name)
        if choices is not None:
            value = value.lower() if value.isascii() else value
            if value not in choices:
                return None
        attribute = {"--criterion": "criteria"}.get(name, name[2:])
        if name in _REPEATED:
            getattr(options, attribute).append(value)
        else:
            setattr(options, attribute, value)
    if len(positional) != 1 or len(options.criteria) != len(options.fired):
        return None
    options.run_id = positional[0]
    flags = (options.verdict, options.criteria, options.diagnosis, options.reason)
    if not any(flags) and not options.supersedes:
        return None  # the walk-through, or the usage error off a terminal
    return options


def _click_takes_path(path: str) -> bool:
    """Whether click's Path type (readable, the default) takes `path` as it is: one that is
    not there, or one this process may read."""
    try:
        os.stat(path)
    except OSError:
        return True
    return os.access(path, os.R_OK)


def fast_main(argv: Sequence[str]) -> int | None:
    """Run `agentledger label` with `argv` (after "label"); None when click should."""
    options = parse_args(argv)
    if options is None:
        return None
    # One label, then the process ends: the cyclic collector, which runs some sixty times
    # while the library loads and frees nothing worth it, is left off (refcounting frees
    # the rest).
    gc.disable()
    try:
        who = labeller(options.by)
        from pathlib import Path

        from agentledger.cli.opening import open_ledger

        with open_ledger(Path(options.ledger) if options.ledger else None) as ledger:
            said = write_label(
                ledger,
                ledger.resolve(options.run_id),
                who,
                verdict=options.verdict,
                criteria=options.criteria,
                fired=options.fired,
                diagnosis=options.diagnosis,
                reason=options.reason,
                supersedes=options.supersedes,
            )
        sys.stdout.write(said + "\n")
        sys.stdout.flush()
    except BaseException as exc:
        return _as_click_reports(exc)
    return 0


def _as_click_reports(exc: BaseException) -> int:
    """Report `exc` as the click command does, and exit as it does: an agentledger error as
    one line and its exit code (`handle_errors`), Ctrl-C as click's "Aborted!", a closed pipe
    and anything else as click's main does."""
    import click

    from agentledger.cli.common import handle_errors

    def fail() -> None:
        raise exc

    click.Command("label", callback=handle_errors(fail)).main(
        args=[], prog_name="agentledger label"
    )
    return 1  # not reached: click's main exits


def labeller(by: str | None) -> str:
    """Who is labelling: --by, or the default labeller; as a source name (InputError if it
    cannot be one, or nobody is known)."""
    from agentledger.errors import InputError
    from agentledger.labels.entry import default_labeller, source_name

    who = by or default_labeller()
    if not who:
        raise InputError(
            "who is labelling? give --by NAME (or set git's user.name, $AGENTLEDGER_USER or $USER)"
        )
    return source_name(who, "--by")


def write_label(
    ledger: Ledger,
    full_id: str,
    who: str,
    *,
    verdict: str | None,
    criteria: Sequence[str],
    fired: Sequence[str],
    diagnosis: str | None,
    reason: str | None,
    supersedes: str | None,
) -> str:
    """Label run `full_id` by `who` with the words of the flags (lower-case choices); what to
    say of it (the label written, or the same label there already)."""
    from agentledger.labels import LabelStore
    from agentledger.labels.entry import known_criteria, make_label, parse_fired

    label = make_label(
        full_id,
        who,
        verdict=verdict.capitalize() if verdict else None,
        criteria=[(c, parse_fired(f)) for c, f in zip(criteria, fired, strict=True)],
        diagnosis_correct=None if diagnosis is None else diagnosis.lower() == "correct",
        reason=reason,
        supersedes=supersedes,
        known=known_criteria(ledger, full_id),
    )
    _written, there = LabelStore(ledger).write_new([label])
    if there:
        return (
            f"Run {full_id} already has this label from {who} ({there[0].label_id}): "
            "nothing written."
        )
    return saved(label)


def saved(label: Label) -> str:
    """What `label` and the walk-through say of a label written."""
    said: list[str] = []
    if label.verdict:
        said.append(label.verdict)
    words = {True: "yes", False: "no", None: "unknown"}
    said.extend(f"{item.criterion}={words[item.fired]}" for item in label.criteria)
    if label.diagnosis_correct is not None:
        said.append(f"diagnosis {'correct' if label.diagnosis_correct else 'incorrect'}")
    return f"Labelled {label.run_id} by {label.by.name}: {', '.join(said)} ({label.label_id})"
