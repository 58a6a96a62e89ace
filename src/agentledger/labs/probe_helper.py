"""The probe checks run inside a lab host: stdlib only, passed to the host's python3 with -c.

Usage: python3 -c SOURCE KIND TIMEOUT ARGS...; prints one line of detail; exit 0 on pass, 124
when a TCP connection timed out (as `timeout` would). Kept free of agentledger imports: the lab
runs it with the machine's python3, perhaps as nobody, or its agent runs `main` in a child it
forked (then nothing is imported that the check does not need).
"""

import socket
import struct
import sys
import time
from collections.abc import Callable


def _tcp(timeout: float, target: str) -> tuple[bool, str]:
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True, f"connected to {target}"
    except TimeoutError:
        raise
    except OSError as exc:
        return False, f"{target}: {exc.strerror or exc}"


def _fetch(timeout: float, url: str) -> tuple[int, int, float]:
    """GET `url` (http:// only) as curl without -L would: the first response's status, the
    body's size, the seconds taken. HTTP/1.0, so the body is never chunked and ends when the
    server closes the connection. Neither urllib nor http.client: importing them costs more CPU
    than the check, which the lab's agent runs in a child it forks for each probe."""
    started = time.monotonic()
    if not url.lower().startswith("http://"):
        return _fetch_other(timeout, url, started)
    address, port, authority, target = _split_url(url)
    with socket.create_connection((address, port), timeout) as conn:
        conn.sendall(
            f"GET {target} HTTP/1.0\r\nHost: {authority}\r\n"
            "User-Agent: agentledger-lab-probe\r\nAccept: */*\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = _receive(conn, started, timeout)
            if not chunk or len(head) > 65536:
                raise ValueError("the server sent no complete HTTP response")
            head += chunk
        head, _, rest = head.partition(b"\r\n\r\n")
        size = len(rest)
        while chunk := _receive(conn, started, timeout):
            size += len(chunk)
    status, length = _status(head)
    if length is not None and size < length:
        raise ValueError(f"transfer closed with {length - size} bytes remaining")
    return status, size, time.monotonic() - started


def _fetch_other(timeout: float, url: str, started: float) -> tuple[int, int, float]:
    """`_fetch` for another scheme (https://, where curl is missing): urllib's, redirects
    followed."""
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as response:
            size = 0
            while chunk := response.read(65536):
                if time.monotonic() - started > timeout:
                    raise TimeoutError("timed out")
                size += len(chunk)
            return response.status, size, time.monotonic() - started
    except urllib.error.HTTPError as exc:
        return exc.code, 0, time.monotonic() - started


def _split_url(url: str) -> tuple[str, int, str, str]:
    """(address, port, authority, target) of an http:// URL."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() != "http":
        raise ValueError(f"not an http:// URL: {url}")
    cut = min([i for i in (rest.find(c) for c in "/?#") if i >= 0] or [len(rest)])
    authority, target = rest[:cut], rest[cut:].partition("#")[0]
    address, port = authority, "80"
    if authority.startswith("[") and "]" in authority:  # [IPv6]:port
        address, _, after = authority[1:].partition("]")
        port = after[1:] if after.startswith(":") else "80"
    elif ":" in authority:
        address, _, port = authority.partition(":")
    if not port.isdigit():
        raise ValueError(f"bad port in {url}")
    return address, int(port), authority, target if target.startswith("/") else "/" + target


def _receive(conn: socket.socket, started: float, timeout: float) -> bytes:
    left = timeout - (time.monotonic() - started)
    if left <= 0:
        raise TimeoutError("timed out")
    conn.settimeout(left)
    return conn.recv(65536)


def _status(head: bytes) -> tuple[int, int | None]:
    """The status code and Content-Length (None when absent) of a response's head."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(None, 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP response: {lines[0][:80]!r}")
    length = None
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            length = int(value.strip())
    return int(parts[1]), length


def _http(timeout: float, url: str, status: str) -> tuple[bool, str]:
    try:
        code, size, _ = _fetch(timeout, url)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"{url}: {reason}"
    return code == int(status), f"{url}: HTTP {code}, {size} bytes"


def _throughput(timeout: float, url: str, min_kbps: str) -> tuple[bool, str]:
    try:
        code, size, took = _fetch(timeout, url)
    except (OSError, ValueError) as exc:
        return False, f"{url}: {getattr(exc, 'reason', exc)} (slower than {min_kbps} kB/s)"
    rate = size / 1000 / max(took, 1e-6)
    passed = code == 200 and rate >= float(min_kbps)
    return passed, f"{url}: HTTP {code}, {size} bytes at {rate:.0f} kB/s (needs {min_kbps})"


def _dns(timeout: float, name: str, server: str, answer: str) -> tuple[bool, str]:
    query = struct.pack(">HHHHHH", 0x4C41, 0x0100, 1, 0, 0, 0)
    query += b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".")) + b"\0"
    query += struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.sendto(query, (server, 53))
            reply = sock.recv(4096)
        except OSError as exc:
            return False, f"{name} at {server}: {exc.strerror or exc or 'timed out'}"
    rcode = reply[3] & 0x0F
    addresses = _a_records(reply, len(query))
    found = ", ".join(addresses) or "no address"
    passed = rcode == 0 and bool(addresses) and (not answer or answer in addresses)
    rname = _RCODES.get(rcode, f"rcode {rcode}")
    return passed, f"{name} at {server}: {rname}, {found}"


_RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def _a_records(reply: bytes, offset: int) -> list[str]:
    count = struct.unpack(">H", reply[6:8])[0]
    found = []
    for _ in range(count):
        if offset >= len(reply):
            break
        if reply[offset] & 0xC0 == 0xC0:
            offset += 2
        else:
            while offset < len(reply) and reply[offset]:
                offset += reply[offset] + 1
            offset += 1
        kind, _, _, length = struct.unpack(">HHIH", reply[offset : offset + 10])
        offset += 10
        if kind == 1 and length == 4:
            found.append(socket.inet_ntoa(reply[offset : offset + 4]))
        offset += length
    return found


def main(argv: list[str]) -> int:
    kind, timeout, args = argv[0], float(argv[1]), argv[2:]
    checks: dict[str, Callable[..., tuple[bool, str]]] = {
        "tcp": _tcp,
        "http": _http,
        "throughput": _throughput,
        "dns": _dns,
    }
    try:
        passed, detail = checks[kind](timeout, *args)
    except TimeoutError:
        return 124
    sys.stdout.write(detail.replace("\n", " ") + "\n")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
