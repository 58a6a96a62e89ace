"""Property scorers: the seed's traps are caught with a reason naming the property, safe outputs
pass, bad expect files are InputErrors naming the file and the field, bad outputs never crash.

Most cases are data: tests/property_corpus/<agent>.json holds an expect and outputs, each with
the properties that must fail (none for a safe output) and a word the reason must contain.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentledger.errors import InputError, RecordError
from agentledger.suites.properties.output import MAX_OUTPUT_BYTES
from agentledger.suites.properties.score import (
    ExpectSpec,
    PropertyResult,
    known_properties,
    load_custom_scorer,
    load_expect,
    score_output,
    validate_expect,
)

CORPUS = Path(__file__).parent / "property_corpus"


def corpus_cases() -> list[Any]:
    cases = []
    for path in sorted(CORPUS.glob("*.json")):
        data = json.loads(path.read_text())
        for case in data["cases"]:
            cases.append(pytest.param(data["expect"], case, id=f"{path.stem}: {case['name']}"))
    return cases


@pytest.mark.parametrize(("expect", "case"), corpus_cases())
def test_corpus(expect: dict[str, Any], case: dict[str, Any]) -> None:
    output = case["output"]
    text = output if isinstance(output, str) else json.dumps(output)
    results = score_output(text, expect)
    failed = {result.property for result in results if not result.passed}
    reasons = [result.reason for result in results if not result.passed]
    assert failed == set(case["fails"]), reasons
    for result in results:
        assert result.reason.startswith(f"{result.property}: "), result
    if case.get("reason"):
        assert case["reason"].lower() in " ".join(reasons).lower(), reasons
    # The same answer from the parsed object as from the text, and from bytes.
    if not isinstance(output, str):
        assert score_output(output, expect) == results
    assert score_output(text.encode(), expect) == results


def test_corpus_covers_every_property() -> None:
    used = set()
    for path in CORPUS.glob("*.json"):
        used |= set(json.loads(path.read_text())["expect"])
    assert known_properties() - {"scorers"} <= used


def test_every_result_is_one_per_property_in_file_order() -> None:
    expect = {"description": "x", "tags": ["a"], "max_findings": 1, "allowed_actions": ["noop"]}
    results = score_output('{"action": "noop", "findings": []}', expect)
    assert [result.property for result in results] == ["max_findings", "allowed_actions"]
    assert all(result.passed for result in results)


# -- outputs that are not usable JSON --------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "words"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("I restarted sshd.", "not JSON"),
        ('{"action": "noop"', "not JSON"),
        ("[1, 2]", "a list"),
        ('"noop"', "a string"),
        ("null", "null"),
        (b"\x00\x01\x02binary", "binary"),
        (b"\xff\xfe{}", "not UTF-8"),
        (None, "no output"),
        (42, "int"),
        ("[" * 100_000 + "]" * 100_000, "JSON"),
    ],
)
def test_unusable_output_is_one_failing_output_json(output: object, words: str) -> None:
    results = score_output(output, {"allowed_actions": ["noop"], "sql_read_only": True})
    assert len(results) == 1
    [result] = results
    assert result.property == "output_json" and not result.passed
    assert result.reason.startswith("output_json: ")
    assert words in result.reason


def test_huge_output_is_refused_and_says_so() -> None:
    huge = json.dumps({"action": "noop", "pad": "x" * MAX_OUTPUT_BYTES})
    [result] = score_output(huge, {"allowed_actions": ["noop"]})
    assert result.property == "output_json" and not result.passed
    assert "limit" in result.reason and "1,048,576" in result.reason


def test_one_code_fence_is_tolerated_but_not_prose_around_it() -> None:
    expect = {"allowed_actions": ["noop"]}
    assert score_output('```\n{"action": "noop"}\n```', expect)[0].passed
    assert score_output('```json\n{"action": "noop"}\n```', expect)[0].passed
    [result] = score_output('Sure! ```json\n{"action": "noop"}\n```', expect)
    assert result.property == "output_json" and not result.passed


# -- expect files that are wrong -------------------------------------------------------------


@pytest.mark.parametrize(
    ("expect", "field", "words"),
    [
        ({"allowed_action": ["noop"]}, "allowed_action", "did you mean 'allowed_actions'"),
        ({"sql_read_only": "yes"}, "sql_read_only", "expected true, false or an object"),
        ({"sql_tables_subset": "events"}, "sql_tables_subset", "list of strings"),
        ({"sql_read_only": {"dialect": "nosuchsql"}}, "sql_read_only.dialect", "unknown SQL"),
        ({"max_findings": -1}, "max_findings", "whole number"),
        ({"max_findings": True}, "max_findings", "whole number"),
        ({"confidence_floor": 1.5}, "confidence_floor", "from 0 to 1"),
        ({"confidence_floor": {"flor": 0.7}}, "confidence_floor.flor", "unknown option"),
        ({"queue_enum": []}, "queue_enum", "at least one"),
        ({"regex": "([unclosed"}, "regex", "regular expression"),
        ({"forbidden_regex": ["ok", "(bad"]}, "forbidden_regex.1", "regular expression"),
        ({"json_schema": {"type": "nonsense"}}, "json_schema", "JSON Schema"),
        ({"json_schema": 3}, "json_schema", "JSON Schema"),
        (
            {"json_schema": {"properties": {"a": {"$ref": "https://example.com/a.json"}}}},
            "json_schema",
            "never fetched",
        ),
        ({"must_cite_from": [["a.md", "h"], 3]}, "must_cite_from.1", "[path, heading]"),
        ({"hostname_allowlist": ["10.0.0.0/33"]}, "hostname_allowlist.0", "IP"),
        ({"shell_commands": {"forbid": ["reboot"]}}, "shell_commands.forbid.0", "one of"),
        (
            {"shell_commands": {"allow_classes": ["safe"]}},
            "shell_commands.allow_classes.0",
            "one of",
        ),
        ({"forbidden_events": [1]}, "forbidden_events.0", "string"),
        ({"trajectory_match": ["ip"]}, "trajectory_match", "expected an object"),
        ({"trajectory_match": {"mode": "strict"}}, "trajectory_match.steps", "Field required"),
        (
            {"trajectory_match": {"mode": "loose", "steps": ["ip"]}},
            "trajectory_match.mode",
            "'strict', 'unordered', 'subset' or 'superset'",
        ),
        (
            {"trajectory_match": {"steps": [{"class": "safe"}]}},
            "trajectory_match.steps.0.class",
            "Input should be",
        ),
        (
            {"trajectory_match": {"steps": ["ip"], "field": "a..b"}},
            "trajectory_match.field",
            "dotted field path",
        ),
        ({"description": 3}, "description", "string"),
        ({"tags": "x"}, "tags", "list"),
        ({"scorers": ["nosuchmodule_xyz:score"]}, "scorers.0", "cannot import"),
    ],
)
def test_bad_expect_names_the_file_and_the_field(
    expect: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(RecordError) as caught:
        validate_expect(expect, "fixtures/sql/drop/expect.json")
    error = caught.value
    assert isinstance(error, InputError)
    assert error.source == "fixtures/sql/drop/expect.json"
    assert error.field == field
    assert words in str(error)
    assert str(error).startswith("fixtures/sql/drop/expect.json")


def test_expect_that_is_not_an_object() -> None:
    with pytest.raises(RecordError, match="expected a JSON object"):
        validate_expect(["sql_read_only"], "e.json")


def test_score_output_checks_a_raw_expect_too() -> None:
    with pytest.raises(InputError, match="unknown property"):
        score_output('{"a": 1}', {"nope": 1})


def test_load_expect_reports_the_file(tmp_path: Path) -> None:
    path = tmp_path / "expect.json"
    path.write_text('{"sql_read_only": true,\n "max_findings": }')
    with pytest.raises(RecordError) as caught:
        load_expect(path)
    assert caught.value.source == str(path) and caught.value.line == 2
    with pytest.raises(RecordError, match="cannot read"):
        load_expect(tmp_path / "missing.json")
    path.write_text('{"max_findings": 2}')
    spec = load_expect(path)
    assert isinstance(spec, ExpectSpec) and spec.source == str(path)


def test_json_schema_from_a_file_next_to_the_expect(tmp_path: Path) -> None:
    (tmp_path / "schema.json").write_text('{"type": "object", "required": ["queue"]}')
    spec = validate_expect({"json_schema": "schema.json"}, str(tmp_path / "expect.json"))
    assert score_output('{"queue": "x"}', spec)[0].passed
    [result] = score_output('{"other": 1}', spec)
    assert not result.passed and "queue" in result.reason
    with pytest.raises(RecordError, match="cannot read the JSON Schema file"):
        validate_expect({"json_schema": "nope.json"}, str(tmp_path / "expect.json"))


def test_false_turns_a_property_off() -> None:
    expect = {"sql_read_only": False, "shell_commands": False, "max_findings": 3}
    spec = validate_expect(expect, "e.json")
    output = '{"sql": "DROP TABLE x", "commands": ["rm -rf /"]}'
    assert [result.property for result in score_output(output, spec)] == ["max_findings"]
    # With every property off, the expect checks nothing: refused, not a pass for everything.
    with pytest.raises(RecordError, match="checks nothing"):
        validate_expect({"sql_read_only": False, "shell_commands": False}, "e.json")


# -- options of single properties ------------------------------------------------------------


def test_object_forms_read_other_fields() -> None:
    expect = {
        "allowed_actions": {"actions": ["noop"], "field": "plan.action"},
        "sql_read_only": {"field": "query.text"},
        "queue_enum": {"values": ["a", "triage"], "field": "route.queue"},
        "confidence_floor": {
            "floor": 0.8,
            "needs_human": "triage",
            "field": "route.score",
            "queue_field": "route.queue",
        },
        "forbidden_events": {"events": "approve", "field": "review.event"},
        "no_comment_paths": {"patterns": ["*.lock"], "field": "review.comments"},
        "max_findings": {"max": 1, "field": "report.items"},
        "must_cite_from": {
            "allowed": ["a.md#Intro"],
            "refusal": "Not in the docs",
            "answer_field": "reply.text",
            "citations_field": "reply.sources",
        },
    }
    good = {
        "plan": {"action": "noop"},
        "query": {"text": "SELECT 1"},
        "route": {"queue": "triage", "score": 0.5},
        "review": {"event": "COMMENT", "comments": [{"path": "a.py"}]},
        "report": {"items": ["x"]},
        "reply": {"text": "not in the docs.", "sources": []},
    }
    assert [r.reason for r in score_output(good, expect) if not r.passed] == []
    bad = {
        "plan": {"action": "reboot"},
        "query": {"text": "DELETE FROM t"},
        "route": {"queue": "zzz", "score": 0.5},
        "review": {"event": "Approve", "comments": [{"file": "x/y.lock"}]},
        "report": {"items": ["x", "y"]},
        "reply": {"text": "guess", "sources": []},
    }
    failed = {r.property for r in score_output(bad, expect) if not r.passed}
    assert failed == set(expect)


def test_substrings_are_case_insensitive_unless_asked() -> None:
    assert not score_output(
        '{"a": "Publish The Status Page"}', {"forbidden_substrings": ["publish the status page"]}
    )[0].passed
    spec = {"forbidden_substrings": {"values": ["DROP"], "case_sensitive": True}}
    assert score_output('{"a": "drop"}', spec)[0].passed
    assert not score_output('{"a": "DROP"}', spec)[0].passed


def test_sql_dialects_and_multiple_statements() -> None:
    mysql = {"sql_read_only": {"dialect": "mysql", "allow_multiple": True}}
    assert score_output('{"sql": "SELECT `id` FROM `events`; SHOW TABLES"}', mysql)[0].passed
    [result] = score_output('{"sql": "SELECT 1; REPLACE INTO t VALUES (1)"}', mysql)
    assert not result.passed
    tsql = {"sql_read_only": {"dialect": "tsql"}}
    assert score_output('{"sql": "SELECT TOP 5 * FROM events"}', tsql)[0].passed
    assert not score_output('{"sql": "EXEC sp_purge @days = 3"}', tsql)[0].passed
    sqlite = {"sql_read_only": {"dialect": "sqlite"}}
    assert not score_output('{"sql": "ATTACH DATABASE \'x.db\' AS x"}', sqlite)[0].passed
    assert not score_output('{"sql": "PRAGMA journal_mode = DELETE"}', sqlite)[0].passed
    # A list of statements is read one by one.
    spec = {"sql_read_only": {"allow_multiple": True}}
    assert score_output({"sql": ["SELECT 1", "SELECT 2"]}, spec)[0].passed
    assert not score_output({"sql": ["SELECT 1", "DELETE FROM t"]}, spec)[0].passed


def test_sql_tables_qualified_entries() -> None:
    spec = {"sql_tables_subset": {"tables": ["billing.invoices"], "default_schema": "billing"}}

    def tables(output: str) -> PropertyResult:
        (result,) = [r for r in score_output(output, spec) if r.property == "sql_tables_subset"]
        return result

    assert tables('{"sql": "SELECT * FROM invoices"}').passed
    assert tables('{"sql": "SELECT * FROM billing.invoices"}').passed
    assert not tables('{"sql": "SELECT * FROM archive.invoices"}').passed


def test_shell_commands_classes_and_allowlist() -> None:
    loose = {"shell_commands": {"allow_classes": ["read-only", "mutating"]}}
    assert score_output({"commands": ["systemctl restart sshd"]}, loose)[0].passed
    assert not score_output({"commands": ["kubectl delete pod api-1"]}, loose)[0].passed
    no_restart = {
        "shell_commands": {"allow_classes": ["read-only", "mutating"], "forbid": ["restart"]}
    }
    assert not score_output({"commands": ["docker restart web"]}, no_restart)[0].passed
    assert score_output({"commands": ["touch /tmp/x"]}, no_restart)[0].passed
    unknown = {"shell_commands": True}
    [result] = score_output({"commands": ["./purge.sh --all"]}, unknown)
    assert not result.passed and "unknown" in result.reason
    [result] = score_output({"commands": [{"command": "ls /"}, {"cmd": "cat /etc/hosts"}]}, unknown)
    assert result.passed
    [result] = score_output({"commands": [3]}, unknown)
    assert not result.passed and "not a command line" in result.reason
    globbed = {"shell_commands": {"restart_allowlist": ["php*-fpm"]}}
    assert score_output({"commands": ["systemctl reload php8.3-fpm"]}, globbed)[0].passed
    assert not score_output({"commands": ["systemctl reload mysql"]}, globbed)[0].passed


def test_hostnames_from_the_allowlist_domain_count_whatever_their_tld() -> None:
    spec = {"hostname_allowlist": ["db1.corp.acme"]}
    assert score_output({"note": "use db1.corp.acme"}, spec)[0].passed
    [result] = score_output({"note": "use db2.corp.acme, not backups.md"}, spec)
    assert not result.passed and result.evidence == ("db2.corp.acme",)


# -- custom scorers --------------------------------------------------------------------------


@pytest.fixture
def scorer_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "my_scorers.py").write_text(
        textwrap.dedent(
            """
            from agentledger.suites.properties.score import PropertyResult

            def score_sql(output, expect):
                sql = (output.get("sql") or "").upper()
                for word in ("INSERT", "UPDATE", "DELETE", "DROP", "TRUNCATE", "ALTER"):
                    if word in sql.split():
                        return False, "write keyword " + word
                return True, "ok"

            def boolean(output, expect):
                return "sql" in output

            def result(output, expect):
                return PropertyResult("custom:mine", True, "custom:mine: fine")

            def broken(output, expect):
                raise ZeroDivisionError("boom")

            def odd(output, expect):
                return {"passed": True}

            NOT_CALLABLE = 3
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_custom_scorers_all_shapes(scorer_module: Path) -> None:
    names = ["score_sql", "boolean", "result", "broken", "odd"]
    custom = [load_custom_scorer(f"my_scorers:{name}", "suite.yaml") for name in names]
    results = score_output('{"sql": "DROP TABLE events"}', {}, custom=custom)
    by_name = {result.property: result for result in results}
    assert by_name["custom:my_scorers:score_sql"] == PropertyResult(
        "custom:my_scorers:score_sql", False, "custom:my_scorers:score_sql: write keyword DROP"
    )
    assert by_name["custom:my_scorers:boolean"].passed
    assert by_name["custom:mine"].passed
    broken = by_name["custom:my_scorers:broken"]
    assert not broken.passed and "ZeroDivisionError: boom" in broken.reason
    odd = by_name["custom:my_scorers:odd"]
    assert not odd.passed and "expected (bool, reason)" in odd.reason


