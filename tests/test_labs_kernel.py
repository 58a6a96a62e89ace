"""A lab step that needs a kernel feature this machine lacks says so, and what to do.

Inside a lab (a user namespace) the kernel loads no module on demand, so a qdisc such as netem
is "unknown" on kernels that have not loaded it, and `tc` prints only the kernel's line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from agentledger.labs.kernel import kernel_hint
from labs_support import lab_privilege

SHAPER_LAB = """schema_version: 1
title: A WAN emulator owns the qdisc on web's link
hosts:
  - name: client
  - name: web
links:
  - a: {host: client, address: 10.0.0.2/24}
    b: {host: web, address: 10.0.0.1/24}
owners:
  - name: wanem
    host: web
    owns: the qdisc on web's eth0
    desired:
      - {path: wanem/kind, content: "bogus\\n"}
    cycle: tc qdisc replace dev eth0 root "$(cat wanem/kind)"
fault:
  description: The emulator drops everything.
  steps:
    - {host: web, run: "true"}
probes:
  - {name: client-web, role: symptom, host: client, ping: 10.0.0.1}
"""


@pytest.mark.parametrize(
    ("said", "module"),
    [
        ("Error: Specified qdisc kind is unknown.", "sch_netem"),
        ("Error: Specified filter kind is unknown.", "cls_u32"),
        ("Error: Unknown device type.", "wireguard"),
        ("iptables: can't initialize iptables table `nat': Table does not exist (do you need to "
         "insmod?)", "iptable_nat"),
        ("Warning: Extension statistic revision 0 not supported, missing kernel module?",
         "xt_statistic"),
    ],
)  # fmt: skip
def test_a_kernels_error_gets_its_meaning_and_what_to_do(said: str, module: str) -> None:
    hint = kernel_hint(f"owner x's cycle exited 2: {said}")
    assert f"`modprobe {module}`" in hint and "cannot load kernel modules" in hint


def test_other_errors_get_no_hint() -> None:
    assert kernel_hint("fault step 1 in web ('jailctl ban') exited 127: not found") == ""


@pytest.mark.slow
def test_lab_up_names_an_unknown_qdisc_as_the_kernels_and_leaves_nothing(tmp_path: Path) -> None:
    lab_privilege()  # skips, saying why, where labs cannot run (fails in CI)
    (tmp_path / "shaper").mkdir()
    (tmp_path / "shaper" / "lab.yaml").write_text(SHAPER_LAB)
    runner = CliRunner()
    result = runner.invoke(main, ["lab", "up", str(tmp_path / "shaper")])
    assert result.exit_code == 2, result.output
    assert "the first cycle of owner wanem in web" in result.output
    assert "Specified qdisc kind is unknown" in result.output
    assert "cannot load kernel modules" in result.output and "modprobe sch_" in result.output
    assert "shaper" not in runner.invoke(main, ["lab", "list"]).output
