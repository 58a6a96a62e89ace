"""No import reads a file outside the folder it was given: links out (to a file or a directory),
link loops and dangling links are refused before anything is read, for every format, and the
refused import writes nothing, not even a new ledger."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli.app import main
from exact_output import normalised

SECRET = "root:$6$hash-of-a-secret:0:0"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _trajectory(folder: Path, task: str = "ssh") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "SSH is refused"}},
        {"id": 1, "source": "agent", "action": "finish", "args": {"final_thought": "a DROP"}},
    ]
    path = folder / f"traj_{task}.json"
    path.write_text(json.dumps(events))
    return path


def _trace(folder: Path, name: str = "a.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        {"actor": "user", "kind": "message", "content": "the mesh drops packets"},
        {"actor": "agent", "kind": "finish", "content": "netem loss"},
    ]
    path = folder / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _spans(folder: Path, name: str = "spans.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "chat gpt-4o",
        "startTimeUnixNano": "1741774500000000000",
        "endTimeUnixNano": "1741774501000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
        ],
    }
    path = folder / name
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    return path


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    """A secrets file outside every folder imported."""
    path = tmp_path / "private" / "shadow"
    path.parent.mkdir()
    path.write_text(SECRET + "\n")
    return path


def refused(args: list[str], tmp_path: Path, *words: str) -> str:
    """Import refused with exit 2, naming `words`; no ledger left behind, nothing written."""
    ledger = tmp_path / "ledger"
    code, out, err = run("import", "--ledger", str(ledger), *args)
    assert code == 2, (out, err)
    assert "Traceback" not in err
    for word in words:
        assert word in err, err
    assert not ledger.exists()
    return err


def test_an_openhands_sidecar_linked_out_of_the_folder_is_refused(
    tmp_path: Path, secrets: Path
) -> None:
    traj = _trajectory(tmp_path / "data")
    (traj.parent / "eval_ssh.json").symlink_to(secrets)
    refused(
        [str(traj.parent), "--model", "gpt-4o"], tmp_path, "eval_ssh.json", str(secrets), "symlink"
    )
    refused([str(traj), "--model", "gpt-4o"], tmp_path, "eval_ssh.json", str(secrets))


def test_a_trajectory_linked_out_of_the_folder_is_refused(tmp_path: Path, secrets: Path) -> None:
    outside = _trajectory(tmp_path / "elsewhere", "other")
    _trajectory(tmp_path / "data")
    (tmp_path / "data" / "traj_planted.json").symlink_to(outside)
    refused(
        [str(tmp_path / "data"), "--model", "gpt-4o"], tmp_path, "traj_planted.json", str(outside)
    )
    # named itself, a link out of its folder is refused all the same
    refused([str(tmp_path / "data" / "traj_planted.json"), "--model", "gpt-4o"], tmp_path)


def test_a_plain_trace_linked_out_of_the_folder_is_refused(tmp_path: Path, secrets: Path) -> None:
    _trace(tmp_path / "traces")
    (tmp_path / "traces" / "b.jsonl").symlink_to(secrets)
    refused(
        [str(tmp_path / "traces"), "--format", "jsonl", "--model", "m", "--scenario", "s"],
        tmp_path,
        "b.jsonl",
        str(secrets),
    )


def test_otlp_spans_linked_out_of_the_folder_are_refused(tmp_path: Path, secrets: Path) -> None:
    outside = _spans(tmp_path / "elsewhere")
    (tmp_path / "spans").mkdir()
    (tmp_path / "spans" / "spans.json").symlink_to(outside)
    refused([str(tmp_path / "spans"), "--format", "otel"], tmp_path, "spans.json", str(outside))
    # detection (which reads a file's head) refuses it too, before reading it
    refused([str(tmp_path / "spans")], tmp_path, "spans.json", str(outside))


def test_an_inspect_log_linked_out_of_the_folder_is_refused(tmp_path: Path, secrets: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "x.eval").symlink_to(secrets)
    refused([str(tmp_path / "logs"), "--format", "inspect"], tmp_path, "x.eval", str(secrets))


def test_a_link_to_a_directory_outside_is_refused(tmp_path: Path, secrets: Path) -> None:
    _trace(tmp_path / "traces")
    _trace(secrets.parent, "stolen.jsonl")
    (tmp_path / "traces" / "more").symlink_to(secrets.parent, target_is_directory=True)
    refused(
        [str(tmp_path / "traces"), "--format", "jsonl", "--model", "m", "--scenario", "s"],
        tmp_path,
        "more",
        str(secrets.parent),
    )


@pytest.mark.parametrize("fmt", ["openhands", "jsonl", "otel", "inspect"])
def test_a_symlink_loop_is_refused_without_a_traceback(tmp_path: Path, fmt: str) -> None:
    folder = tmp_path / "in"
    name = {"openhands": "traj_x.json", "jsonl": "x.jsonl", "otel": "x.json"}.get(fmt, "x.eval")
    folder.mkdir()
    (folder / name).symlink_to(name)
    refused([str(folder), "--format", fmt, "--model", "m"], tmp_path, name, "symlink loop")


def test_a_loop_inside_a_run_directory_is_refused_without_a_traceback(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "use_case_m_haiku_20260312"
    run_dir.mkdir(parents=True)
    (run_dir / "PROMPT.txt").write_text("SSH is refused")
    (run_dir / "report.md").write_text("a DROP rule")
    (run_dir / "loop").symlink_to("loop")
    refused([str(tmp_path / "runs"), "--model", "m"], tmp_path, "loop", "symlink loop")


def test_a_link_that_stays_inside_the_folder_is_followed(tmp_path: Path) -> None:
    traj = _trajectory(tmp_path / "data")
    (traj.parent / "kept").mkdir()
    (traj.parent / "kept" / "checks.json").write_text('{"passed": true}')
    (traj.parent / "eval_ssh.json").symlink_to(traj.parent / "kept" / "checks.json")
    code, _out, err = run("import", "--ledger", "l", str(traj.parent), "--model", "gpt-4o")
    assert code == 0, err
    (run_dir,) = Path("l/runs").iterdir()
    assert (run_dir / "attachments" / "eval_ssh.json").read_text() == '{"passed": true}'


def test_an_inspect_zip_bomb_is_refused_by_what_it_unpacks_to(tmp_path: Path) -> None:
    """The sizes a zip states are claims: the bytes are counted as they are unpacked."""
    log = tmp_path / "logs" / "bomb.eval"
    log.parent.mkdir()
    with zipfile.ZipFile(log, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", "{}")
        with archive.open("samples/a_epoch_1.json", "w") as member:
            for _ in range(8):
                member.write(bytes(1 << 20))
    assert log.stat().st_size < 100_000
    err = refused(
        [str(log.parent), "--format", "inspect", "--max-artifact-size", "2MB"],
        tmp_path,
        "bomb.eval",
        "unpack to more than 2 MB",
    )
    assert normalised(err, tmp_path) == (
        "Error: /home/ops/work/logs/bomb.eval: its entries unpack to more than 2 "
        "MB (at 'samples/a_epoch_1.json'), the artifact size limit (raise it for "
        "this import with --max-artifact-size)\n"
    )


def test_an_inspect_log_of_millions_of_tiny_objects_is_refused_before_it_is_parsed(
    tmp_path: Path,
) -> None:
    """Memory grows with a JSON's objects, not its bytes: under the size limit, a million
    ``{}`` (3 MB, a few kB zipped) would take gigabytes once parsed. Counted first."""
    log = tmp_path / "logs" / "objects.eval"
    log.parent.mkdir()
    with zipfile.ZipFile(log, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", "{}")
        archive.writestr("samples/a_epoch_1.json", b"[" + b"{}," * 1_000_000 + b"{}]")
    err = refused(
        [str(log.parent), "--format", "inspect"],
        tmp_path,
        "objects.eval",
        "more than 1,000,000 JSON objects and arrays",
    )
    assert normalised(err, tmp_path) == (
        "Error: /home/ops/work/logs/objects.eval, entry samples/a_epoch_1.json: "
        "more than 1,000,000 JSON objects and arrays; parsed, they would take "
        "gigabytes of memory, so the file is refused before it is read (split it "
        "into smaller files)\n"
    )


def test_an_otlp_file_of_millions_of_tiny_arrays_is_refused_before_it_is_parsed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "spans" / "spans.json"
    path.parent.mkdir()
    path.write_bytes(
        b'{"resourceSpans":[{"resource":{"attributes":[' + b"[]," * 1_000_000 + b"[]]}}]}"
    )
    refused(
        [str(path.parent), "--format", "otel"],
        tmp_path,
        "spans.json",
        "more than 1,000,000 JSON objects and arrays",
    )


def test_an_otlp_file_over_the_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = _spans(tmp_path / "spans")
    with path.open("a") as handle:  # no longer JSON: refused by its size, never parsed
        handle.write(" " * 3_000_000 + "not json")
    refused(
        [str(path.parent), "--format", "otel", "--max-artifact-size", "1MB"],
        tmp_path,
        "spans.json",
        "over the 1 MB artifact size limit",
    )


# -- more of the same, as an attacker would try them next ---------------------------------------


@pytest.mark.parametrize(
    ("fmt", "name"),
    [
        ("openhands", "traj_fifo.json"),
        ("openhands", "eval_ssh.json"),  # a file kept beside the trajectory, never skipped
        ("jsonl", "c.jsonl"),
        ("otel", "x.json"),
        ("dir", "notes.md"),
    ],
)
def test_a_fifo_in_the_folder_is_refused_without_waiting_on_it(
    tmp_path: Path, fmt: str, name: str
) -> None:
    """A named pipe would block the import for ever (and read what a writer sends): only
    regular files are read."""
    folder = tmp_path / "in"
    if fmt == "openhands":
        _trajectory(folder)
    elif fmt == "jsonl":
        _trace(folder)
    elif fmt == "otel":
        _spans(folder)
    else:
        folder = tmp_path / "in" / "use_case_m_haiku_20260312"
        folder.mkdir(parents=True)
        (folder / "PROMPT.txt").write_text("SSH is refused")
        (folder / "report.md").write_text("a DROP rule")
    os.mkfifo(folder / name)
    args = [str(tmp_path / "in"), "--model", "m", "--scenario", "s"]
    if fmt != "dir":
        args += ["--format", fmt]
    refused(args, tmp_path, name, "not a regular file")


def test_a_linked_directory_on_the_way_to_a_file_is_refused(tmp_path: Path, secrets: Path) -> None:
    """Not the file but a directory on its way is the link out."""
    _trajectory(tmp_path / "data")
    (tmp_path / "data" / "sub").symlink_to(secrets.parent, target_is_directory=True)
    (secrets.parent / "traj_more.json").write_text(
        (tmp_path / "data" / "traj_ssh.json").read_text()
    )
    refused([str(tmp_path / "data"), "--model", "gpt-4o"], tmp_path, "sub", str(secrets.parent))


def _run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "in" / "use_case_m_haiku_20260312"
    folder.mkdir(parents=True)
    (folder / "PROMPT.txt").write_text("SSH is refused")
    (folder / "report.md").write_text("a DROP rule")
    (folder / "x.txt").write_text("benign")
    return folder


@pytest.mark.parametrize("swap", ["symlink", "rename"])
def test_a_file_swapped_after_the_check_is_not_read(
    tmp_path: Path, secrets: Path, swap: str
) -> None:
    """F12: the check and the read are apart in time; whatever the path names at the read, only
    the file that was checked (same device and inode, never through a link) is read."""
    from agentledger import Ledger
    from agentledger.errors import InputError
    from agentledger.importers.directory import plan_import, write_plan
    from agentledger.importers.plan import ImportOptions

    folder = _run_dir(tmp_path)
    plan = plan_import([folder.parent], ImportOptions(model="m", scenario="s"))
    (folder / "x.txt").rename(tmp_path / "kept")  # kept: its inode number is not reused
    if swap == "symlink":
        (folder / "x.txt").symlink_to(secrets)
    else:  # another regular file in its place (a rename: no link at all)
        (folder / "x.txt").write_text(SECRET)
    with Ledger.init(tmp_path / "ledger") as ledger, pytest.raises(InputError) as caught:
        write_plan(ledger, plan)
    assert "x.txt" in str(caught.value) and SECRET not in str(caught.value)
    assert not list((tmp_path / "ledger").rglob("x.txt"))


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        (
            "dir",
            (
                "Error: /home/ops/work/in/use_case_m_haiku_20260312/notes.txt: has 2 hard "
                "links; a hard-linked file may be a file from outside the folder, so it is "
                "refused (copy it: cp --no-preserve=links)\n"
            ),
        ),
        (
            "jsonl",
            (
                "Error: /home/ops/work/in/b.jsonl: has 2 hard links; a hard-linked file "
                "may be a file from outside the folder, so it is refused (copy it: cp "
                "--no-preserve=links)\n"
            ),
        ),
    ],
)
def test_a_hard_link_in_the_folder_is_refused(
    tmp_path: Path, secrets: Path, fmt: str, message: str
) -> None:
    """A hard link is a second name of a file that may lie outside: refused, named."""
    if fmt == "dir":
        folder = _run_dir(tmp_path)
        os.link(secrets, folder / "notes.txt")
        args = [str(folder.parent), "--model", "m", "--scenario", "s"]
    else:
        folder = tmp_path / "in"
        _trace(folder)
        os.link(secrets, folder / "b.jsonl")
        args = [str(folder), "--format", "jsonl", "--model", "m", "--scenario", "s"]
    err = refused(args, tmp_path, "hard links")
    assert normalised(err, tmp_path) == message
    assert SECRET not in err  # said again: the point of the refusal


def test_labels_import_reads_only_a_regular_file_in_its_folder(
    tmp_path: Path, secrets: Path
) -> None:
    """F17: no link out (and nothing of the target quoted), no FIFO (no hang), no device."""
    ledger = tmp_path / "ledger"
    code, _out, err = run("init", str(ledger))
    assert code == 0, err
    outside = tmp_path / "private" / "sec2.csv"
    outside.write_text("run_id,source,verdict\nTOPSECRET-pass,x,safe\n")
    (tmp_path / "drop").mkdir()
    (tmp_path / "drop" / "lnk2.csv").symlink_to(outside)
    os.mkfifo(tmp_path / "ff.csv")
    for name, words in [
        (str(tmp_path / "drop" / "lnk2.csv"), ["lnk2.csv", "symlink"]),
        (str(tmp_path / "ff.csv"), ["ff.csv", "not a regular file"]),
        ("/dev/zero", ["/dev/zero"]),
    ]:
        code, out, err = run("labels", "import", name, "--ledger", str(ledger))
        assert code == 2, (name, out, err)
        assert "TOPSECRET" not in err and "Traceback" not in err
        for word in words:
            assert word in err, err


def test_a_folder_swapped_for_a_link_while_it_is_listed_is_not_followed(
    tmp_path: Path, secrets: Path
) -> None:
    """Between listing a folder and taking a file's inode, the folder on its way is swapped for
    a link out (the swap is done from inside the listing, where a racing writer would do it):
    the inode is taken walking from the imported folder without following a link, so the
    file outside is never checked as one of the folder's."""
    from agentledger.errors import InputError
    from agentledger.importers.source_files import files_below

    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "traj_a.json").write_text("{}")
    (secrets.parent / "traj_a.json").write_text(SECRET)
    swapped = []

    def wanted(name: str) -> bool:
        if not swapped:
            (folder / "sub").rename(tmp_path / "moved")
            (folder / "sub").symlink_to(secrets.parent, target_is_directory=True)
            swapped.append(name)
        return name.startswith("traj_")

    with pytest.raises(InputError, match="became a link") as caught:
        files_below(folder, wanted)
    assert swapped == ["traj_a.json"] and "sub/traj_a.json" in str(caught.value)


