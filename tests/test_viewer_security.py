"""What the viewer refuses: a request without its token, a host name it does not answer to, a
form without its CSRF token or from another site; and the headers on every response."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentledger import Ledger
from agentledger.cli import main
from agentledger.viewer.security import CONTENT_SECURITY_POLICY, csrf_token, is_loopback
from conftest import WriteRun
from viewer_support import csrf_of, viewer_client

TOKEN = "s3cret-token-for-the-tests"


@pytest.fixture
def run_id(write_run: WriteRun) -> str:
    return write_run()


def test_every_response_carries_a_strict_content_security_policy(
    ledger: Ledger, run_id: str
) -> None:
    client = viewer_client(ledger)
    for url in ("/runs", f"/runs/{run_id}", "/static/viewer.js", "/runs?bogus=1", "/nowhere"):
        headers = client.get(url).headers
        policy = headers["content-security-policy"]
        assert policy == CONTENT_SECURITY_POLICY, url
        assert "default-src 'none'" in policy and "script-src 'self'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert "frame-ancestors 'none'" in policy and "form-action 'self'" in policy
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "same-origin"
        assert headers["x-frame-options"] == "DENY"


def test_an_unknown_address_is_a_404_page(ledger: Ledger) -> None:
    response = viewer_client(ledger).get("/nowhere")
    assert response.status_code == 404 and "Not found" in response.text


# -- the token ---------------------------------------------------------------------------------


def test_with_a_token_a_request_without_it_is_refused(ledger: Ledger, run_id: str) -> None:
    client = viewer_client(ledger, token=TOKEN, allowed_hosts=None, base_url="http://10.1.2.3")
    for url in ("/runs", f"/runs/{run_id}", "/static/viewer.css", "/review", "/nowhere"):
        response = client.get(url)
        assert response.status_code == 401, url
        assert run_id not in response.text
        assert "needs its token" in response.text
    wrong = client.get("/runs", headers={"X-Agentledger-Token": TOKEN + "x"})
    assert wrong.status_code == 401
    assert client.get("/runs", headers={"Cookie": "agentledger_token=guess"}).status_code == 401
    assert client.post(f"/runs/{run_id}/label", data={"verdict": "safe"}).status_code == 401
    assert not (ledger.root / "labels").exists()


def test_the_token_is_accepted_in_a_header_as_a_bearer_or_from_the_one_time_link(
    ledger: Ledger, run_id: str
) -> None:
    client = viewer_client(ledger, token=TOKEN, allowed_hosts=None, base_url="http://10.1.2.3")
    assert client.get("/runs", headers={"X-Agentledger-Token": TOKEN}).status_code == 200
    bearer = client.get("/runs", headers={"Authorization": f"Bearer {TOKEN}"})
    assert bearer.status_code == 200
    link = client.get(f"/runs/{run_id}?token={TOKEN}")
    assert link.status_code == 303
    assert link.headers["location"] == f"/runs/{run_id}"  # the token leaves the address
    cookie = link.headers["set-cookie"]
    assert f"agentledger_token={TOKEN}" in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    # The client now holds the cookie: every page and asset opens with it.
    assert client.get(f"/runs/{run_id}").status_code == 200
    assert client.get("/static/viewer.js").status_code == 200
    kept = client.get(f"/runs?model=x&token={TOKEN}&kind=agent")
    assert kept.headers["location"] == "/runs?model=x&kind=agent"


def test_a_wrong_token_in_the_link_is_refused(ledger: Ledger) -> None:
    client = viewer_client(ledger, token=TOKEN, allowed_hosts=None, base_url="http://10.1.2.3")
    response = client.get("/runs?token=wrong")
    assert response.status_code == 401 and "set-cookie" not in response.headers


# -- the host ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "localhost", "LOCALHOST:1"]
)
def test_a_loopback_viewer_answers_loopback_names(ledger: Ledger, host: str) -> None:
    response = viewer_client(ledger).get("/runs", headers={"Host": host})
    assert response.status_code == 200


@pytest.mark.parametrize("host", ["evil.example:8765", "127.0.0.1.evil.example", "", "10.0.0.1"])
def test_a_loopback_viewer_refuses_other_host_names(ledger: Ledger, host: str) -> None:
    """A page on another site reaching the viewer through DNS rebinding sends its own name."""
    response = viewer_client(ledger).get("/runs", headers={"Host": host})
    assert response.status_code == 421


def test_loopback_addresses() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "10.0.0.1", "::", "example.com"))


# -- CSRF --------------------------------------------------------------------------------------


def test_a_form_without_its_csrf_token_is_refused_and_writes_nothing(
    ledger: Ledger, run_id: str
) -> None:
    client = viewer_client(ledger)
    page = client.get(f"/runs/{run_id}").text
    token = csrf_of(page)
    form = {"verdict": "unsafe", "by": "alice"}
    missing = client.post(f"/runs/{run_id}/label", data=form)
    assert missing.status_code == 403 and "CSRF" in missing.text
    forged = client.post(f"/runs/{run_id}/label", data={**form, "csrf": "0" * 64})
    assert forged.status_code == 403
    odd = client.post(f"/runs/{run_id}/label", data={**form, "csrf": "é" * 64})
    assert odd.status_code == 403
    # Another browser (another session) cannot reuse this one's token.
    other = viewer_client(ledger)
    assert other.post(f"/runs/{run_id}/label", data={**form, "csrf": token}).status_code == 403
    assert not (ledger.root / "labels").exists()
    accepted = client.post(f"/runs/{run_id}/label", data={**form, "csrf": token})
    assert accepted.status_code == 303


def test_a_post_from_another_origin_is_refused(ledger: Ledger, run_id: str) -> None:
    client = viewer_client(ledger)
    token = csrf_of(client.get(f"/runs/{run_id}").text)
    response = client.post(
        f"/runs/{run_id}/label",
        data={"verdict": "unsafe", "by": "alice", "csrf": token},
        headers={"Origin": "http://evil.example"},
    )
    assert response.status_code == 403
    assert not (ledger.root / "labels").exists()


def test_a_post_from_the_viewers_own_page_is_accepted(ledger: Ledger, run_id: str) -> None:
    """A browser names the viewer's own origin on its forms (the Referrer-Policy is
    same-origin: under no-referrer it would send "Origin: null", refused as foreign)."""
    client = viewer_client(ledger)
    token = csrf_of(client.get(f"/runs/{run_id}").text)
    fields = {"verdict": "unsafe", "by": "alice", "csrf": token}
    null = client.post(f"/runs/{run_id}/label", data=fields, headers={"Origin": "null"})
    assert null.status_code == 403
    own = client.post(
        f"/runs/{run_id}/label", data=fields, headers={"Origin": "http://127.0.0.1:8765"}
    )
    assert own.status_code == 303


def test_the_csrf_token_is_bound_to_the_session_and_the_secret() -> None:
    assert csrf_token(b"a" * 32, "one") != csrf_token(b"a" * 32, "two")
    assert csrf_token(b"a" * 32, "one") != csrf_token(b"b" * 32, "one")
    assert csrf_token(b"a" * 32, "one") == csrf_token(b"a" * 32, "one")


def test_session_cookies_are_http_only_and_same_site(ledger: Ledger) -> None:
    response = viewer_client(ledger).get("/runs")
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("agentledger_session=")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie


# -- serve -------------------------------------------------------------------------------------


def test_serve_refuses_a_short_token_and_a_missing_ledger(tmp_path: Path) -> None:
    runner = CliRunner()
    short = runner.invoke(main, ["serve", "--ledger", str(tmp_path), "--token", "abc"])
    assert short.exit_code == 2 and "16 to 256" in short.output
    odd = runner.invoke(
        main, ["serve", "--ledger", str(tmp_path), "--token", "sixteen;chars=ok&no"]
    )
    assert odd.exit_code == 2 and "--token" in odd.output
    missing = runner.invoke(main, ["serve", "--ledger", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "none" in missing.output


def test_serve_off_loopback_generates_a_token_and_prints_it_once(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: dict[str, object] = {}

    def run(app: object, sock: socket.socket, host: str, port: int) -> None:
        started.update(app=app, host=host, port=port, bound=sock.getsockname())
        sock.close()

    monkeypatch.setattr("agentledger.cli.serve._run", run)
    result = CliRunner().invoke(
        main, ["serve", "--ledger", str(ledger.root), "--host", "0.0.0.0", "--port", "0"]
    )
    assert result.exit_code == 0, result.output
    port = started["port"]
    assert started["host"] == "0.0.0.0" and started["bound"] == ("0.0.0.0", port) and port != 0
    guard = started["app"]
    token = getattr(guard, "token", None)
    assert isinstance(token, str) and len(token) >= 32
    assert result.output.count(token) == 1
    assert f"http://0.0.0.0:{port}/?token={token}" in result.output
    assert getattr(guard, "allowed_hosts", "") is None  # the token guards it, not the name


def test_serve_on_loopback_needs_no_token(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    started: dict[str, object] = {}
    monkeypatch.setattr("agentledger.cli.serve._run", _started(started))
    result = CliRunner().invoke(main, ["serve", "--ledger", str(ledger.root), "--port", "0"])
    assert result.exit_code == 0, result.output
    assert f"http://127.0.0.1:{started['port']}/" in result.output
    assert "token" not in result.output
    assert getattr(started["app"], "token", "") is None


def _started(started: dict[str, object]) -> object:
    def run(app: object, sock: socket.socket, host: str, port: int) -> None:
        started.update(app=app, port=port)
        sock.close()

    return run


def test_serve_on_a_busy_port_names_it_and_suggests_another(ledger: Ledger) -> None:
    """A port another program listens on is bad input (exit 2), said in one line naming the
    port and --port, not a server's traceback or an integrity failure's exit 3."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(
            main, ["serve", "--ledger", str(ledger.root), "--port", str(port)]
        )
    assert result.exit_code == 2, result.output
    assert f"port {port} on 127.0.0.1 is in use" in result.output
    assert "--port" in result.output and "Traceback" not in result.output


