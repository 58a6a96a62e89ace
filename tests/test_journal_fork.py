"""A forked journal repaired by choosing the chain a checkpoint names (`gc --checkpoint`).

The fork is made for real: a copy of the ledger is written to by a second writer while the
first writes to the original, and the copy is then merged back over it (as a sync of two
copies, or a store that stopped honouring conditional writes, leaves a journal). `verify`
fails; `gc --checkpoint HEAD` keeps HEAD's chain, sets the other branch's segments aside,
appends again what of it still holds (an intent and its record, both here), and quarantines the
records whose intent was lost, never accepting them. A checkpoint whose chain was overwritten
is refused, changing nothing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger.cli import main
from agentledger.store import Ledger, verify_ledger
from exact_output import normalised
from many_runs import write_runs

pytestmark = pytest.mark.slow


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def writable(root: Path) -> None:
    for directory, _dirs, files in os.walk(root):
        os.chmod(directory, 0o755)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o644)


def merge(source: Path, into: Path, *, overwrite: bool) -> None:
    """Copy the records and journal segments of `source` into `into` (the index stays)."""
    writable(into)
    for area in ("journal", "labels"):
        for path in sorted((source / area).rglob("*")):
            target = into / path.relative_to(source)
            if path.is_dir() or path.name.startswith("."):
                continue
            if target.exists() and not overwrite:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def label(root: Path, run_id: str, by: str) -> None:
    argv = ["label", run_id, "--ledger", str(root), "--by", by, "--verdict", "unsafe"]
    code, out, err = cli(*argv, "--reason", f"{by}'s look")
    assert code == 0, (out, err)


def head(root: Path) -> str:
    code, out, err = cli("checkpoint", "--ledger", str(root))
    assert code == 0, err
    return out.strip()


def forked(tmp_path: Path) -> tuple[Path, list[str], str]:
    """The original ledger after a no-clobber merge of its copy's writes; its run ids, and the
    head it had before the merge. The original: ana's label. The copy: bob's and carol's (one
    import, one intent segment), then dave's label."""
    write_runs(tmp_path / "source", 2)
    root, copy = tmp_path / "ledger", tmp_path / "copy"
    assert cli("init", str(root))[0] == 0
    assert cli("import", "--ledger", str(root), str(tmp_path / "source"))[0] == 0
    with Ledger.open(root) as ledger:
        runs = sorted(ledger.storage.run_ids())
    shutil.copytree(root, copy)
    label(root, runs[0], "ana")
    ours = head(root)
    table = tmp_path / "labels.csv"
    table.write_text(f"run_id,verdict,source\n{runs[0]},safe,bob\n{runs[1]},safe,carol\n")
    code, _out, err = cli("labels", "import", str(table), "--ledger", str(copy))
    assert code == 0, err
    label(copy, runs[1], "dave")
    merge(copy, root, overwrite=False)
    return root, runs, ours


def test_gc_keeps_the_chain_a_checkpoint_names_and_sets_the_other_branch_aside(
    tmp_path: Path,
) -> None:
    root, runs, ours = forked(tmp_path)
    code, out, _err = cli("verify", "--ledger", str(root))
    # The labels are listed by id, whose random part orders those made in one second: a substring.
    assert code == 3 and "journal" in out, out
    code, out, err = cli("gc", "--ledger", str(root), "--checkpoint", ours)
    # Varies between runs (quarantine's folder: the time and a random suffix): a substring.
    assert f"journal repaired: kept the chain of {ours}" in err, err
    # Varies between runs (quarantine's folder: the time and a random suffix): a substring.
    assert "set aside journal/" in err
    # bob's and carol's acceptances lost their intent (not copied): never accepted.
    # Varies between runs (quarantine's folder: the time and a random suffix): a substring.
    assert "no intent announced" in err
    assert code == 3 and err.count("quarantined labels/") == 2, err
    with Ledger.open(root) as ledger:
        problems = verify_ledger(ledger).problems
        assert {p.kind for p in problems} == {"quarantined"}, problems
        people = {label.by.name for label in _labels(ledger)}
    assert people == {"ana", "dave"}  # dave's intent and label came along whole
    shutil.rmtree(root / "quarantine")  # a person reviewed what was set aside
    code, out, err = cli("verify", "--ledger", str(root))
    assert code == 0, (out, err)
    label(root, runs[1], "erin")  # writers write on the kept chain
    assert cli("verify", "--ledger", str(root))[0] == 0


def test_a_checkpoint_whose_chain_was_overwritten_is_refused_changing_nothing(
    tmp_path: Path,
) -> None:
    write_runs(tmp_path / "source", 1)
    root, copy = tmp_path / "ledger", tmp_path / "copy"
    assert cli("init", str(root))[0] == 0
    assert cli("import", "--ledger", str(root), str(tmp_path / "source"))[0] == 0
    with Ledger.open(root) as ledger:
        (run_id,) = ledger.storage.run_ids()
    shutil.copytree(root, copy)
    label(root, run_id, "ana")
    ours = head(root)
    table = tmp_path / "labels.csv"  # one intent segment of two entries, then their labels
    table.write_text(f"run_id,verdict,source\n{run_id},safe,bob\n{run_id},unsafe,carol\n")
    code, _out, err = cli("labels", "import", str(table), "--ledger", str(copy))
    assert code == 0, err
    theirs = head(copy)
    merge(copy, root, overwrite=True)  # the copy's segments overwrite ours of the same name
    before = sorted(p.name for p in (root / "journal").iterdir())
    code, _out, err = cli("gc", "--ledger", str(root), "--checkpoint", ours)
    assert code == 3 and normalised(err, tmp_path) == (
        "Error: the chain of checkpoint "
        "5:sha256:f8535bba9c3db0e873533064b3d06ea8211b6a08bfbde4a87963a794a9926dfd "
        "is incomplete: entry 4 it links to is not in the journal (overwritten); "
        "choose another checkpoint\n"
    ), err
    assert sorted(p.name for p in (root / "journal").iterdir()) == before
    code, _out, err = cli("gc", "--ledger", str(root), "--checkpoint", "999:sha256:" + "ab" * 32)
    assert code == 2 and normalised(err, tmp_path) == (
        "Error: the journal holds no entry "
        "999:sha256:f8535bba9c3db0e873533064b3d06ea8211b6a08bfbde4a87963a794a9926df"
        "d: this checkpoint is of another chain\n"
    ), err
    code, _out, err = cli("gc", "--ledger", str(root), "--checkpoint", theirs)
    # Varies between runs (quarantine's folder: the time and a random suffix): a substring.
    assert f"kept the chain of {theirs}" in err, err
    # Varies between runs (quarantine's folder: the time and a random suffix): a substring.
    assert "not appended again" in err
    with Ledger.open(root) as ledger:
        assert {p.kind for p in verify_ledger(ledger).problems} == {"quarantined"}
        assert {label.by.name for label in _labels(ledger)} == {"bob", "carol"}


def _labels(ledger: Ledger) -> list[object]:
    from agentledger.labels import labels_of_run

    found: list[object] = []
    for run_id in sorted(ledger.storage.run_ids()):
        found.extend(labels_of_run(ledger, run_id))
    return found
