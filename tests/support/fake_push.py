"""A push service on 127.0.0.1 that stands in for Expo's (`exp.host`), which cannot be reached
here: it takes what the bridge posts to `--push-url` (Expo's format: a JSON list of messages),
keeps every message in order, and answers as Expo does, a ticket per message."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakePushService:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.arrivals: list[float] = []  # time.monotonic() of each message's post
        self.headers: list[dict[str, str]] = []
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/--/api/v2/push/send"
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-push", daemon=True)

    def __enter__(self) -> FakePushService:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait(self, count: int, bound: float) -> list[dict[str, Any]]:
        """The messages once there are at least `count`; AssertionError after `bound` seconds (a
        test with a PTY to drain waits with `HappyTui.wait` on `messages` instead)."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.messages) >= count, bound):
                raise AssertionError(f"{len(self.messages)} push message(s), not {count}, after {bound} s")
            return list(self.messages)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with service._changed:
                    service.messages.extend(body)
                    service.arrivals.extend(time.monotonic() for _ in body)
                    service.headers.append(dict(self.headers))
                    service._changed.notify_all()
                tickets = [{"status": "ok", "id": f"ticket-{n}"} for n in range(len(body))]
                answer = json.dumps({"data": tickets}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
