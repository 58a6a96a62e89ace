"""Benchmark of strict JSON decoding (issue 38): what the strictness costs beside the parse.

    .venv/bin/python bench/strict_json.py                 # samples + 40 generated trajectories
    .venv/bin/python bench/strict_json.py --count 200 --json results.json

`records.decode_json` decodes every OpenHands trajectory an import reads. Its fast path
(`records.fast_json.decode_fast`) parses with orjson, then proves that no strict rule was
broken (no duplicate key, no integer beyond 64 bits, no nesting beyond the limit): in one
pass over the bytes in C when the Makefile built `records._strict_scan`, else with byte
operations of the standard library (re-encoding the value); the strict decoder (the standard
library's, a Python callback per object and number) decides only what it cannot prove.
Figures, CPU seconds of this process (so that other processes on the machine weigh less),
best of `--rounds`, in MB/s of JSON read:

- `orjson.loads` alone: the parse, the floor;
- `decode_fast`: the parse and the strictness check, and the check's cost as a multiple of
  the parse (goal of the issue: the check at parse speed, i.e. at most 1x), with the C scan
  and with the Python check (the cost before the C scan);
- each step of the Python check alone, to see where it goes;
- the strict decoder alone (`strict_json.loads`), what every file would cost without the
  fast path.

On the OpenHands samples beside the clone (`/work/shared/samples/openhands`, when there)
and on generated OpenHands-shaped trajectories (bench/traces.py's generator: a median of
about 200 KB, at most 5 MB).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from agentledger import strict_json
from agentledger.records import MAX_JSON_DEPTH
from agentledger.records import fast_json as fj

sys.path.insert(0, str(Path(__file__).resolve().parent))
from traces import MODELS, trajectory

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples" / "openhands"
"""The public samples beside the clone (give --samples from a worktree elsewhere)."""


def generated(count: int, seed: int = 38) -> list[bytes]:
    """`count` OpenHands-shaped trajectories, as bench/traces.py makes them."""
    rng = random.Random(seed)
    out = []
    for n in range(count):
        size = int(min(5_000_000, max(20_000, rng.lognormvariate(11.7, 0.8))))
        events = rng.randint(20, 300)
        out.append(json.dumps(trajectory(rng, MODELS[n % len(MODELS)], size, events)).encode())
    return out


def cpu_seconds(step: Callable[[bytes], object], files: list[bytes], rounds: int) -> float:
    """The least CPU time of `rounds` passes of `step` over every file."""
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for raw in files:
            step(raw)
        best = min(best, time.process_time() - started)
    return best


def _indented(raw: bytes) -> bytes:
    return orjson.dumps(orjson.loads(raw), option=orjson.OPT_INDENT_2)


def figures(files: list[bytes], rounds: int) -> dict[str, Any]:
    """MB/s of each way of decoding `files`, and the check's cost against the parse."""
    size = sum(map(len, files))
    parse = cpu_seconds(orjson.loads, files, rounds)
    fast = cpu_seconds(lambda raw: fj.decode_fast(raw, MAX_JSON_DEPTH), files, rounds)
    in_python = cpu_seconds(
        lambda raw: fj._checked_in_python(raw, orjson.loads(raw), MAX_JSON_DEPTH), files, rounds
    )
    steps = {
        "long integers (translate + find)": lambda raw: (
            fj._LONG_INTEGER in b" " + raw.translate(fj._DIGITS)
        ),
        "re-encode indented (beyond the parse)": _indented,
        "count colons of the input": lambda raw: raw.count(b":"),
        "escaped colons": fj._escaped_colon,
    }
    step_seconds = {name: cpu_seconds(step, files, rounds) for name, step in steps.items()}
    step_seconds["re-encode indented (beyond the parse)"] -= parse
    texts = [raw.decode() for raw in files]
    started = time.process_time()
    for text in texts:
        strict_json.loads(text)
    strict = time.process_time() - started
    doubts = sum(fj.decode_fast(raw, MAX_JSON_DEPTH) is fj.DOUBT for raw in files)
    return {
        "files": len(files),
        "mb": size / 1e6,
        "doubts": doubts,
        "mb_per_s": {
            "orjson.loads": size / 1e6 / parse,
            "decode_fast": size / 1e6 / fast,
            "decode_fast, the check in Python": size / 1e6 / in_python,
            "strict decoder": size / 1e6 / strict,
        },
        "c_scan": fj._certain is not None,
        "check_vs_parse": (fast - parse) / parse,
        "python_check_vs_parse": (in_python - parse) / parse,
        "steps_ms": {name: seconds * 1000 for name, seconds in step_seconds.items()},
    }


def report(name: str, found: dict[str, Any]) -> None:
    print(f"{name}: {found['files']} files, {found['mb']:.1f} MB, {found['doubts']} left to strict")
    for way, rate in found["mb_per_s"].items():
        print(f"  {way:<40} {rate:8.1f} MB/s")
    verdict = "met" if found["check_vs_parse"] <= 1.0 else "NOT met"
    way = "the C scan" if found["c_scan"] else "the Python check (no C scan built)"
    print(f"  {way} costs {found['check_vs_parse']:.2f}x the parse (goal 1x: {verdict})")
    print(f"  the Python check costs {found['python_check_vs_parse']:.2f}x the parse")
    for step, ms in found["steps_ms"].items():
        print(f"    {step:<38} {ms:8.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=40, help="generated trajectories")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--samples", type=Path, default=SAMPLES, help=f"OpenHands trajectories [{SAMPLES}]"
    )
    options = parser.parse_args()
    results: dict[str, Any] = {}
    place = options.samples
    samples = sorted(place.rglob("traj_*.json")) if place.is_dir() else []
    if samples:
        results["samples"] = figures([path.read_bytes() for path in samples], options.rounds)
        report("OpenHands samples", results["samples"])
    results["generated"] = figures(generated(options.count), options.rounds)
    report("generated OpenHands-shaped", results["generated"])
    if options.json:
        options.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
