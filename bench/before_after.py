"""Every figure of `make bench`'s store and query side, for two checkouts, alternately.

    .venv/bin/python bench/before_after.py --before /work/wt/old          # 3 rounds
    .venv/bin/python bench/before_after.py --before OLD --rounds 5 --scale 0.1 --runs 20000

Each checkout runs its own benchmark scripts (bench/run.py: import, verify, query, reindex;
bench/reports.py; bench/agreement.py; bench/viewer.py) with its own `.venv` (whose editable
install is that checkout's src), so the two sides need not share an API. A round runs every
script once for each side, the order of the sides swapped every round, so load on a shared
machine falls on both alike. Each script measures once per round (its own repeats set to 1)
and the table gives the median over the rounds of each figure, wall time and CPU time where
the script reports it (the steadier figure on a loaded machine), with after / before.

The sizes are smaller than the scripts' own defaults (`--scale`, `--runs`): the figures are
compared with each other, not with the goals. Results: bench/.work/before_after.json.

`--query-cpu N` instead times N `agentledger runs --model X --prompt-hash P` commands of
each side, alternating command by command, over an index each side's bench/run.py built
(kept): the CPU time of the command, which bench/run.py does not report (wall only).
Results: bench/.work/before_after_query.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from statistics import median
from typing import Any

HERE = Path(__file__).resolve().parent
Figures = dict[str, tuple[float, float | None]]
"""A figure's name: (wall, CPU), in milliseconds; CPU None where the script gives none."""


def _ms(seconds: float) -> float:
    return seconds * 1000


def _timed(part: dict[str, Any]) -> tuple[float, float]:
    return _ms(part["seconds"]), _ms(part["user_seconds"] + part["system_seconds"])


def run_figures(results: dict[str, Any]) -> Figures:
    bench = results["benchmarks"]
    figures: Figures = {}
    for name in ("import", "verify", "reindex"):
        for how in ("cli", "library"):
            if name in bench and how in bench[name]:
                figures[f"{name} ({how})"] = _timed(bench[name][how])
    if "query" in bench:
        query = bench["query"]
        figures["query: Ledger.runs() median"] = (query["library"]["median_ms"], None)
        figures["query: agentledger runs median"] = (query["cli"]["median_ms"], None)
    return figures


def rows(key: str, wall: str, cpu: str, scale: float) -> Callable[[dict[str, Any]], Figures]:
    def figures(results: dict[str, Any]) -> Figures:
        listed = results.get("results") or results.get("pages") or []
        return {
            f"{key}: {row.get('report') or row.get('case') or row.get('page')}": (
                row[wall] * scale,
                row[cpu] * scale,
            )
            for row in listed
        }

    return figures


def scripts(args: argparse.Namespace, out: Path) -> Iterator[tuple[list[str], Path, Callable]]:
    """Each script's arguments, where its results land, and how to read its figures."""
    yield (
        [
            "run.py",
            "--scale",
            str(args.scale),
            "--rounds",
            "1",
            "--keep-page-cache",
            "--max-wait",
            "5",
            "--query-reps",
            "50",
            "--cli-reps",
            "10",
            "--work",
            str(out / "run"),
            *(["--only", args.run_only] if args.run_only else []),
        ],
        out / "run" / "results.json",
        run_figures,
    )
    runs = str(args.runs)
    yield (
        ["reports.py", "--runs", runs, "--repeat", "1", "--json", str(out / "reports.json")],
        out / "reports.json",
        rows("report", "seconds", "cpu_seconds", 1000),
    )
    yield (
        ["agreement.py", "--runs", runs, "--repeat", "1", "--json", str(out / "agreement.json")],
        out / "agreement.json",
        rows("agreement", "seconds", "cpu_seconds", 1000),
    )
    yield (
        ["viewer.py", "--runs", runs, "--requests", "20", "--json", str(out / "viewer.json")],
        out / "viewer.json",
        rows("viewer", "median_ms", "server_cpu_ms", 1),
    )


