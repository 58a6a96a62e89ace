"""For the viewer's tests in Chromium: the driver, the browser, a page that records everything
hostile text could make it do, and the checks of what it recorded.

A `WatchedPage` listens for dialogs (alert, confirm, prompt), console messages, requests to
any origin but the viewer's (aborted before they leave), Content-Security-Policy violations
and page errors; `assert_clean` fails naming what happened and on which page.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from browser_support import CHROMIUM, CHROMIUM_ARGS, browser_missing

# Runs before any script of the page: CSP violations are events, not console lines only.
WATCH_SCRIPT = """
(() => {
  window.__violations = [];
  document.addEventListener("securitypolicyviolation", (event) => {
    window.__violations.push(
      event.violatedDirective + " " + (event.blockedURI || "") + " " + (event.sample || "")
    );
  }, true);
})();
"""

# What the page's own markup may hold; anything else came from agent text.
DOM_CHECK = """
(origin) => {
  const found = [];
  for (const element of document.querySelectorAll("*")) {
    const tag = element.tagName.toLowerCase();
    for (const attribute of element.getAttributeNames()) {
      if (attribute.startsWith("on")) found.push(`${tag}[${attribute}]`);
      if (attribute === "style") found.push(`${tag}[style]`);
      if (attribute.startsWith("hx-")) found.push(`${tag}[${attribute}]`);
      if (attribute === "srcdoc" || attribute === "formaction") found.push(`${tag}[${attribute}]`);
    }
    if (element.id && element.id.startsWith("xss-")) found.push(`#${element.id}`);
    if (["iframe", "object", "embed", "base", "style", "math", "img", "video", "audio",
         "frame", "frameset", "applet", "portal"].includes(tag)) found.push(tag);
    if (tag === "svg" && !element.closest("figure.chart")) found.push("svg outside a chart");
    if (tag === "meta" && element.getAttribute("http-equiv")) found.push("meta http-equiv");
    if (tag === "script") {
      const src = element.getAttribute("src") || "";
      if (!src.startsWith("/static/")) found.push(`script ${src || "inline"}`);
    }
    if (tag === "link") {
      const href = element.getAttribute("href") || "";
      if (!href.startsWith("/static/")) found.push(`link ${href}`);
    }
    if (tag === "a" && element.hasAttribute("href")) {
      const url = new URL(element.href, document.baseURI);
      if (url.origin !== origin) found.push(`a href=${element.getAttribute("href")}`);
    }
    if (tag === "form") {
      const action = new URL(element.action, document.baseURI);
      if (action.origin !== origin) found.push(`form action=${element.getAttribute("action")}`);
    }
  }
  if (document.baseURI.split("#")[0] !== location.href.split("#")[0]) found.push("base URI moved");
  return found;
}
"""


@dataclass
class WatchedPage:
    """A Chromium page of the viewer and everything it was seen to do."""

    page: Any
    origin: str
    dialogs: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def visit(self, path: str) -> Any:
        """Open `path` of the viewer; the response."""
        response = self.page.goto(self.origin + path, wait_until="load")
        assert response is not None
        return response

    def incidents(self, *, markup_check: bool = True) -> list[str]:
        """Everything seen so far that only executed agent text could cause. `markup_check`
        False: a document the browser made itself (its viewer of a plain-text file)."""
        from playwright.sync_api import Error

        try:
            violations = self.page.evaluate("window.__violations || []")
            markup = self.page.evaluate(DOM_CHECK, self.origin) if markup_check else []
        except Error as exc:  # only something the page ran moves it on by itself
            violations, markup = [], [f"the page could not be inspected ({exc.message[:80]})"]
        said = [text for text in self.console if "XSS" in text or "Content Security" in text]
        return [
            *(f"dialog: {text}" for text in self.dialogs),
            *(f"request to another origin: {url}" for url in self.foreign),
            *(f"CSP violation: {text}" for text in violations),
            *(f"console: {text}" for text in said),
            *(f"page error: {text}" for text in self.errors),
            *(f"markup the viewer never makes: {item}" for item in markup),
        ]

    def assert_clean(self, where: str, *, markup_check: bool = True) -> None:
        found = self.incidents(markup_check=markup_check)
        assert not found, f"{where}: " + "; ".join(found)


def _watch(page: Any, origin: str) -> WatchedPage:
    watched = WatchedPage(page, origin)

    def on_dialog(dialog: Any) -> None:
        watched.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def on_route(route: Any) -> None:
        url = route.request.url
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" == origin or parts.scheme in ("data", "blob"):
            route.continue_()
        else:
            watched.foreign.append(url)
            route.abort()

    page.on("dialog", on_dialog)
    page.on("console", lambda message: watched.console.append(message.text))
    page.on("pageerror", lambda error: watched.errors.append(str(error)))
    page.route("**/*", on_route)
    page.add_init_script(WATCH_SCRIPT)
    return watched


@contextmanager
def playwright_driver() -> Iterator[Any]:
    """Playwright's driver (skips the test when the browser cannot be had here)."""
    missing = browser_missing()
    if missing is not None:
        if os.environ.get("AGENTLEDGER_REQUIRE_BROWSER") == "1":  # CI: a skip would hide it
            pytest.fail(f"the browser tests cannot run: {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        yield driver


@contextmanager
def chromium(driver: Any, profile: Path) -> Iterator[Any]:
    """Chromium with a fresh profile in `profile` (the system's build, never a download)."""
    context = driver.chromium.launch_persistent_context(
        str(profile),
        executable_path=str(CHROMIUM),
        args=CHROMIUM_ARGS,
        headless=True,
        viewport={"width": 1400, "height": 900},
    )
    context.set_default_timeout(15_000)
    try:
        yield context
    finally:
        context.close()


def watched_page(context: Any, origin: str) -> WatchedPage:
    """A new page of `context`, watched (see WatchedPage)."""
    return _watch(context.new_page(), origin)