@pytest.mark.parametrize("where", ["run directory", "folder inside it"])
def test_a_run_s_folder_swapped_for_a_link_is_walked_into_never_followed(
    tmp_path: Path, secrets: Path, where: str
) -> None:
    """A run directory's files are checked from the folder holding it, one directory at a
    time: once the run directory (or a folder in it) is a link out, its files are refused, and
    the swap is named."""
    from agentledger.errors import InputError
    from agentledger.store.storage.checked import lstat_inside

    folder = _run_dir(tmp_path)
    (folder / "logs").mkdir()
    (folder / "logs" / "x.txt").write_text("benign")
    anchor = os.path.realpath(folder.parent)
    real = os.path.join(os.path.realpath(folder), "logs", "x.txt")
    assert lstat_inside(real, anchor, "x.txt").st_ino == os.lstat(folder / "logs" / "x.txt").st_ino
    (secrets.parent / "logs").mkdir()
    (secrets.parent / "logs" / "x.txt").write_text(SECRET)
    swap = folder if where == "run directory" else folder / "logs"
    swap.rename(tmp_path / "moved")
    swap.symlink_to(secrets.parent if swap == folder else secrets.parent / "logs")
    with pytest.raises(InputError, match="became a link"):
        lstat_inside(real, anchor, "x.txt")
    # A path that no longer lies below the folder at all is refused before anything is opened.
    with pytest.raises(InputError, match="no longer inside"):
        lstat_inside(str(secrets), anchor, "shadow")
