"""`happy web` over HTTP (the real server, a subprocess): pairing, tokens, revocation, Origin and
Host checks, rate limits, idempotent commands and the resumable stream, against a control
server over a FakeController (the browser tests, test_web_e2e.py, use the real Claude)."""

from __future__ import annotations

import http.client
import os
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from happy_launcher.control.fake import FakeController
from happy_launcher.errors import UsageError
from happy_launcher.home.procs import this_process
from happy_launcher.session.ports import MAX_MESSAGE, PermissionRequest
from happy_launcher.store.sessions import SessionStore
from happy_launcher.web.auth import PAIR_ATTEMPTS, Pairing, allowed_hosts, origin_ok
from happy_launcher.web.body_limit import BODY_LIMIT
from happy_launcher.web.devices import DeviceStore
from happy_launcher.web.run import lan_address, reach
from tests.support.control import Envelopes, facts, running, stored_session
from tests.support.happy_tui import happy_executable
from tests.support.web import Answer, WebServer, pair, request

pytestmark = pytest.mark.timeout(60)
UNAUTHORIZED = b'{"error":"unauthorized"}'
DAY_MS = 24 * 3600 * 1000


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal("asyncio") as p:
        yield p


@pytest.fixture
def controller(home: Path, portal: BlockingPortal) -> Iterator[FakeController]:
    fake = FakeController(facts(happy_session_id="hs-web"))
    with portal.wrap_async_context_manager(running(fake, home)):
        yield fake


@pytest.fixture
def server(home: Path) -> Iterator[WebServer]:
    web = WebServer(home)
    yield web
    web.kill()