def test_serve_says_how_to_install_what_it_lacks(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agentledger.cli.serve._missing", lambda: ["starlette"])
    result = CliRunner().invoke(main, ["serve", "--ledger", str(ledger.root)])
    assert result.exit_code == 2
    assert "pip install 'agentledger[serve]'" in result.output


@pytest.mark.parametrize("path", ["//evil.example/x", "///evil.example/x", "/\\evil.example"])
def test_the_one_time_link_never_redirects_to_another_host(ledger: Ledger, path: str) -> None:
    client = viewer_client(ledger, token=TOKEN, allowed_hosts=None, base_url="http://10.1.2.3")
    link = client.get(f"http://10.1.2.3{path}?token={TOKEN}")
    location = link.headers["location"]
    assert link.status_code == 303 and location.startswith("/") and not location.startswith("//")


def _serve(ledger: Ledger, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[str, object]:
    started: dict[str, object] = {}
    monkeypatch.setattr("agentledger.cli.serve._run", _started(started))
    result = CliRunner().invoke(main, ["serve", "--ledger", str(ledger.root), "--port", "0", *args])
    assert result.exit_code == 0, result.output
    return result.output, getattr(started["app"], "token", None)


def test_a_token_on_the_command_line_is_warned_about(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    output, token = _serve(ledger, monkeypatch, "--token", TOKEN)
    assert token == TOKEN and "visible to every user" in output and "ps" in output


def test_a_token_from_the_environment_or_a_file_is_not_on_the_command_line(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGENTLEDGER_VIEWER_TOKEN", TOKEN)
    output, token = _serve(ledger, monkeypatch)
    assert token == TOKEN and "visible" not in output
    monkeypatch.delenv("AGENTLEDGER_VIEWER_TOKEN")
    (tmp_path / "token").write_text(TOKEN + "\n")
    output, token = _serve(ledger, monkeypatch, "--token-file", str(tmp_path / "token"))
    assert token == TOKEN and "visible" not in output
