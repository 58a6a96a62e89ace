"""The closing table of the benchmarks: each figure with its CPU split and its goal."""

from __future__ import annotations

from typing import Any

GOALS = {"import_ratio": 1.5, "verify_ratio": 1.3, "query_library_ms": 10.0}
HEADER = ("benchmark", "figure", "value", "cpu user/sys s", "goal")

Row = tuple[str, str, str, str, str]


def _cpu(part: dict[str, Any]) -> str:
    if "user_seconds" not in part:
        return ""
    return f"{part['user_seconds']:.1f} / {part['system_seconds']:.1f}"


def _median_cpu(runs: list[dict[str, Any]]) -> dict[str, float]:
    ordered = sorted(runs, key=lambda run: run["seconds"])
    return ordered[len(ordered) // 2]


def _goal(value: float, goal: float, unit: str, strict: bool = False) -> str:
    met = value < goal if strict else value <= goal
    return f"{'<' if strict else '<='} {goal:g}{unit}: {'met' if met else 'MISSED'}"


def _import_rows(r: dict[str, Any]) -> list[Row]:
    name = f"import {r['runs']:,} runs"
    rows: list[Row] = []
    for key, label in (
        ("cli", "agentledger import (subprocess)"),
        ("library", "import_runs() (library)"),
        ("single_process", "plan_import + write_plan, 1 process"),
    ):
        part = r.get(key)
        if part is None:
            continue
        if "unavailable" in part:
            rows.append((name, label, "unavailable", "", part["unavailable"][:40]))
            continue
        value = f"{part['runs_per_s']:,.0f} runs/s ({part['seconds']:.1f} s)"
        if len(part.get("rounds_seconds", [])) > 1:
            value = value[:-1] + f"; median of {len(part['rounds_seconds'])})"
        rows.append((name, label, value, _cpu(part), ""))
        ratio = part["ratio_to_baseline"]
        goal = _goal(ratio, GOALS["import_ratio"], "x")
        rows.append((name, "  ratio to cp -r + sha256sum", f"{ratio:.2f}x", "", goal))
        if "plan_seconds" in part:
            split = f"{part['plan_seconds']:.1f} s / {part['write_seconds']:.1f} s"
            rows.append((name, "  plan (read, check) / write (seal)", split, "", ""))
        if part.get("write_without_flush_seconds") is not None:
            value = f"{part['write_without_flush_seconds']:.1f} s"
            rows.append((name, "  write without flushes (durable=False)", value, "", ""))
    base = r["baseline"]
    cpu = _median_cpu(base["runs"])
    value = f"{base['median_seconds']:.2f} s (median of {len(base['runs'])})"
    rows.append((name, "baseline cp -r + sha256sum", value, _cpu(cpu), ""))
    if "with_sync" in base:
        synced = base["with_sync"]
        value = f"{synced['seconds']:.2f} s (reference, not the goal)"
        rows.append((name, "  baseline + sync", value, _cpu(synced), ""))
    return rows


def _verify_rows(r: dict[str, Any]) -> list[Row]:
    name = f"verify {r['runs']:,} scored runs"
    rows: list[Row] = []
    for key, label in (
        ("cli", "agentledger verify (subprocess)"),
        ("library", "verify_ledger() (library)"),
    ):
        part = r[key]
        value = f"{part['seconds']:.2f} s ({part['runs_per_s']:,.0f} runs/s)"
        rows.append((name, label, value, _cpu(part), ""))
        ratio = part["ratio_to_baseline"]
        goal = _goal(ratio, GOALS["verify_ratio"], "x")
        rows.append((name, "  ratio to sha256sum", f"{ratio:.2f}x", "", goal))
    base = r["baseline"]
    cpu = _median_cpu(base["runs"])
    label = f"baseline sha256sum ({r['files']:,} files)"
    value = f"{base['median_seconds']:.2f} s (median of {len(base['runs'])})"
    rows.append((name, label, value, _cpu(cpu), ""))
    return rows


def _query_rows(r: dict[str, Any]) -> list[Row]:
    name = f"runs --model --prompt-hash ({r['runs']:,})"
    lib, cli = r["library"], r["cli"]
    goal = _goal(lib["median_ms"], GOALS["query_library_ms"], " ms", strict=True)
    rows: list[Row] = [
        (
            name,
            f"Ledger.runs(), median of {lib['queries']}",
            f"{lib['median_ms']:.2f} ms (p90 {lib['p90_ms']:.2f})",
            "",
            goal,
        ),
        (
            name,
            "  rows returned per query",
            f"{lib['rows_min']}..{lib['rows_max']} (median {lib['rows_median']:g})",
            "",
            "",
        ),
        (
            name,
            f"agentledger runs, median of {cli['commands']}",
            f"{cli['median_ms']:.0f} ms",
            "",
            "",
        ),
        (name, "  agentledger --version (startup)", f"{cli['startup_median_ms']:.0f} ms", "", ""),
        *_help_row(name, cli),
    ]
    return rows


def _reindex_rows(r: dict[str, Any]) -> list[Row]:
    name = f"reindex {r['runs']:,} runs"
    cli = r["cli"]
    value = f"{cli['seconds']:.1f} s ({cli['runs_per_s']:,.0f} runs/s)"
    same = "yes" if r["same_answers"] and r["count_after"] == r["runs"] else "NO"
    return [
        (name, "agentledger reindex (subprocess)", value, _cpu(cli), ""),
        (name, "  same query answers afterwards", same, "", ""),
    ]


def figures(results: dict[str, Any]) -> list[Row]:
    """The rows of the closing table, in benchmark order."""
    rows: list[Row] = []
    bench = results["benchmarks"]
    makers = {
        "import": _import_rows,
        "verify": _verify_rows,
        "query": _query_rows,
        "reindex": _reindex_rows,
    }
    for key, make in makers.items():
        if key in bench:
            rows.extend(make(bench[key]))
    for name, info in results["datasets"].items():
        if name.startswith("index-") and not info.get("reused"):
            cpu = {
                "user_seconds": info["build_user_s"],
                "system_seconds": info["build_system_s"],
            }
            rows.append(
                (
                    f"build {info['runs']:,}-run index",
                    f"Ledger.seal_batch, {info['workers']} processes",
                    f"{info['built_in_s']:.1f} s ({info['runs_per_s']:,.0f} runs/s)",
                    _cpu(cpu),
                    "",
                )
            )
    return rows


def render_table(results: dict[str, Any]) -> str:
    """The figures as a plain-text table, with the machine they were measured on."""
    machine = results["machine"]
    scale = results["scale"]
    lines = [
        f"agentledger benchmarks, {machine['date']}, scale {scale:g}"
        + ("" if scale == 1 else " (the goals are for scale 1)"),
        f"machine: {machine['nproc']} CPUs ({machine['cpu']}), {machine['memory_gb']} GB RAM, "
        f"Python {machine['python']}, SQLite {machine['sqlite']}, fs {machine['filesystem']}, "
        f"load average at start {machine['loadavg_at_start']}",
        f"agentledger {machine['agentledger']} at {machine['git_commit']}",
    ]
    quiet = results.get("filesystem_at_start")
    if quiet:
        lines.append(
            f"file creation at start: {quiet['probes_us_per_file'][-1]:.0f} us per file"
            + (f" (after waiting {quiet['waited_s']:.0f} s)" if quiet["waited_s"] >= 1 else "")
        )
    cache = results.get("page_cache_at_start")
    if cache:
        before = cache.get("before", {})
        held = f"{before.get('cached_mb', '?')} MB cached, {before.get('memfree_mb', '?')} MB free"
        lines.append(
            f"page cache at start: dropped ({held} before)"
            if cache.get("dropped")
            else f"page cache at start: kept ({cache.get('why', '?')}; {held})"
        )
    lines.append("")
    rows = figures(results)
    widths = [max(len(row[i]) for row in [HEADER, *rows]) for i in range(len(HEADER))]
    for row in [HEADER, tuple("-" * w for w in widths), *rows]:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        lines.append("  ".join(cells).rstrip())
    lines.append("")
    total = f"total {results['total_seconds']:.0f} s"
    if "cleanup_seconds" in results:
        total += f" (+ {results['cleanup_seconds']:.0f} s removing the data)"
    lines.append(f"{total}; details in {results['path']}")
    return "\n".join(lines)


def _help_row(name: str, cli: dict[str, Any]) -> list[Row]:
    """`agentledger --help` against `python -c pass` (results from before it was measured
    have neither)."""
    if "help_median_ms" not in cli:
        return []
    ratio = cli["help_median_ms"] / cli["python_median_ms"]
    goal = "< 3x python: " + ("met" if ratio < 3 else "NOT met")
    shown = f"{cli['help_median_ms']:.0f} ms ({ratio:.1f}x python -c pass)"
    return [(name, "  agentledger --help, median of 10", shown, "", goal)]
