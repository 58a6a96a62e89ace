"""The one check of a URL reader's words (`curl`, `wget`): used where the gate gives one the
host's network (`runner.shell_gate.reader_checks`) and where the classifier judges one run
over ssh (no sandbox holds it), so that such a line is read-only only when this check passes.

Each option exactly as listed, each value of the kind listed (headers with RFC 7230 names,
no emptied Host, no method override), GET or HEAD only, and URLs of http or https on a port
HTTP servers use (`reader_options.url_problem`). Redirects: curl cannot limit the port a
redirect leads to, so a request that carries words of the agent's (`-H`, `-u`) never follows
one (`-L` with them is refused), and a redirect is followed at most `MAX_REDIRECTS` times,
over http or https only; after a redirect curl sends its own header lines only (Host among
them, which line-protocol daemons such as redis refuse). wget follows redirects by itself:
with `--header` it must be told `--max-redirect=0`."""

from __future__ import annotations

from agentledger.shell.reader_options import (
    NUM,
    STDOUT_ONLY,
    ReaderOptions,
    any_text,
    header,
    matches,
    one_of,
    positionals,
    url_problem,
    write_out,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["CURL_FORCED", "MAX_REDIRECTS", "WGET_FORCED", "check_curl", "check_fetch", "check_wget"]

MAX_REDIRECTS = 5
"""The most redirects a URL reader follows."""
_REDIRECTS = matches(f"[0-{MAX_REDIRECTS}]")
_INT = matches(r"[0-9]{1,9}")

CURL_FORCED = (
    "-q", "--globoff", "--proto", "=http,https", "--proto-redir", "=http,https",
    "--max-redirs", str(MAX_REDIRECTS),
)  # fmt: skip
"""Words put before the agent's: -q (it must come first) skips .curlrc; no URL globbing;
only http and https, redirects included, and few of them."""
WGET_FORCED = ("--no-config", f"--max-redirect={MAX_REDIRECTS}")
"""Words put before the agent's: no wgetrc, few redirects."""

_CURL_OPTIONS = ReaderOptions(
    "-s --silent -S --show-error -f --fail --fail-with-body -L --location -I --head -i "
    "--include -v --verbose -k --insecure -4 -6 --compressed -N --no-buffer --http1.1 "
    "--http2 -g --globoff -q",
    {
        **dict.fromkeys(("-m", "--max-time", "--connect-timeout"), NUM),
        **dict.fromkeys(("--retry", "--max-filesize"), _INT),
        "--max-redirs": _REDIRECTS,
        **dict.fromkeys(("-H", "--header"), header),
        **dict.fromkeys(("-A", "--user-agent", "-u", "--user", "-r", "--range"), any_text),
        **dict.fromkeys(("-w", "--write-out"), write_out),
        **dict.fromkeys(("-X", "--request"), one_of("GET", "HEAD")),
        **dict.fromkeys(("-o", "--output"), STDOUT_ONLY),
    },
)
_WGET_OPTIONS = ReaderOptions(
    "-q --quiet -S --server-response --spider --no-check-certificate -4 -6 -nv --no-verbose",
    {
        **dict.fromkeys(("-O", "--output-document"), STDOUT_ONLY),
        **dict.fromkeys(("-T", "--timeout"), NUM),
        **dict.fromkeys(("-t", "--tries"), _INT),
        "--max-redirect": _REDIRECTS,
        **dict.fromkeys(("--header",), header),
        **dict.fromkeys(("-U", "--user-agent"), any_text),
    },
)
_CURL_OWN_WORDS = ("-H", "--header", "-u", "--user")
"""curl options whose words a redirect would carry to wherever it leads."""


def _fetch(options: ReaderOptions, args: Sequence[str]) -> tuple[list[str], str]:
    seen, _, problem = options.parse(args, stop_at_positional=False)
    if problem:
        return seen, problem
    urls = positionals(args, options)
    if not urls:
        return seen, "a URL is needed"
    for url in urls:
        problem = url_problem(url)
        if problem:
            return seen, problem
    return seen, ""


def check_curl(args: list[str]) -> str:
    """'' when curl may read with `args`, else why not."""
    seen, problem = _fetch(_CURL_OPTIONS, args)
    if problem:
        return problem
    if ("-L" in seen or "--location" in seen) and any(o in seen for o in _CURL_OWN_WORDS):
        return (
            "-L with -H or -u: a redirect could carry those words to any port (curl cannot "
            "limit it); drop -L, or read the URL the redirect names"
        )
    return ""


def check_wget(args: list[str]) -> str:
    """'' when wget may read with `args`, else why not."""
    seen, problem = _fetch(_WGET_OPTIONS, args)
    if problem:
        return problem
    if "--header" in seen and "--max-redirect=0" not in args and not _follows_none(args):
        return "--header: wget follows redirects to any port by default; add --max-redirect=0"
    return ""


def _follows_none(args: Sequence[str]) -> bool:
    return any(
        word == "--max-redirect" and args[index + 1 : index + 2] == ["0"]
        for index, word in enumerate(args)
    )


_CHECKS = {"curl": check_curl, "wget": check_wget}


def check_fetch(name: str, args: list[str]) -> str | None:
    """The check of the URL reader `name` on `args` ('' when it passes); None when `name` is
    no URL reader."""
    check = _CHECKS.get(name)
    return None if check is None else check(args)
