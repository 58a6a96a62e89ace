"""What stands between the viewer and a browser it should not trust.

One ASGI middleware, `ViewerGuard`, in front of every route (static files included):

- **Host**: a loopback bind answers only requests addressed to a loopback name, so that a web
  page on another site cannot reach the viewer through DNS rebinding.
- **Token**: when the viewer has one (always, off loopback), every request carries it: in the
  ``X-Agentledger-Token`` header, as ``Authorization: Bearer``, or in the cookie set when the
  one-time link ``?token=...`` is opened (that request is redirected to the same address
  without the token, so it stays out of the history and of the pages' links).
- **Session and CSRF**: each browser gets a random session cookie; a form carries
  `csrf_token(session)`, an HMAC of it under the server's secret, and a POST without the
  matching value (or from another origin) is refused.
- **Headers**: a strict Content-Security-Policy (scripts, styles and images from the viewer
  only; no inline script or style, no frames, forms post only here), nosniff, no referrer
  sent to another site.

Cookies are HttpOnly and SameSite=Strict: another site can neither read them nor make the
browser send them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "CSRF_FIELD",
    "LOOPBACK_HOSTS",
    "SESSION_COOKIE",
    "TOKEN_COOKIE",
    "TOKEN_HEADER",
    "ViewerGuard",
    "csrf_token",
    "is_loopback",
    "new_token",
    "session_of",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""The names a loopback bind answers to (and the addresses that need no token)."""
TOKEN_HEADER = "x-agentledger-token"  # noqa: S105 (a header name, not a secret)
TOKEN_COOKIE = "agentledger_token"  # noqa: S105 (a cookie name, not a secret)
SESSION_COOKIE = "agentledger_session"
CSRF_FIELD = "csrf"

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    )
)
"""Everything from the viewer itself, nothing inline, nothing from elsewhere."""

_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    # same-origin, not no-referrer: under no-referrer a browser sends "Origin: null" with
    # the viewer's own form posts, and the same-origin check would refuse every label.
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)


def is_loopback(host: str) -> bool:
    """Whether `host` (a bind address or a name) is this machine only."""
    name = host.strip().strip("[]").lower()
    return name in LOOPBACK_HOSTS or name.startswith("127.")


def new_token() -> str:
    """A token for a viewer bound off loopback: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(32)


def csrf_token(secret: bytes, session: str) -> str:
    """The CSRF value the forms of `session` carry: an HMAC of it under the server's secret."""
    return hmac.new(secret, f"csrf:{session}".encode(), hashlib.sha256).hexdigest()


def session_of(scope: Scope) -> str:
    """The session id `ViewerGuard` gave this request (from its cookie, or new)."""
    return str(scope["state"]["session"])


def _cookies(headers: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    for name, value in headers:
        if name == b"cookie":
            try:
                jar.load(value.decode("latin-1"))
            except CookieError:
                continue
    return {key: morsel.value for key, morsel in jar.items()}


def _header(headers: Sequence[tuple[bytes, bytes]], wanted: bytes) -> str | None:
    for name, value in headers:
        if name == wanted:
            return value.decode("latin-1")
    return None


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def _cookie(name: str, value: str) -> bytes:
    return f"{name}={value}; Path=/; HttpOnly; SameSite=Strict".encode()


class ViewerGuard:
    """The host check, the token, the session cookie and the security headers (see the
    module docstring), around the whole app."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        allowed_hosts: Sequence[str] | None,
    ) -> None:
        self.app = app
        self.token = token
        self.allowed_hosts = (
            None if allowed_hosts is None else {host.lower() for host in allowed_hosts}
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers") or ())
        if not self._host_allowed(_header(headers, b"host")):
            await self._refuse(send, 421, "This viewer does not answer to that host name.")
            return
        if scope["method"] not in ("GET", "HEAD") and not self._same_origin(headers):
            await self._refuse(send, 403, "A form of another site cannot post to this viewer.")
            return
        cookies = _cookies(headers)
        set_cookies: list[bytes] = []
        if self.token is not None:
            query = scope.get("query_string", b"").decode("latin-1")
            pairs = parse_qsl(query, keep_blank_values=True)
            offered = [value for key, value in pairs if key == "token"]
            if offered and scope["method"] in ("GET", "HEAD"):
                if not _same(offered[-1], self.token):
                    await self._refuse(send, 401, "The token in the link is not this viewer's.")
                    return
                rest = urlencode([(key, value) for key, value in pairs if key != "token"])
                path = quote(scope.get("path", "/"), safe="/:@!$&'()*+,;=-._~")
                # One leading slash: "//evil.example/x" would send the browser to another host.
                path = "/" + path.lstrip("/")
                location = path + (f"?{rest}" if rest else "")
                await self._redirect(send, location, [_cookie(TOKEN_COOKIE, self.token)])
                return
            bearer = _header(headers, b"authorization") or ""
            carried = (
                _header(headers, TOKEN_HEADER.encode())
                or (bearer[7:] if bearer.lower().startswith("bearer ") else None)
                or cookies.get(TOKEN_COOKIE)
            )
            if not _same(carried, self.token):
                await self._refuse(
                    send,
                    401,
                    "This viewer needs its token: open the link `agentledger serve` printed, "
                    "or send the X-Agentledger-Token header.",
                )
                return
        session = cookies.get(SESSION_COOKIE)
        if not session or len(session) > 100:
            session = secrets.token_urlsafe(24)
            set_cookies.append(_cookie(SESSION_COOKIE, session))
        scope.setdefault("state", {})["session"] = session

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [(b"set-cookie", cookie) for cookie in set_cookies]
                message["headers"] = [*message.get("headers", ()), *_HEADERS, *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    @staticmethod
    def _same_origin(headers: Sequence[tuple[bytes, bytes]]) -> bool:
        """A browser's POST names its page's origin: it must be this viewer's own."""
        origin = _header(headers, b"origin")
        if origin is None:
            return True  # not a browser's cross-site form (those always send Origin)
        host = (_header(headers, b"host") or "").lower()
        return urlsplit(origin).netloc.lower() == host

    def _host_allowed(self, host: str | None) -> bool:
        if self.allowed_hosts is None:
            return True
        if not host:
            return False
        name = host.lower()
        if name.startswith("["):  # [::1]:8765
            name = name[1 : name.find("]")] if "]" in name else name
        elif name.count(":") == 1:
            name = name.partition(":")[0]
        return name in self.allowed_hosts

    async def _refuse(self, send: Send, status: int, why: str) -> None:
        body = f"{status}: {why}\n".encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    *_HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _redirect(self, send: Send, location: str, cookies: list[bytes]) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("latin-1", "replace")),
                    (b"content-length", b"0"),
                    *_HEADERS,
                    *[(b"set-cookie", cookie) for cookie in cookies],
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})
