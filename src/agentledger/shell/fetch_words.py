"""The one check of a URL reader's words (`curl`, `wget`): used where the gate gives one the
host's network (`runner.shell_gate.reader_checks`) and where the classifier judges one run
over ssh (no sandbox holds it), so that such a line is read-only only when this check passes.

Each option exactly as listed, each value of the kind listed (headers with RFC 7230 names,
no emptied Host, no method override), GET or HEAD only, and URLs of http or https on a port
HTTP servers use (`reader_options.url_problem`). Redirects are never followed: a redirect's
Location may name any port (a redis, a database, a mail server on the host's loopback), and
neither curl nor wget can limit the port it leads to (curl's --proto-redir limits only the
scheme), so a reader with the host's network would send its own request lines there. So
curl's `-L` / `--location` is refused and wget is told `--max-redirect=0` before the agent's
words (an agent's `--max-redirect` other than 0 is refused). The redirect is shown instead
(`curl -sI URL`: its Location), and reading the URL it names passes this same check."""

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

__all__ = ["CURL_FORCED", "WGET_FORCED", "check_curl", "check_fetch", "check_wget"]

_REDIRECTS = matches("[0-5]")  # curl's --max-redirs: no effect, as nothing is followed
_INT = matches(r"[0-9]{1,9}")

CURL_FORCED = (
    "-q", "--globoff", "--proto", "=http,https", "--proto-redir", "=http,https",
    "--max-redirs", "0",
)  # fmt: skip
"""Words put before the agent's: -q (it must come first) skips .curlrc; no URL globbing;
only http and https; no redirect followed (-L is refused besides)."""
WGET_FORCED = ("--no-config", "--max-redirect=0")
"""Words put before the agent's: no wgetrc, no redirect followed."""

_CURL_OPTIONS = ReaderOptions(
    "-s --silent -S --show-error -f --fail --fail-with-body -I --head -i "
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
        "--max-redirect": matches("0"),
        **dict.fromkeys(("--header",), header),
        **dict.fromkeys(("-U", "--user-agent"), any_text),
    },
)


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


_FOLLOW = frozenset(("-L", "--location"))


def check_curl(args: list[str]) -> str:
    """'' when curl may read with `args`, else why not."""
    following = _follows(args)
    if following:
        return (
            f"{following}: a redirect may lead to any port (a local daemon's), which curl "
            "cannot limit; read without it (curl -sI shows the Location) and then the URL "
            "the redirect names"
        )
    _, problem = _fetch(_CURL_OPTIONS, args)
    return problem


def _follows(args: Sequence[str]) -> str:
    """The -L of `args` (alone or among combined short flags: `-sL`), or ''."""
    for word in args:
        if word == "--":
            break
        if word in _FOLLOW:
            return word
        if word[:1] == "-" and word[1:2] != "-" and "L" in word[1:]:
            letters = word[1:]
            # -sL, -fsSL: flags without a value, then L; a valued flag (-H, -o, -w...) ends
            # the cluster, and its value may hold an L.
            for letter in letters:
                if letter == "L":
                    return f"-L (in {word})"
                if f"-{letter}" in _CURL_OPTIONS.valued:
                    break
    return ""


def check_wget(args: list[str]) -> str:
    """'' when wget may read with `args`, else why not."""
    _, problem = _fetch(_WGET_OPTIONS, args)
    if problem and "--max-redirect" in problem:
        return (
            f"{problem}: a redirect may lead to any port (a local daemon's), which wget "
            "cannot limit; it follows none (--max-redirect=0)"
        )
    return problem


_CHECKS = {"curl": check_curl, "wget": check_wget}


def check_fetch(name: str, args: list[str]) -> str | None:
    """The check of the URL reader `name` on `args` ('' when it passes); None when `name` is
    no URL reader."""
    check = _CHECKS.get(name)
    return None if check is None else check(args)
