"""`happy web` for the tests and benchmarks: the real server as a subprocess (its first stdout
line is the pairing URL), raw HTTP requests with any Host/Origin, and Debian's Chromium under
Playwright (never `playwright install`: scripts/test installs /usr/bin/chromium)."""

from __future__ import annotations

import http.client
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from tests.support.happy_tui import happy_executable

CHROMIUM = "/usr/bin/chromium"
# What Chromium needs on a closed network (no background connections) and as root (no sandbox).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class WebServer:
    """`happy web --port PORT` under `home`; `restart()` starts it again on the same port."""

    def __init__(self, home: Path, port: int = 0, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.env = {**os.environ, **(env or {}), "HAPPY_HOME_DIR": str(home)}
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.output = b""
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [happy_executable(), "web", "--port", str(self.port)],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.url = self._first_line(self.proc, 20).decode()
        self.port = urlsplit(self.url).port or 0

    @staticmethod
    def _first_line(proc: subprocess.Popen[bytes], timeout: float) -> bytes:
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        buf = b""
        deadline = time.monotonic() + timeout
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise AssertionError(f"happy web printed no URL within {timeout}s: {buf!r}")
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                err = proc.stderr.read() if proc.stderr else b""
                raise AssertionError(f"happy web exited: {err.decode(errors='replace')}")
            buf += chunk
        return buf.split(b"\n", 1)[0]

    @property
    def base(self) -> str:
        return self.url.split("#", 1)[0].rstrip("/")

    @property
    def secret(self) -> str:
        return self.url.split("#k=", 1)[1]

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """End the server; keep what it wrote (to check that no token reached it)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=20)
        self.output += out + err
        self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()


@dataclass
class Answer:
    status: int
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


def request(
    server: WebServer,
    path: str,
    *,
    method: str = "GET",
    token: str | None = None,
    origin: str | None = "same",
    host: str | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
    read: bool = True,
    source: str | None = None,
) -> Answer:
    """One HTTP request; `origin="same"` sends the server's own Origin, None sends none;
    `source`: the client's address (another loopback address is another client)."""
    conn = http.client.HTTPConnection(
        "127.0.0.1", server.port, timeout=20, source_address=None if source is None else (source, 0)
    )
    sent = {"host": host or f"127.0.0.1:{server.port}", **(headers or {})}
    if origin == "same":
        sent["origin"] = f"http://127.0.0.1:{server.port}"
    elif origin is not None:
        sent["origin"] = origin
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    data = None if body is None else orjson.dumps(body)
    if data is not None:
        sent["content-type"] = "application/json"
    try:
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        return Answer(response.status, response.read() if read else b"")
    finally:
        conn.close()


def pair(server: WebServer, secret: str | None = None, name: str = "test device") -> str:
    body = {"secret": secret or server.secret, "name": name}
    answer = request(server, "/api/pair", method="POST", body=body)
    assert answer.status == 200, answer
    token: str = answer.json()["token"]
    return token


def paired_context(browser: Any, server: WebServer) -> Any:
    """A phone-sized browser context already paired with `server` (its token in localStorage)."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    context.add_init_script(f"localStorage.setItem('happy.token', {pair(server)!r})")
    return context


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium, headless, under Playwright."""
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: scripts/test installs Debian's chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
