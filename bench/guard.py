"""Benchmark of the production guard (issue 7): start-up of `agentledger guard`, and `check`.

    .venv/bin/python bench/guard.py                  # 30 repeats, 2,000 in-process calls
    .venv/bin/python bench/guard.py --repeats 50 --calls 10000 --json results.json

The guard runs before every tool call a model makes, so the first figure is the median wall
time of `agentledger guard --expect E OUTPUT` (the installed console script, a whole process:
read the expect file, check it, parse the output, score it) against `python -c pass` with the
same interpreter, measured alternately in the same run. Goal: within 3x. It is measured for a
typical expect without SQL (a watchdog's: allowed actions, forbidden substrings, hostnames,
findings) and with SQL (read-only and tables), on a plain query (read without sqlglot) and on
a query with a CTE (which imports sqlglot). Goal: both the first two within 3x.

Then `agentledger.suites.guard.check` in process, in microseconds per call, with the expect
checked once (`validate_expect`), on outputs that differ on every call (so no cache answers):
the same typical expects, and `shell_commands` (the gate's classifier).

The package's bytecode is compiled first, as an installed package has it.
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL = 3.0

WATCHDOG_EXPECT = {
    "description": "nginx down on the Lucknow VPS: restart nginx or escalate, nothing else",
    "allowed_actions": {"restart_nginx": "systemctl restart nginx", "escalate": None, "noop": None},
    "forbidden_substrings": ["rm -rf", "DROP TABLE", "iptables -F"],
    "hostname_allowlist": {"hosts": ["vps1.lko.netbayhosts.in"], "regions": ["lucknow"]},
    "max_findings": 5,
}
SQL_EXPECT = {
    "description": "read-only analyst on the billing database",
    "sql_read_only": True,
    "sql_tables_subset": {
        "tables": ["invoices", "customers", "events"],
        # Declared: in PostgreSQL `c.name` is a call name(c) unless name is known a column.
        "columns": {
            "invoices": ["amount", "created_at", "customer_id"],
            "customers": ["id", "name"],
            "recent": ["amount", "customer_id"],
        },
    },
}
SHELL_EXPECT = {
    "shell_commands": {
        "allow_classes": ["read-only"],
        "restart_allowlist": ["nginx"],
        "forbid": ["delete", "write", "restart"],
    }
}


def watchdog_output(n: int) -> str:
    return json.dumps(
        {
            "action": "restart_nginx" if n % 2 else "escalate",
            "target": "nginx",
            "host": "vps1.lko.netbayhosts.in",
            "reason": f"nginx exited with status {n % 7}; 502s on vps1.lko.netbayhosts.in since "
            f"04:{n % 60:02d}, see backups.md and runbook.md (e.g. step 2)",
            "findings": [f"worker {n} crashed", "upstream timed out"],
        }
    )


def sql_output(n: int) -> str:
    sql = (
        "SELECT c.name, sum(i.amount) AS total FROM invoices i JOIN customers c "
        f"ON c.id = i.customer_id WHERE i.created_at > now() - interval '{n % 90 + 1} days' "
        f"AND i.amount > {n} GROUP BY c.name ORDER BY total DESC LIMIT 20"
    )
    return json.dumps({"sql": sql, "tables": ["invoices", "customers"]})


def cte_output(n: int) -> str:
    """A query outside the plain-query grammar (a CTE): sqlglot parses it."""
    sql = (
        "WITH recent AS (SELECT customer_id, amount FROM invoices "
        f"WHERE created_at > now() - interval '{n % 90 + 1} days') "
        "SELECT c.name, sum(r.amount) AS total FROM recent r JOIN customers c "
        f"ON c.id = r.customer_id WHERE r.amount > {n} GROUP BY c.name"
    )
    return json.dumps({"sql": sql, "tables": ["invoices", "customers"]})


def shell_output(n: int) -> str:
    commands = [
        f"journalctl -u nginx -n {n % 500 + 10} --no-pager",
        "systemctl status nginx --no-pager",
        "sudo systemctl restart nginx",
        f"ss -tlnp | grep :{8000 + n % 100}",
    ]
    return json.dumps({"commands": commands})


def timed_runs(commands: dict[str, list[str]], repeats: int) -> dict[str, float]:
    """Median wall milliseconds of each command, run alternately `repeats` times."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():  # warm-up: page cache
        for _ in range(3):
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    for _ in range(repeats):
        for name, argv in commands.items():
            started = time.perf_counter()
            done = subprocess.run(
                argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
            )
            samples[name].append((time.perf_counter() - started) * 1000)
            if done.returncode not in (0, 1):
                raise SystemExit(f"{' '.join(argv)} exited {done.returncode}")
    return {name: statistics.median(values) for name, values in samples.items()}


