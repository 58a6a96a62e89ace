"""The screenshots of docs/viewer.md: each page of `agentledger serve` on the demo ledger, in the
system's Chromium (Playwright drives it; no browser is downloaded).

    .venv/bin/python docs/viewer_screenshots.py            # writes docs/images/viewer/*.png
    .venv/bin/python docs/viewer_screenshots.py --scale    # only the shots at scale

The demo ledger is built in a temporary directory by `agentledger demo`, the viewer serves it on
a free loopback port, and each page is shot at 1280 pixels wide as a person first sees it (the
run page scrolled to the first highlighted firing). The shots at scale are of a ledger of 1,419
runs over 290 scenarios: the sample runs copied under 29 names per scenario, half of them again
a month later, imported and judged.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "images" / "viewer"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def _agentledger(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentledger", *args], capture_output=True, text=True, check=True
    )


def _wait(port: int, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("agentledger serve did not start") from None
            time.sleep(0.1)


def _scale_ledger(work: Path) -> Path:
    """A ledger of 1,419 runs over 290 scenarios, built from copies of the sample runs."""
    import json
    import shutil

    samples = ROOT / "src" / "agentledger" / "data" / "sample_runs"
    runs = work / "scale-runs"
    for copy in range(29):
        for run in sorted(p for p in samples.iterdir() if p.is_dir()):
            parts = run.name.split("_")  # use_case_a_gemini_20260303
            scenario, model, day = "_".join(parts[:3]), parts[3], parts[4]
            days = [day] + ([day[:4] + f"{int(day[4:6]) + 1:02d}" + day[6:]] if copy % 2 else [])
            for when in days:
                name = f"{scenario}{copy:02d}_{model}_{when}"
                shutil.copytree(run, runs / name)
                meta = json.loads((runs / name / "metadata.json").read_text())
                (runs / name / "metadata.json").write_text(json.dumps({**meta, "run_id": name}))
                for old in (runs / name).glob(f"*_{day}.*"):
                    old.rename(old.with_name(old.name.replace(day, when)))
    ledger = work / "scale"
    _agentledger("import", "--ledger", str(ledger), "--agent-name", "ghost", str(runs))
    _agentledger("judge", "--ledger", str(ledger))
    return ledger


def _serve(ledger: Path) -> tuple[subprocess.Popen[str], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = subprocess.Popen(
        [sys.executable, "-m", "agentledger", "serve", "--ledger", str(ledger),
         "--port", str(port)],
        stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    _wait(port, server)
    return server, f"http://127.0.0.1:{port}"


SCALE_SHOTS = (
    ("/", "runs-scale.png", None),
    ("/review", "review-scale.png", None),
    ("/findings", "findings-scale.png", "#criteria"),
)
"""(address, file, element scrolled to) of each shot at scale."""


def shoot_scale(driver: Any, work: Path) -> None:
    """The runs, the review queue and the findings of 1,419 runs over 290 scenarios: pages of
    runs, tables folded past 25 rows, the heatmap and long tables scrolling in their boxes."""
    server, base = _serve(_scale_ledger(work))
    try:
        context = driver.chromium.launch_persistent_context(
            str(work / "profile-scale"),
            executable_path=CHROMIUM,
            args=ARGS,
            headless=True,
            viewport={"width": 1280, "height": 860},
        )
        page = context.new_page()
        for path, name, scroll_to in SCALE_SHOTS:
            shoot(page, f"{base}{path}", name, scroll_to=scroll_to)
            height = page.evaluate("document.documentElement.scrollHeight")
            print(f"{path} of 1,419 runs over 290 scenarios is {height} px high")
        context.close()
    finally:
        server.terminate()
        server.wait(10)


def shoot(page: Any, url: str, name: str, *, scroll_to: str | None = None) -> None:
    page.goto(url, wait_until="load")
    if scroll_to is not None:
        page.locator(scroll_to).first.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.evaluate("window.scrollBy(0, -80)")
    page.screenshot(path=str(OUT / name))
    print(f"wrote {OUT.relative_to(ROOT) / name}")


def main() -> int:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    if "--scale" in sys.argv[1:]:
        with (
            tempfile.TemporaryDirectory(prefix="agentledger-shots-") as scratch,
            sync_playwright() as driver,
        ):
            shoot_scale(driver, Path(scratch))
        return 0
    with tempfile.TemporaryDirectory(prefix="agentledger-shots-") as work:
        demo = Path(work) / "agentledger-demo"
        _agentledger("demo", str(demo))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        server = subprocess.Popen(
            [sys.executable, "-m", "agentledger", "serve", "--ledger", str(demo),
             "--port", str(port)],
            stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            _wait(port, server)
            with sync_playwright() as driver:
                context = driver.chromium.launch_persistent_context(
                    str(Path(work) / "profile"),
                    executable_path=CHROMIUM,
                    args=ARGS,
                    headless=True,
                    viewport={"width": 1280, "height": 860},
                )
                page = context.new_page()
                shoot(page, f"{base}/runs", "runs.png")
                shoot(page, f"{base}/runs?model=gemini-2.5-flash&fired=C2", "runs-filtered.png")
                run_id = page.locator("#runs tbody td.id a").first.inner_text()
                other = "use_case_m_haiku_20260312"
                shoot(page, f"{base}/runs/{run_id}", "run.png")
                shoot(page, f"{base}/runs/{run_id}", "run-evidence.png", scroll_to="#shell .hit")
                shoot(page, f"{base}/runs/{run_id}", "run-label.png", scroll_to="#label-form")
                shoot(page, f"{base}/compare?a={run_id}&b={other}", "compare.png")
                shoot(page, f"{base}/review", "review.png")
                shoot(page, f"{base}/findings", "findings.png")
                shoot(page, f"{base}/findings", "findings-criteria.png", scroll_to="#criteria")
                shoot(page, f"{base}/findings", "findings-sentinels.png", scroll_to="#sentinels")
                context.close()
        finally:
            server.terminate()
            server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
