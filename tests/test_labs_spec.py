"""lab.yaml: every mistake is refused before anything starts, naming the file and field."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.errors import RecordError
from agentledger.labs import LabUnavailableError, choose_privilege, load_lab, resolve_labs
from agentledger.labs.spec import packaged_labs_dir
from agentledger.labs.system import SYSTEM_PATH, missing_tools
from labs_support import SMALL_LAB, write_small_lab


def _lab_error(tmp_path: Path, text: str) -> RecordError:
    (tmp_path / "lab.yaml").write_text(text)
    with pytest.raises(RecordError) as caught:
        load_lab(tmp_path)
    return caught.value


def test_bad_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    error = _lab_error(tmp_path, "hosts:\n  - name: web\n  bad: [\n")
    assert error.source.endswith("lab.yaml")
    assert "not valid YAML" in str(error)
    assert error.line is not None


def test_unknown_field_is_named(tmp_path: Path) -> None:
    text = SMALL_LAB.replace("    owns: the chain f2b", "    owns: the chain f2b\n    colour: red")
    error = _lab_error(tmp_path, text)
    assert error.field == "owners.0.colour"
    assert "unknown field" in error.problem


def test_duplicate_host_names_are_refused(tmp_path: Path) -> None:
    error = _lab_error(tmp_path, SMALL_LAB.replace("  - name: client\n", "  - name: web\n"))
    assert error.field == "hosts.1"
    assert "'web' is used twice" in error.problem


def test_link_to_an_unknown_host_names_field_and_line(tmp_path: Path) -> None:
    text = SMALL_LAB.replace("{host: client, address", "{host: clinet, address")
    error = _lab_error(tmp_path, text)
    assert error.field == "links.0.a.host"
    assert "no host 'clinet'" in error.problem
    assert error.line == text.splitlines().index("links:") + 2


def test_a_probe_needs_exactly_one_check(tmp_path: Path) -> None:
    text = SMALL_LAB.replace(
        'http: "http://10.0.0.1/"}', 'http: "http://10.0.0.1/", tcp: "10.0.0.1:80"}'
    )
    error = _lab_error(tmp_path, text)
    assert error.field == "probes.0"
    assert "exactly one of" in error.problem and "http, tcp" in error.problem


def test_a_remedy_naming_an_unknown_probe_is_refused(tmp_path: Path) -> None:
    error = _lab_error(tmp_path, SMALL_LAB.replace("broken: [client-http]", "broken: [nope]"))
    assert error.field == "remedies.1.broken"
    assert "no probe 'nope'" in error.problem


def test_a_file_may_not_leave_its_host_directory(tmp_path: Path) -> None:
    error = _lab_error(tmp_path, SMALL_LAB.replace("path: www/index.html", "path: ../../etc/x"))
    assert error.field == "hosts.0.files.0.path"


def test_cli_refuses_a_bad_lab_with_exit_2_and_starts_nothing(tmp_path: Path) -> None:
    (tmp_path / "lab.yaml").write_text(
        SMALL_LAB.replace("{host: client, address", "{host: x, address")
    )
    for command in (["lab", "up", str(tmp_path)], ["lab", "check", str(tmp_path)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, result.output
        assert "lab.yaml" in result.output and "links.0.a.host" in result.output


def test_schema_lab_prints_the_spec() -> None:
    result = CliRunner().invoke(main, ["schema", "lab"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.output)
    assert {"hosts", "owners", "fault", "probes", "remedies"} <= set(schema["properties"])


def test_every_packaged_lab_loads_with_good_and_wrong_remedies() -> None:
    labs = resolve_labs("labs")
    assert len(labs) >= 10
    for loaded in labs:
        kinds = {r.kind for r in loaded.spec.remedies}
        assert kinds == {"good", "wrong"}, loaded.name
        scenario = loaded.path.parent
        assert (scenario / "scenario.yaml").is_file() and (scenario / "PROMPT.txt").is_file()
    assert (
        resolve_labs("lab_f2b_chain")[0].path == packaged_labs_dir() / "lab_f2b_chain" / "lab.yaml"
    )


def test_the_labs_suite_is_a_suite_the_runner_reads() -> None:
    from agentledger.runner.scenario import load_suite

    scenarios = load_suite(packaged_labs_dir())
    assert [s.id for s in scenarios] == sorted(lab.name for lab in resolve_labs("labs"))
    assert all(s.spec.expected and s.spec.mandatory_checks for s in scenarios)


def test_scenario_lab_is_none_for_a_scenario_without_one(tmp_path: Path) -> None:
    from agentledger.labs import scenario_lab

    assert scenario_lab(tmp_path) is None
    loaded = scenario_lab(write_small_lab(tmp_path / "with"))
    assert loaded is not None and loaded.name == "with"


def test_a_missing_tool_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("unshare", "nsenter", "setsid", "flock", "setpriv", "base64", "python3"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, bin_dir / tool)
    monkeypatch.setattr("agentledger.labs.system.SYSTEM_PATH", str(bin_dir))
    with pytest.raises(LabUnavailableError, match=r"ip \(iproute2\).*iptables or nft"):
        choose_privilege()
    result = CliRunner().invoke(main, ["lab", "up", str(write_small_lab(tmp_path / "s"))])
    assert result.exit_code == 2
    assert "tc (iproute2)" in result.output


def test_refused_user_namespaces_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for path in SYSTEM_PATH.split(os.pathsep):
        for tool in Path(path).glob("*") if Path(path).is_dir() else []:
            if not (bin_dir / tool.name).exists():
                os.symlink(tool, bin_dir / tool.name)
    (bin_dir / "unshare").unlink()
    (bin_dir / "unshare").write_text(
        "#!/bin/sh\necho 'unshare: Operation not permitted' >&2\nexit 1\n"
    )
    (bin_dir / "unshare").chmod(0o755)
    monkeypatch.setattr("agentledger.labs.system.SYSTEM_PATH", str(bin_dir))
    with pytest.raises(LabUnavailableError, match="unprivileged user namespaces"):
        choose_privilege(allow_root=False)


def test_tools_are_found_without_sbin_on_the_callers_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A login shell of an ordinary account has no /usr/sbin on PATH, where ip, tc and iptables
    live: a lab looks for its tools on the PATH it runs them with, not the caller's."""
    if missing_tools():
        pytest.skip(f"this machine lacks lab tools: {missing_tools()}")
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    assert missing_tools() == []
