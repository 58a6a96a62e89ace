"""One check of where a command writes (issue 33, cause 2): resolved like the kernel does,
never a text glob, for redirections, write options, and remote commands alike."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentledger.runner.shell_gate import Gate
from agentledger.shell.classifier import classify
from agentledger.shell.paths import write_target

PID = os.getpid()
SNEAKY = f"/dev/fd/../../{PID}/root/tmp/planted"


def without_pid(value: str) -> str:
    """A test id that names the pid as PID: the same in every process that collects it."""
    return value.replace(str(PID), "PID")


@pytest.mark.parametrize(
    "target", ["/dev/null", "/dev//null", "/dev/./null", "/dev/stdout", "/dev/stderr"]
)
def test_only_the_null_device_and_the_command_own_streams_are_harmless(target: str) -> None:
    assert write_target(target)[0] is None


@pytest.mark.parametrize(
    "target",
    [
        SNEAKY,
        "/dev/fd/1",
        "/dev/fd/../../self/root/etc/passwd",
        "/dev/../dev/null",
        "/proc/self/fd/1",
        f"/proc/{PID}/root/etc/hostname",
        "/proc/sys/kernel/sysrq",
        "/sys/kernel/mm/ksm/run",
        "/dev/tty",
        "/dev/pts/0",
        "null",
        "-",
        "/tmp/x",
    ],
    ids=without_pid,
)
def test_every_other_place_writes(target: str) -> None:
    assert write_target(target)[0] is not None


def test_a_link_to_the_null_device_is_not_the_null_device(tmp_path: Path) -> None:
    (tmp_path / "quiet").symlink_to("/dev/null")
    assert write_target(str(tmp_path / "quiet"))[0] == "mutating"
    (tmp_path / "hostname").symlink_to(f"/proc/{PID}/root/etc/hostname")
    kind, _what = write_target(str(tmp_path / "hostname"))
    assert kind == "mutating"


def test_a_link_to_a_disk_is_destructive(tmp_path: Path) -> None:
    disk = next(
        (path for path in ("/dev/loop0", "/dev/sda", "/dev/vda") if Path(path).exists()), None
    )
    if disk is None or not Path(disk).is_block_device():
        pytest.skip("no block device here")
    (tmp_path / "innocent").symlink_to(disk)
    assert write_target(str(tmp_path / "innocent"))[0] == "destructive"


def test_relative_targets_resolve_against_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "out").symlink_to("/proc/sys/kernel/sysrq")
    kind, what = write_target("out", cwd=str(tmp_path))
    assert kind == "mutating" and "kernel setting" in what


@pytest.mark.parametrize(
    "line",
    [
        f"echo x > {SNEAKY}",
        f"echo x >> {SNEAKY}",
        f"ls 2> {SNEAKY}",
        f"echo x | tee {SNEAKY}",
        f"dd if=/etc/hostname of={SNEAKY}",
        f"sort -o {SNEAKY} /etc/hostname",
        f"curl -s -o {SNEAKY} http://10.0.0.5/",
        f"git log --output={SNEAKY}",
        "printf '\\033[2J' > /dev/tty",
        f"ssh web 'echo x > {SNEAKY}'",
        "ssh web 'cat /etc/passwd > /dev/fd/1'",
        "ssh web 'sort -o /dev/fd/../../1/root/etc/x /etc/hosts'",
    ],
    ids=without_pid,
)
def test_a_write_through_a_sneaky_path_is_never_read_only(line: str) -> None:
    classification = classify(line)
    assert classification.kind != "read-only", classification
    assert Gate(None, None).decide(line).decision == "denied"


@pytest.mark.parametrize(
    "line",
    [
        "ls > /dev/null",
        "ls 2>/dev/null",
        "ls &>/dev/null",
        "curl -s -o /dev/null http://10.0.0.5/",
        "ls | tee /dev/stderr",
        "ssh web 'ls > /dev/null 2>&1'",
        "ls 2>&1",
    ],
)
def test_the_null_device_stays_harmless(line: str) -> None:
    assert classify(line).kind == "read-only"


# `-` as a written file: standard output only where the tool says so (knowledge `stdout:`).
# GNU sort -o -, shuf -o - and tee - create a file named `-`; iconv -o - and curl -o - write
# to standard output. Each line is run for real in an empty directory first.
DASH_IS_A_FILE = ["sort -o - in", "sort -o- in", "sort --output=- in", "shuf -o - in", "tee - <in"]
# (`"file://$PWD/in"` quoted: unquoted, $PWD could split into words, options among them)
DASH_IS_STDOUT = ["iconv -f utf-8 -t utf-8 -o - in", 'curl -s -o - "file://$PWD/in"']


@pytest.mark.parametrize("line", DASH_IS_A_FILE + DASH_IS_STDOUT)
def test_a_dash_is_standard_output_only_where_the_tool_makes_it_so(
    line: str, tmp_path: Path
) -> None:
    import shutil
    import subprocess

    if shutil.which(line.split()[0]) is None:
        pytest.skip(f"{line.split()[0]} is not installed")
    (tmp_path / "in").write_text("b\na\n")
    subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, check=True)
    made = (tmp_path / "-").exists()
    assert made == (line in DASH_IS_A_FILE)
    assert classify(line).kind == ("mutating" if made else "read-only"), classify(line)
