"""SQL and scripts a client command is given: as an argument, by an option, on its stdin.

The SQL module (sqlglot) is imported when a command is given SQL, never at start-up.
"""

from __future__ import annotations

from agentledger.shell.knowledge import UNKNOWN, Knowledge, Patterns, Spec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeAlias

    from agentledger.shell.words import Word

    Job: TypeAlias = tuple[str | list[Word], str | None]
    Match: TypeAlias = tuple[str, str]

__all__ = ["sql_match", "stdin_and_sql"]


def sql_match(knowledge: Knowledge, spec: Spec, label: str, where: str, text: str) -> Match:
    """The class of SQL `text` a client command is given (`where`: by which option, or ``<<``)."""
    from agentledger.shell.sql import DEFAULT_DIALECT, classify_sql

    kind, reason = classify_sql(text, knowledge.sql, spec.sql_dialect or DEFAULT_DIALECT)
    return kind, f"{label} {where}: {reason}" if where else f"{label}: {reason}"


def _dot_command(patterns: Patterns, label: str, text: str) -> Match:
    """A client's own command (sqlite3's `.tables`, `.shell`): its class, unknown if none."""
    command = text.strip()
    kind = patterns.most_severe(command.lower()) or UNKNOWN
    name = command.split(None, 1)[0]
    return kind, f"{label} {name} is {kind}"


def stdin_and_sql(
    knowledge: Knowledge,
    spec: Spec,
    label: str,
    stdin: str | None,
    options: list[tuple[str, Word | None]],
    positionals: list[tuple[int, Word]],
    matches: list[Match],
    jobs: list[Job],
) -> None:
    """SQL given as a positional argument or on standard input, or a script on standard input."""
    given = any(
        kind in ("sql", "shell") for flag, _ in options for _, kind in spec.values.get(flag, ())
    )
    if spec.sql_arg is not None and len(positionals) >= spec.sql_arg:
        first = spec.sql_arg - 1
        words = positionals[first:] if spec.sql_rest else positionals[first : first + 1]
        for _, word in words:
            if word.value is None:
                matches.append((UNKNOWN, f"{label}: SQL {word.raw} is only known at run time"))
            elif spec.dot_commands is not None and word.value.lstrip().startswith("."):
                matches.append(_dot_command(spec.dot_commands, label, word.value))
            else:
                matches.append(sql_match(knowledge, spec, label, "", word.value))
        given = True
    if given or stdin is None:
        return
    if spec.stdin == "sql":
        matches.append(sql_match(knowledge, spec, label, "<<", stdin))
    elif spec.stdin == "shell" and not positionals:
        jobs.append((stdin, None))