def happy_web(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [happy_executable(), "web", *args],
        env={"HAPPY_HOME_DIR": str(home), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_pairing_secret_is_one_time_and_the_token_is_needed(server: WebServer) -> None:
    token = pair(server)
    again = request(server, "/api/pair", method="POST", body={"secret": server.secret, "name": "x"})
    assert (again.status, again.body) == (401, UNAUTHORIZED)
    assert request(server, "/api/sessions", token=token).json() == []
    for wrong in (None, "nope", token[:-1]):
        answer = request(server, "/api/sessions", token=wrong)
        assert (answer.status, answer.body) == (401, UNAUTHORIZED)  # nothing else said
    # Only the token's hash is kept, in a private file.
    devices = server.home / "web" / "devices.json"
    assert stat.S_IMODE(devices.stat().st_mode) == 0o600
    assert token.encode() not in devices.read_bytes()
    server.kill()
    assert token.encode() not in server.output  # nor in what the server printed or logged


def test_foreign_origin_and_unknown_host_are_refused(server: WebServer, controller: FakeController) -> None:
    token = pair(server)
    evil = "http://evil.example"
    path = "/api/sessions/hs-web/command"
    send = {"id": "c1", "type": "send", "text": "hi"}
    assert request(server, path, method="POST", token=token, origin=evil, body=send).status == 403
    assert request(server, path, method="POST", token=token, origin=None, body=send).status == 403
    stream = request(server, "/api/sessions/hs-web/stream", method="POST", token=token, origin=evil)
    assert stream.status == 403
    assert request(server, "/api/pair/new", method="POST", token=token, origin=evil).status == 403
    assert request(server, "/api/sessions", token=token, origin=evil).status == 403
    assert controller.sent == {}
    rebinding = request(server, "/api/sessions", token=token, host=f"evil.example:{server.port}")
    assert rebinding.status == 421
    assert request(server, "/", host=f"evil.example:{server.port}").status == 421
    local = request(server, "/api/sessions", token=token, host=f"localhost:{server.port}", origin=None)
    assert local.status == 200


def test_a_revoked_device_is_refused_by_the_running_server(server: WebServer) -> None:
    first = pair(server)
    link = request(server, "/api/pair/new", method="POST", token=first).json()
    assert link["qr"].startswith("data:image/svg+xml")
    second = pair(server, link["url"].split("#k=", 1)[1], name="phone")
    assert second != first
    listed = happy_web(server.home, "devices")
    assert listed.returncode == 0 and "phone" in listed.stdout and "test device" in listed.stdout
    assert first not in listed.stdout and second not in listed.stdout
    revoked = happy_web(server.home, "revoke", "phone")
    assert revoked.returncode == 0, revoked.stderr
    assert request(server, "/api/sessions", token=second).status == 401
    assert request(server, "/api/sessions", token=first).status == 200
    unknown = happy_web(server.home, "revoke", "nobody")
    assert unknown.returncode == 2 and "happy web devices" in unknown.stderr


def test_pairing_attempts_are_rate_limited_per_client(server: WebServer) -> None:
    for n in range(PAIR_ATTEMPTS):
        assert request(server, "/api/pair", method="POST", body={"secret": f"guess{n}"}).status == 401
    late = request(server, "/api/pair", method="POST", body={"secret": server.secret})
    assert late.status == 429  # even the right secret, until the window passes
    # The flood came from 127.0.0.1: another client (127.0.0.2 is loopback too) still pairs.
    other = request(server, "/api/pair", method="POST", body={"secret": server.secret}, source="127.0.0.2")
    assert other.status == 200 and other.json()["token"]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def raw_post(server: WebServer, path: str, headers: dict[str, str], body: bytes) -> bytes:
    """Send a POST's head and `body` (maybe only the start of what the head announces), then
    read the answer's status line: the server must answer without waiting for more."""
    head = [
        f"POST {path} HTTP/1.1",
        f"host: 127.0.0.1:{server.port}",
        f"origin: http://127.0.0.1:{server.port}",
    ]
    head += [f"{name}: {value}" for name, value in headers.items()]
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        return sock.makefile("rb").readline()


def test_a_body_over_the_limit_is_refused_before_it_is_read(server: WebServer) -> None:
    token = pair(server)
    assert server.proc is not None
    before = rss_kib(server.proc.pid)
    huge = {"content-type": "application/json", "content-length": str(300 << 20)}
    authorized = {"authorization": f"Bearer {token}"}
    for path, auth in (("/api/pair", {}), ("/api/sessions/hs-web/command", authorized)):
        status = raw_post(server, path, {**huge, **auth}, b'{"secret": "' + b"x" * 65536)
        assert status.startswith(b"HTTP/1.1 413 "), (path, status)
    # A chunked body is counted as it streams: refused once past the limit (no last chunk sent).
    piece = b"x" * 65536
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(BODY_LIMIT // len(piece) + 1))
    chunked = {"transfer-encoding": "chunked", **authorized}
    assert raw_post(server, "/api/sessions/hs-web/command", chunked, chunks).startswith(b"HTTP/1.1 413 ")
    assert rss_kib(server.proc.pid) - before < 16 << 10
    assert request(server, "/api/sessions", token=token).status == 200  # and it serves on


def test_pairing_secrets_expire_and_are_one_time() -> None:
    now = [0.0]
    pairing = Pairing(lambda: now[0])
    forever, soon = pairing.mint(ttl=None), pairing.mint(ttl=10)
    now[0] = 11
    assert not pairing.consume(soon)
    assert pairing.consume(forever) and not pairing.consume(forever)
    assert allowed_hosts({"127.0.0.1", "::1"}, 80) == {"127.0.0.1:80", "[::1]:80"}
    assert origin_ok("http://127.0.0.1:80", "127.0.0.1:80") and not origin_ok(None, "127.0.0.1:80")


def command(server: WebServer, token: str, body: dict[str, Any]) -> tuple[int, Any]:
    answer = request(server, "/api/sessions/hs-web/command", method="POST", token=token, body=body)
    return answer.status, answer.json()


def test_a_retried_command_acts_once(server: WebServer, controller: FakeController) -> None:
    token = pair(server)
    send = {"id": "m1", "type": "send", "text": "hello"}
    assert command(server, token, send) == command(server, token, send)
    assert [text for _, text in controller.sent.values()] == ["hello"]
    abort = {"id": "a1", "type": "abort"}
    assert command(server, token, abort) == command(server, token, abort) == (200, {"ok": True})
    assert controller.aborts == 1
    controller.request_permission(PermissionRequest("p1", "Bash", {"command": "ls"}, "Run ls"))
    deny = {"id": "d1", "type": "answer", "request_id": "p1", "allow": False, "message": "not now"}
    assert command(server, token, deny) == command(server, token, deny) == (200, {"ok": True})
    assert controller.answers == [("p1", False, "not now")]
    other = command(server, token, {**deny, "id": "d2"})  # a new answer to a settled request
    assert other[0] == 409 and "p1" in other[1]["error"]
    bad = command(server, token, {"id": "x", "type": "launch"})
    assert bad[0] == 400 and "bad command" in bad[1]["error"]
    missing = request(server, "/api/sessions/nope/command", method="POST", token=token, body=abort)
    assert missing.status == 404
    server.restart()  # the memory of command ids outlives the server: a late retry still acts once
    assert command(server, token, abort) == (200, {"ok": True})
    assert command(server, token, deny) == (200, {"ok": True})
    assert controller.aborts == 1 and len(controller.answers) == 1
    assert (server.home / "web" / "commands.json").stat().st_mode & 0o777 == 0o600


def frames(response: http.client.HTTPResponse, count: int) -> list[tuple[str, str | None, Any]]:
    """The next `count` SSE frames (event, id, data), heartbeats skipped."""
    got: list[tuple[str, str | None, Any]] = []
    fields: dict[str, str] = {}
    while len(got) < count:
        line = response.fp.readline().decode().rstrip("\n")
        if line == "":
            if "data" in fields:
                got.append((fields.get("event", "message"), fields.get("id"), orjson.loads(fields["data"])))
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            fields[name] = value
    return got


def test_the_stream_resumes_after_last_event_id_with_open_requests_as_state(
    server: WebServer, controller: FakeController, portal: BlockingPortal
) -> None:
    token = pair(server)
    made = Envelopes()
    controller.commit(made.make(5))
    controller.request_permission(PermissionRequest("p1", "Bash", {"command": "ls"}, "Run ls"))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    conn.request(
        "POST",
        "/api/sessions/hs-web/stream",
        headers={
            "host": f"127.0.0.1:{server.port}",
            "origin": f"http://127.0.0.1:{server.port}",
            "authorization": f"Bearer {token}",
            "last-event-id": "3",
        },
    )
    response = conn.getresponse()
    assert response.status == 200 and response.getheader("content-type", "").startswith("text/event-stream")
    first = frames(response, 5)
    assert first[0][0] == "state" and first[0][2]["happy_session_id"] == "hs-web"
    assert [f[0] for f in first[1:]].count("permission-requested") == 1
    [told] = [f[2] for f in first if f[0] == "attention"]  # the open request, for a notification
    assert (told["kind"], told["key"], told["title"]) == ("permission", "p1", "Permission request")
    assert [f[1] for f in first[1:] if f[0] == "envelope"] == ["4", "5"]
    portal.call(controller.commit, made.make(1))  # live, on the session's event loop
    [live] = frames(response, 1)
    assert live[:2] == ("envelope", "6") and live[2]["ev"]["text"].startswith("message 6")
    conn.close()


def test_a_revocation_holds_against_a_server_writing_last_use(tmp_path: Path) -> None:
    now = [0]
    server, cli = (DeviceStore(tmp_path, clock_ms=lambda: now[0]) for _ in range(2))
    _, kept = server.add("laptop")
    _, gone = server.add("phone")
    assert cli.revoke("phone").name == "phone"
    now[0] = 10**6  # the server's next check writes the laptop's last use
    assert server.verify(gone) is None and server.verify(kept) is not None
    assert [(d.name, d.last_seen) for d in cli.devices()] == [("laptop", 10**6)]
    assert not server.verify_id("nope")


def test_lan_takes_this_machines_local_network_address_and_says_so() -> None:
    assert lan_address(lambda: "192.168.1.7") == "192.168.1.7"
    for lookup_gives in ("127.0.1.1", "0.0.0.0"):
        with pytest.raises(UsageError, match=r"no local network address found.*--host"):
            lan_address(lambda given=lookup_gives: given)  # type: ignore[misc]

    def unreachable() -> str:
        raise OSError(101, "Network is unreachable")

    with pytest.raises(UsageError, match=r"\(Network is unreachable\): give one with --host"):
        lan_address(unreachable)
    assert reach("192.168.1.7", lan=True).startswith("Reachable from your local network at 192.168.1.7")
    assert "only from this machine" in reach("127.0.0.1", lan=False) and "--lan" in reach("::1", lan=False)


def test_the_second_line_says_who_can_reach_the_page(server: WebServer) -> None:
    server.kill()
    out = subprocess.run(  # the first line (the URL) is read by WebServer; here the next one
        ["timeout", "-s", "INT", "5", happy_executable(), "web", "--port", "0"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    url, second = out.stdout.splitlines()[:2]
    assert url.startswith("http://127.0.0.1:") and "#k=" in url
    assert second == "Reachable only from this machine: `happy web --lan` opens it to your local network."
    both = subprocess.run(
        [happy_executable(), "web", "--lan", "--host", "10.0.0.1"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert both.returncode == 2
    assert both.stderr == "happy: --lan chooses the address itself: give --lan or --host, not both\n"


def test_a_message_over_1_mib_is_refused_in_words(server: WebServer, controller: FakeController) -> None:
    token = pair(server)
    status, answer = command(server, token, {"id": "big", "type": "send", "text": "x" * (MAX_MESSAGE + 1)})
    assert status == 413 and answer["error"].startswith("the message is larger than 1 MiB"), answer
    assert controller.sent == {}
    quoted = '"line"\n' * (MAX_MESSAGE // 7)  # just under 1 MiB, but JSON escapes make its line longer
    assert command(server, token, {"id": "fits", "type": "send", "text": quoted})[0] == 200
    assert [text for _, text in controller.sent.values()] == [quoted]


def test_the_list_names_each_session_and_an_ended_one_can_be_hidden(server: WebServer) -> None:
    """Titles: Claude's own (from the transcript), else the first prompt cut to one line. The
    hidden set is the server's (every device sees it, a restart keeps it); only an ended session
    can be hidden, and one that runs again is shown again, for good."""
    home, now = server.home, time.time_ns() // 1_000_000
    transcript = home.parent / "named.jsonl"
    transcript.write_bytes(orjson.dumps({"type": "custom-title", "customTitle": "Named by the user"}) + b"\n")
    stored_session(home, "hs-old", prompt="Fix the flaky test\nin CI", at=now - 2 * DAY_MS)
    stored_session(home, "hs-named", prompt="a prompt", at=now, transcript=transcript)
    stored_session(home, "hs-run", prompt="Still going", at=now, owner=this_process(os.getpid()))
    token = pair(server)

    def listed() -> dict[str, tuple[str | None, str, bool]]:
        rows = request(server, "/api/sessions", token=token).json()
        return {row["id"]: (row["title"], row["state"], row["hidden"]) for row in rows}

    def hide(session: str, body: Any, **options: Any) -> Answer:
        path = f"/api/sessions/{session}/hidden"
        return request(server, path, method="POST", token=token, body=body, **options)

    assert listed() == {
        "hs-run": ("Still going", "running", False),
        "hs-named": ("Named by the user", "completed", False),
        "hs-old": ("Fix the flaky test …", "completed", False),
    }
    assert hide("hs-run", {"hidden": True}).status == 409
    assert hide("hs-old", {"hidden": "yes"}).status == 400 and hide("hs-old", {}).status == 400
    assert hide("hs-nope", {"hidden": True}).status == 404
    assert hide("hs-old", {"hidden": True}, origin="http://evil.example").status == 403
    assert hide("hs-old", {"hidden": True}).status == 200 and hide("hs-named", {"hidden": True}).status == 200
    assert hide("hs-named", {"hidden": False}).status == 200
    hidden = home / "web" / "hidden.json"
    assert stat.S_IMODE(hidden.stat().st_mode) == 0o600
    server.restart()
    assert listed()["hs-old"] == ("Fix the flaky test …", "completed", True)
    assert listed()["hs-named"][2] is False
    store = SessionStore.open(home)
    try:
        store.reopen_session("hs-old", owner=this_process(os.getpid()))
        assert listed()["hs-old"] == ("Fix the flaky test …", "running", False)
        store.end_session("hs-old", "completed", now)
        assert listed()["hs-old"] == ("Fix the flaky test …", "completed", False)
    finally:
        store.close()


def test_a_long_history_opens_on_its_newest_envelopes_and_pages_back(server: WebServer, home: Path) -> None:
    """The page's window: `?tail=3` starts the stream at the newest three; `envelopes?before=`
    pages back from there by keyset, each envelope exactly as stored, none twice, none lost."""
    made = Envelopes().make(10)
    with SessionStore.open(home) as store:
        store.create_session("hs-long", cwd="/work/project", started_at=1, status="completed")
        store.append_envelopes("hs-long", made)
    token = pair(server)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    origin = f"http://127.0.0.1:{server.port}"
    headers = {"host": f"127.0.0.1:{server.port}", "origin": origin, "authorization": f"Bearer {token}"}
    conn.request("POST", "/api/sessions/hs-long/stream?tail=3", headers=headers)
    got = frames(conn.getresponse(), 4)
    conn.close()
    assert [(event, seq) for event, seq, _ in got] == [
        ("envelope", "8"),
        ("envelope", "9"),
        ("envelope", "10"),
        ("end", None),
    ]
    pages, before = [], 8
    while page := request(
        server, f"/api/sessions/hs-long/envelopes?before={before}&limit=4", token=token
    ).json()["envelopes"]:
        pages.append([seq for seq, _ in page])
        assert page == [[seq, orjson.loads(made[seq - 1].to_json())] for seq, _ in page]
        before = page[0][0]
    assert pages == [[4, 5, 6, 7], [1, 2, 3]]
    bad = request(server, "/api/sessions/hs-long/envelopes?before=x", token=token)
    assert bad.status == 400
    assert request(server, "/api/sessions/hs-long/envelopes?before=5").status == 401
