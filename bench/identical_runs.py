"""Imports of the same files by two versions of agentledger give byte-identical runs (issue 38).

    .venv/bin/python bench/identical_runs.py                      # this tree: C scan vs Python
    .venv/bin/python bench/identical_runs.py --before /tmp/base/src   # against an older source

A speed change must not change what is stored. The same inputs are imported by a fresh
`agentledger import` process of each version into a ledger of its own, and every file under
runs/ is compared byte for byte (MANIFEST.json without its `sealed_at`, the one field that
says when), with the exit code and what each import printed (ledger paths aside). Without
--before, "before" is this source tree with its strict JSON check in Python: a copy of src/
without the built C scan (`records/_strict_scan`).

Inputs: the OpenHands samples beside the clone (when there), generated OpenHands-shaped
trajectories (bench/traces.py's generator, in five model folders), the same with a
duplicate key, a 64-bit overflow and deep nesting planted in some of them (each import
refused: the messages must be the same), and a seed-layout directory (bench/synth.py).
Exit code 1 when any file or message differs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
SAMPLES = next(
    (
        place / "shared" / "samples" / "openhands"
        for place in HERE.parents[1:3]
        if (place / "shared" / "samples" / "openhands").is_dir()
    ),
    HERE.parents[1] / "shared" / "samples" / "openhands",
)
"""The public samples beside the clone, or beside the folder of worktrees it is in."""
sys.path.insert(0, str(HERE))

from synth import run_spec, write_seed_run  # noqa: E402
from traces import make_data  # noqa: E402

# Planted in a generated trajectory's first event, as text, so that the import must refuse it.
PLANTED = {
    "duplicate": (b'"id": ', b'"id": 0, "id": '),
    "overflow": (b'"id": ', b'"big": 18446744073709551616, "id": '),
    "deep": (b'"id": ', b'"deep": ' + b"[" * 70 + b"]" * 70 + b', "id": '),
}


def inputs(work: Path, count: int, samples: Path) -> list[tuple[str, Path, list[str]]]:
    """(name, directory, import options) of each input set."""
    sets: list[tuple[str, Path, list[str]]] = []
    if samples.is_dir():
        sets.append(("OpenHands samples", samples, ["--format", "openhands", "--model", "m"]))
    generated = work / "generated"
    make_data(generated, count)
    sets.append(("generated OpenHands", generated, ["--format", "openhands", "--model", "m"]))
    for name, (anchor, planted) in PLANTED.items():
        target = work / f"planted-{name}"
        shutil.copytree(generated, target)
        first = sorted(target.rglob("traj_*.json"))[0]
        first.write_bytes(first.read_bytes().replace(anchor, planted, 1))
        sets.append(
            (f"generated, {name} planted", target, ["--format", "openhands", "--model", "m"])
        )
    seed = work / "seed"
    seed.mkdir()
    for index in range(count):
        write_seed_run(seed, run_spec(index))
    sets.append(("seed layout", seed, []))
    return sets


def import_with(src: Path, directory: Path, options: list[str], ledger: Path) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, "-m", "agentledger", "import", "--ledger", str(ledger)]
    done = subprocess.run(
        [*argv, *options, str(directory)], capture_output=True, text=True, env=env, check=False
    )
    said = (done.stdout + done.stderr).replace(str(ledger), "LEDGER")
    return done.returncode, said


def run_files(ledger: Path) -> dict[str, bytes]:
    """Every file under runs/, MANIFEST.json without `sealed_at`."""
    files = {}
    for path in sorted((ledger / "runs").rglob("*")) if (ledger / "runs").is_dir() else []:
        if path.is_file():
            data = path.read_bytes()
            if path.name == "MANIFEST.json":
                manifest = json.loads(data)
                manifest.pop("sealed_at", None)
                data = json.dumps(manifest, sort_keys=True).encode()
            files[str(path.relative_to(ledger))] = data
    return files


def compare(before: Path, after: Path, work: Path, sets: list[tuple[str, Path, list[str]]]) -> int:
    problems = 0
    for number, (name, directory, options) in enumerate(sets):
        code_a, said_a = import_with(before, directory, options, work / f"before-{number}")
        code_b, said_b = import_with(after, directory, options, work / f"after-{number}")
        files_a = run_files(work / f"before-{number}")
        files_b = run_files(work / f"after-{number}")
        differing = sorted(
            k for k in files_a.keys() | files_b.keys() if files_a.get(k) != files_b.get(k)
        )
        same = code_a == code_b and said_a == said_b and not differing
        problems += not same
        verdict = "identical" if same else "DIFFERENT"
        print(f"{name}: exit {code_a} / {code_b}, {len(files_b)} files: {verdict}")
        if code_b:
            print(f"  {said_b.strip().splitlines()[-1][:200]}")
        if said_a != said_b:
            print(f"  before said: {said_a.strip()[:300]}\n  after said:  {said_b.strip()[:300]}")
        for key in differing[:10]:
            print(f"  differs: {key}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--before", type=Path, help="the other version's src/ [this tree, no C scan]"
    )
    parser.add_argument("--count", type=int, default=30, help="generated runs per set")
    parser.add_argument(
        "--samples", type=Path, default=SAMPLES, help=f"OpenHands trajectories [{SAMPLES}]"
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentledger-identical-") as temp:
        work = Path(temp)
        before = options.before
        if before is None:
            before = work / "src-python-check"
            shutil.copytree(SRC, before, ignore=shutil.ignore_patterns("_strict_scan*.so"))
        problems = compare(
            before.resolve(), SRC, work, inputs(work, options.count, options.samples)
        )
    print("every import identical" if not problems else f"{problems} input sets differ")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