def one_side(tree: Path, args: argparse.Namespace, out: Path, log: Path) -> Figures:
    """Every script of `tree`, with its own venv; the figures they wrote."""
    figures: Figures = {}
    python = tree / ".venv" / "bin" / "python"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    for argv, result, read in scripts(args, out):
        if args.scripts and argv[0].removesuffix(".py") not in args.scripts.split(","):
            continue
        out.mkdir(parents=True, exist_ok=True)
        result.unlink(missing_ok=True)
        with log.open("a") as sink:
            sink.write(f"\n== {tree}: {' '.join(argv)}\n")
            sink.flush()
            subprocess.run(
                [str(python), str(tree / "bench" / argv[0]), *argv[1:]],
                cwd=tree,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if result.exists():
            figures.update(read(json.loads(result.read_text())))
    return figures


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def query_cpu(trees: dict[str, Path], args: argparse.Namespace, log: Path) -> list[dict[str, Any]]:
    """`agentledger runs` over each side's own index, command by command in turn."""
    sys.path.insert(0, str(HERE))
    import synth

    ledgers = {}
    for side, tree in trees.items():
        work = args.work / side / "query"
        with log.open("a") as sink:
            subprocess.run(
                [str(tree / ".venv/bin/python"), str(tree / "bench/run.py"), "--only", "query",
                 "--scale", str(args.scale), "--rounds", "1", "--keep", "--keep-page-cache",
                 "--max-wait", "5", "--work", str(work)],
                cwd=tree, stdout=sink, stderr=subprocess.STDOUT, check=True,
            )  # fmt: skip
        ledgers[side] = next(p.parent for p in work.glob("index-*/ledger.json"))
    times: dict[str, list[tuple[float, float]]] = {side: [] for side in trees}
    for number, (model, prefix) in enumerate(synth.query_pairs(args.query_cpu)):
        for side in sorted(trees, reverse=number % 2 == 1):
            command = [str(trees[side] / ".venv/bin/agentledger"), "runs", "--ledger",
                       str(ledgers[side]), "--model", model, "--prompt-hash", prefix]  # fmt: skip
            cpu, began = _cpu(), time.perf_counter()
            subprocess.run(command, capture_output=True, check=True)
            times[side].append((_ms(time.perf_counter() - began), _ms(_cpu() - cpu)))
    row: dict[str, Any] = {"figure": "query: agentledger runs (CPU measured here)"}
    for side, values in times.items():
        row[f"{side}_wall_ms"] = median(wall for wall, _ in values)
        row[f"{side}_cpu_ms"] = median(cpu for _, cpu in values)
        row[f"{side}_rounds"] = len(values)
    row["wall_ratio"] = row["after_wall_ms"] / row["before_wall_ms"]
    row["cpu_ratio"] = row["after_cpu_ms"] / row["before_cpu_ms"]
    return [row]


def table(collected: dict[str, list[Figures]]) -> list[dict[str, Any]]:
    names = [name for name in collected["before"][0] if name in collected["after"][0]]
    out = []
    for name in names:
        row: dict[str, Any] = {"figure": name}
        for side in ("before", "after"):
            values = [figures[name] for figures in collected[side] if name in figures]
            row[f"{side}_wall_ms"] = median(wall for wall, _ in values)
            cpus = [cpu for _, cpu in values if cpu is not None]
            row[f"{side}_cpu_ms"] = median(cpus) if cpus else None
            row[f"{side}_rounds"] = len(values)
        row["wall_ratio"] = row["after_wall_ms"] / row["before_wall_ms"]
        if row["before_cpu_ms"] and row["after_cpu_ms"] is not None:
            row["cpu_ratio"] = row["after_cpu_ms"] / row["before_cpu_ms"]
        out.append(row)
    return out


def print_table(rows_: list[dict[str, Any]]) -> None:
    width = max(len(row["figure"]) for row in rows_)
    print(
        f"{'figure':<{width}}  {'before wall':>11} {'after wall':>10} {'ratio':>5}"
        f"  {'before CPU':>10} {'after CPU':>9} {'ratio':>5}   (ms, medians)"
    )
    for row in rows_:
        cpu = (
            f"{row['before_cpu_ms']:10.1f} {row['after_cpu_ms']:9.1f} {row['cpu_ratio']:5.2f}"
            if "cpu_ratio" in row
            else f"{'-':>10} {'-':>9} {'-':>5}"
        )
        print(
            f"{row['figure']:<{width}}  {row['before_wall_ms']:11.1f} {row['after_wall_ms']:10.1f}"
            f" {row['wall_ratio']:5.2f}  {cpu}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout's root")
    parser.add_argument("--after", type=Path, default=HERE.parent, help="[this checkout]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=float, default=0.1, help="bench/run.py's --scale")
    parser.add_argument("--runs", type=int, default=20_000, help="reports, agreement, viewer")
    parser.add_argument("--work", type=Path, default=HERE / ".work" / "before_after")
    parser.add_argument(
        "--scripts", help="only these, e.g. run,reports [run,reports,agreement,viewer]"
    )
    parser.add_argument("--run-only", help="bench/run.py's --only, e.g. import,verify")
    parser.add_argument("--query-cpu", type=int, metavar="N", help="only time N `runs` commands")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for side, tree in trees.items():
        if not (tree / ".venv" / "bin" / "python").exists():
            parser.error(f"--{side} {tree}: no .venv (make .venv/.installed there first)")
    collected: dict[str, list[Figures]] = {"before": [], "after": []}
    log = args.work / "log.txt"
    args.work.mkdir(parents=True, exist_ok=True)
    if args.query_cpu:
        rows_ = query_cpu(trees, args, log)
        (args.work.parent / "before_after_query.json").write_text(json.dumps(rows_, indent=2))
        print_table(rows_)
        return 0
    for number in range(args.rounds):
        order = ("before", "after") if number % 2 == 0 else ("after", "before")
        for side in order:
            print(f"round {number + 1} of {args.rounds}: {side}", file=sys.stderr, flush=True)
            out = args.work / side
            collected[side].append(one_side(trees[side], args, out, log))
    result = table(collected)
    loads = os.getloadavg()
    (args.work.parent / "before_after.json").write_text(
        json.dumps(
            {
                "trees": {k: str(v) for k, v in trees.items()},
                "args": {"rounds": args.rounds, "scale": args.scale, "runs": args.runs},
                "loadavg_end": loads,
                "table": result,
                "rounds": collected,
            },
            indent=2,
        )
        + "\n"
    )
    print_table(result)
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in loads)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