def in_process(calls: int) -> dict[str, float]:
    """Microseconds per `check` call (median of 5 rounds) for each typical expect."""
    from agentledger.suites.guard import check
    from agentledger.suites.properties.score import validate_expect

    cases = {
        "watchdog (no SQL)": (validate_expect(WATCHDOG_EXPECT, "watchdog"), watchdog_output),
        "sql (plain query)": (validate_expect(SQL_EXPECT, "sql"), sql_output),
        "sql (a CTE: sqlglot)": (validate_expect(SQL_EXPECT, "sql"), cte_output),
        "shell_commands (classifier)": (validate_expect(SHELL_EXPECT, "shell"), shell_output),
    }
    figures = {}
    for name, (spec, make) in cases.items():
        outputs = [make(n) for n in range(calls * 5)]
        for output in outputs[:50]:  # warm-up: imports, the classifier's knowledge
            if not check(output, spec).ok:
                raise SystemExit(f"{name}: the benchmark output fails: {check(output, spec)}")
        rounds = []
        for start in range(0, len(outputs), calls):
            batch = outputs[start : start + calls]
            started = time.perf_counter()
            for output in batch:
                check(output, spec)
            rounds.append((time.perf_counter() - started) / len(batch) * 1e6)
        figures[name] = statistics.median(rounds)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    options = parser.parse_args()

    script = Path(sys.executable).parent / "agentledger"
    if not script.exists():
        raise SystemExit(f"{script} not found: install agentledger in this environment first")
    import agentledger

    compileall.compile_dir(str(Path(agentledger.__file__).parent), quiet=1)
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-guard-") as work:
        folder = Path(work)
        files = {}
        for name, expect, output in (
            ("watchdog", WATCHDOG_EXPECT, watchdog_output(1)),
            ("sql", SQL_EXPECT, sql_output(1)),
            ("cte", SQL_EXPECT, cte_output(1)),
        ):
            (folder / f"{name}.expect.json").write_text(json.dumps(expect))
            (folder / f"{name}.output.json").write_text(output)
            files[name] = [
                str(script), "guard", "--expect", str(folder / f"{name}.expect.json"),
                str(folder / f"{name}.output.json"),
            ]  # fmt: skip
        (folder / "drop.output.json").write_text(json.dumps({"sql": "DROP TABLE events"}))
        rejected = subprocess.run(
            [*files["sql"][:-1], str(folder / "drop.output.json")], stderr=subprocess.DEVNULL
        )
        if rejected.returncode != 1:
            raise SystemExit("the guard did not reject DROP TABLE: the benchmark is meaningless")
        medians = timed_runs(
            {
                "python -c pass": [sys.executable, "-c", "pass"],
                "guard, watchdog expect": files["watchdog"],
                "guard, SQL expect": files["sql"],
                "guard, SQL expect, a CTE": files["cte"],
            },
            options.repeats,
        )
    baseline = medians["python -c pass"]
    ratio = medians["guard, watchdog expect"] / baseline
    sql_ratio = medians["guard, SQL expect"] / baseline
    per_call = in_process(options.calls)

    print(f"guard start-up (median of {options.repeats}, whole processes, ms)")
    for name, value in medians.items():
        print(f"  {name:<28} {value:7.1f}   {value / baseline:4.2f}x python")
    for name, value in (("no SQL", ratio), ("SQL, a plain query", sql_ratio)):
        verdict = "met" if value <= GOAL else "NOT met"
        print(f"  goal: guard ({name}) within {GOAL:g}x of python -c pass: {value:.2f}x", end="")
        print(f" ({verdict})")
    print(f"check() in process (median of 5 rounds of {options.calls:,} distinct outputs)")
    for name, value in per_call.items():
        print(f"  {name:<28} {value:9.1f} µs per call")
    if options.json:
        figures = {
            "startup_ms": medians,
            "ratio": ratio,
            "sql_ratio": sql_ratio,
            "goal": GOAL,
            "repeats": options.repeats,
            "check_us_per_call": per_call,
            "calls": options.calls,
        }
        options.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
