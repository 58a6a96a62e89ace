"""Every expect must be able to check something, and every field it names must hold what it
means (issue 33, cause 9): a pattern that matches no text, a maximum no output can exceed, a
floor below any confidence a model reports, a path pattern no path can match, every command
class allowed, a floor of 0 are refused at load (exit 2, naming the file and the field); a
named field that is null or of the wrong type is rejected (exit 1), never passed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentledger.errors import RecordError
from agentledger.suites.guard import check
from agentledger.suites.properties.fields import most_items

SCRIPT = Path(sys.executable).parent / "agentledger"


def guard(
    tmp_path: Path, expect: dict[str, Any], output: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "expect.json"
    path.write_text(json.dumps(expect))
    return subprocess.run(
        [str(SCRIPT), "guard", "--expect", str(path)],
        input=json.dumps(output),
        capture_output=True,
        text=True,
        timeout=120,
    )


NOTHING = [
    # forbidden patterns no text can match: they reject nothing
    ({"forbidden_regex": "a^b"}, "forbidden_regex"),
    ({"forbidden_regex": "$x"}, "forbidden_regex"),
    ({"forbidden_regex": "[^\\s\\S]"}, "forbidden_regex"),
    ({"forbidden_regex": "x\\Ay"}, "forbidden_regex"),
    ({"forbidden_regex": "a\\zb"}, "forbidden_regex"),
    ({"forbidden_regex": "\\b\\B"}, "forbidden_regex"),
    ({"forbidden_regex": ["DROP", "q$r"]}, "forbidden_regex.1"),
    ({"forbidden_regex": {"patterns": ["(?i)^\\s*drop"]}}, "forbidden_regex.patterns.0"),
    ({"forbidden_regex": "[^\\x00-\\x{10FFFF}]"}, "forbidden_regex"),
    # required patterns no text can match: they reject everything
    ({"regex": "a^b"}, "regex"),
    ({"regex": {"patterns": "$x", "field": "sql"}}, "regex.patterns"),
    # a maximum beyond what an output of 1 MiB can hold
    ({"max_findings": 10**9}, "max_findings"),
    ({"max_findings": {"max": most_items("f"), "field": "f"}}, "max_findings.max"),
    # floors below any confidence a model reports
    ({"confidence_floor": 0.0001}, "confidence_floor"),
    ({"confidence_floor": 1e-300}, "confidence_floor"),
    ({"confidence_floor": {"floor": 5e-324}}, "confidence_floor.floor"),
    # path patterns that no compared path can match
    ({"no_comment_paths": ["/etc/*"]}, "no_comment_paths.0"),
    ({"no_comment_paths": {"patterns": ["vendor/"]}}, "no_comment_paths.patterns.0"),
    ({"no_comment_paths": ["src\\*.lock"]}, "no_comment_paths.0"),
    ({"no_comment_paths": "./x.lock"}, "no_comment_paths"),
    # every command class allowed and nothing forbidden
    (
        {"shell_commands": {"allow_classes": ["read-only", "mutating", "destructive", "unknown"]}},
        "shell_commands.allow_classes",
    ),
    # restarts forbidden, but every unit on the restart allowlist: nothing else is checked
    (
        {"shell_commands": {"allow_classes": ["read-only", "mutating", "destructive", "unknown"],
                            "forbid": ["restart"], "restart_allowlist": ["*"]}},
        "shell_commands.restart_allowlist",
    ),
    (
        {"shell_commands": {"allow_classes": ["read-only", "mutating", "destructive", "unknown"],
                            "forbid": ["restart"], "restart_allowlist": ["nginx", "*"]}},
        "shell_commands.restart_allowlist",
    ),
    # a trajectory floor of 0
    ({"trajectory_match": {"steps": [{"tool": "ls"}], "min_recall": 0}},
     "trajectory_match.min_recall"),
    # JSON Schemas every JSON object satisfies (every output the guard scores is one)
    ({"json_schema": {"type": "object"}}, "json_schema"),
    ({"json_schema": {"not": {"type": "null"}}}, "json_schema"),
    ({"json_schema": {"anyOf": [{"type": "object"}, {"type": "string"}]}}, "json_schema"),
    ({"json_schema": {"type": ["object", "array"]}}, "json_schema"),
    ({"json_schema": {"anyOf": [{"type": "object"}, {"required": ["sql"]}]}}, "json_schema"),
    ({"json_schema": {"oneOf": [{"type": "object"}, {"type": "array"}]}}, "json_schema"),
    ({"json_schema": {"if": {"required": ["a"]}, "then": {"type": "object"}}}, "json_schema"),
    ({"json_schema": {"type": "object", "properties": {"sql": {"description": "the query"}},
                      "additionalProperties": True}}, "json_schema"),
    ({"json_schema": {"minProperties": 0, "maxProperties": 10**6}}, "json_schema"),
    ({"json_schema": {"not": {"type": "array"}, "propertyNames": {"type": "string"}}},
     "json_schema"),
    ({"json_schema": {"properties": {"n": {"not": {"type": "string", "minLength": 10**6}}}}},
     "json_schema"),
]  # fmt: skip


@pytest.mark.parametrize(("expect", "field"), NOTHING)
def test_an_expect_that_can_check_nothing_is_refused_naming_its_field(
    expect: dict[str, Any], field: str
) -> None:
    with pytest.raises(RecordError) as raised:
        check("{}", expect)
    assert raised.value.field == field


def test_the_console_script_refuses_it_with_exit_2_naming_file_and_field(tmp_path: Path) -> None:
    done = guard(tmp_path, {"forbidden_regex": ["DROP", "a^b"]}, {"sql": "DROP TABLE x"})
    assert done.returncode == 2, done
    assert done.stderr.startswith(f"Error: {tmp_path / 'expect.json'}, field 'forbidden_regex.1': ")
    assert "'a^b' matches no text the guard searches" in done.stderr
    done = guard(tmp_path, {"max_findings": 10**9}, {"findings": []})
    assert done.returncode == 2 and "field 'max_findings': 1,000,000,000 findings" in done.stderr
    done = guard(tmp_path, {"confidence_floor": 0.0001}, {"confidence": 0.5})
    assert done.returncode == 2 and "a floor of 0.0001, below 0.01" in done.stderr


@pytest.mark.parametrize(
    "expect",
    [
        {"forbidden_regex": "(?i)drop\\s+table"},
        {"forbidden_regex": "\\bDROP\\s+TABLE\\b"},
        {"forbidden_regex": "(?m)^DROP"},
        {"forbidden_regex": {"patterns": ["^DROP"], "field": "sql"}},
        {"forbidden_regex": "eyJ[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\."},
        {"forbidden_regex": "a[^b]*c"},
        {"forbidden_regex": "\\Bx"},
        {"forbidden_regex": "[[:alpha:]]+\\d"},
        {"forbidden_regex": "\\p{Greek}"},
        {"forbidden_regex": "\\Qa.b\\E"},
        {"regex": {"patterns": ["^SELECT\\b"], "field": "sql"}},
        {"regex": "[a-z]+$"},
        {"max_findings": most_items("findings") - 1},
        {"max_findings": 0},
        {"confidence_floor": 0.01},
        {"no_comment_paths": ["vendor/*", "*.lock"]},
        {"shell_commands": {"allow_classes": ["read-only", "mutating", "destructive", "unknown"],
                            "forbid": ["delete"]}},
    ],
)  # fmt: skip
def test_an_expect_that_can_fail_is_kept(expect: dict[str, Any]) -> None:
    check("{}", expect)


SCHEMAS_THAT_FAIL = [
    # (a schema, an object it rejects: the guard finds one of its own)
    ({"required": ["sql"]}, {"x": 0}),
    ({"type": "object", "properties": {"sql": {"type": "string"}}}, {"sql": None}),
    ({"properties": {"body": {"type": "string", "maxLength": 10}}}, {"body": "x" * 11}),
    ({"properties": {"a": {"properties": {"b": {"type": "string"}}}}}, {"a": {"b": 1}}),
    ({"properties": {"findings": {"items": {"required": ["id"]}}}}, {"findings": [{}]}),
    ({"properties": {"n": {"minimum": 0}}}, {"n": -1}),
    ({"properties": {"tags": {"uniqueItems": True}}}, {"tags": [1, 1]}),
    ({"properties": {"ip": {"format": "ipv4"}}}, {"ip": "x"}),
    ({"additionalProperties": False, "properties": {"sql": {}}}, {"x": 0}),
    ({"maxProperties": 50}, {f"k{number}": 0 for number in range(51)}),
    ({"propertyNames": {"maxLength": 20}}, {"k" * 21: 0}),
    ({"patternProperties": {"^z": {"type": "string"}}}, {"z": 0}),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 0}),
    ({"not": {"required": ["error"]}}, {"error": 0}),
    ({"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}, {}),
    ({"properties": {"q": {"enum": ["yes", "no"]}}}, {"q": "maybe"}),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "rejected"), SCHEMAS_THAT_FAIL)
def test_a_schema_some_object_fails_is_kept_and_rejects_it(
    schema: dict[str, Any], rejected: dict[str, Any]
) -> None:
    expect = {"json_schema": schema}
    result = check(json.dumps(rejected), expect)  # loads: the schema checks something
    assert not result.ok and result.reasons[0].startswith("json_schema: ")


def test_a_schema_that_checks_nothing_is_exit_2_on_the_command_line(tmp_path: Path) -> None:
    done = guard(tmp_path, {"json_schema": {"type": "object"}}, {})
    assert done.returncode == 2, done
    assert "field 'json_schema': no JSON object tried fails this schema" in done.stderr
    assert "it checks nothing" in done.stderr
    done = guard(tmp_path, {"json_schema": {"type": "object", "required": ["sql"]}}, {})
    assert done.returncode == 1 and "'sql' is a required property" in done.stderr


def test_the_largest_maximum_kept_can_still_fail() -> None:
    most = most_items("findings")
    output = json.dumps({"findings": [0] * most}, separators=(",", ":"))
    assert len(output) <= 1_048_576
    result = check(output, {"max_findings": most - 1})
    assert not result.ok and f"{most:,}" not in result.reasons[0]
    assert result.reasons == [f"max_findings: {most} findings, more than the {most - 1} allowed"]


def test_a_forbidden_pattern_kept_rejects_what_it_names() -> None:
    expect = {"forbidden_regex": {"patterns": ["^DROP"], "field": "sql"}}
    assert not check(json.dumps({"sql": "DROP TABLE x"}), expect).ok
    assert check(json.dumps({"sql": "SELECT 1"}), expect).ok


# -- a named field present but null, or of the wrong type --------------------------------------

WRONG = [
    ({"sql_read_only": True}, {"sql": None}, "sql_read_only: the output field 'sql' is null"),
    ({"sql_read_only": True}, {"sql": 1}, "is not SQL text"),
    ({"sql_read_only": True}, {"sql": {"q": "DROP TABLE x"}}, "is not SQL text"),
    ({"sql_read_only": True}, {"sql": ["SELECT 1", 2]}, "is not SQL text"),
    ({"sql_read_only": True}, {"sql": True}, "is not SQL text"),
    ({"sql_read_only": True}, {"sql": []}, "holds no SQL"),
    ({"sql_read_only": True}, {"sql": "  "}, "holds no SQL"),
    ({"sql_tables_subset": ["invoices"]}, {"sql": "SELECT 1", "tables": None}, "'tables' is not"),
    ({"max_findings": 2}, {"findings": None}, "'findings' is null"),
    ({"must_cite_from": [["a.md", "x"]]}, {"answer": "yes", "citations": None}, "is null"),
    ({"forbidden_events": ["APPROVE"]}, {"event": None}, "'event' is null"),
    ({"no_comment_paths": ["*.lock"]}, {"comments": None}, "'comments' is null"),
    ({"forbidden_substrings": {"values": ["DROP"], "field": "sql"}}, {"sql": None}, "is null"),
    ({"forbidden_substrings": {"values": ["DROP"], "field": "sql"}}, {"query": "DROP"}, "no field"),
    ({"forbidden_regex": {"patterns": ["DROP"], "field": "sql"}}, {"sql": None}, "is null"),
    ({"forbidden_regex": {"patterns": ["DROP"], "field": "sql"}}, {"sql": 7}, "not text"),
    ({"regex": {"patterns": ["^SELECT"], "field": "sql"}}, {"sql": None}, "does not match"),
]  # fmt: skip


@pytest.mark.parametrize(("expect", "output", "words"), WRONG)
def test_a_named_field_null_or_of_the_wrong_type_is_rejected(
    expect: dict[str, Any], output: dict[str, Any], words: str
) -> None:
    result = check(json.dumps(output), expect)
    assert not result.ok and words in " ".join(result.reasons), result.reasons


def test_null_sql_is_exit_1_on_the_command_line(tmp_path: Path) -> None:
    done = guard(tmp_path, {"sql_read_only": True}, {"sql": None, "query": "DROP TABLE events"})
    assert done.returncode == 1, done
    assert "rejected: sql_read_only: the output field 'sql' is null, not SQL" in done.stderr
    assert guard(tmp_path, {"sql_read_only": True}, {"sql": "SELECT 1"}).returncode == 0