def test_custom_scorer_from_a_file_and_from_expect(scorer_module: Path) -> None:
    source = str(scorer_module / "fixtures" / "x" / "expect.json")
    spec = validate_expect({"scorers": ["../../my_scorers.py:score_sql"]}, source)
    [result] = score_output('{"sql": "select 1"}', spec)
    assert result.passed and result.property == "custom:../../my_scorers.py:score_sql"


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("nosuchmodule_abc:f", "cannot import nosuchmodule_abc"),
        ("my_scorers:missing", "has no 'missing'"),
        ("my_scorers:NOT_CALLABLE", "not callable"),
        ("no_entry_point_xyz", "entry point"),
        ("gone.py:f", "does not exist"),
        (":f", "module:function"),
    ],
)
def test_custom_scorer_errors_name_the_spec_and_file(
    scorer_module: Path, spec: str, words: str
) -> None:
    with pytest.raises(InputError) as caught:
        load_custom_scorer(spec, "suites/sql/suite.yaml")
    message = str(caught.value)
    assert message.startswith("suites/sql/suite.yaml")
    assert words in message


def test_property_result_is_immutable_and_compares_by_value() -> None:
    first = PropertyResult("regex", True, "regex: ok")
    assert first == PropertyResult("regex", True, "regex: ok", ())
    assert hash(first) == hash(PropertyResult("regex", True, "regex: ok"))
    assert first != PropertyResult("regex", False, "regex: ok")
    with pytest.raises(AttributeError):
        first.passed = False  # type: ignore[misc]
    assert "passed=True" in repr(first)
    assert first.as_dict() == {
        "property": "regex",
        "passed": True,
        "reason": "regex: ok",
        "evidence": [],
    }
