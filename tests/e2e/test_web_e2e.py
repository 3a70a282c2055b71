"""The web page in a real browser (Debian's Chromium under Playwright) over `happy web`, driving
the real Claude (the SDK in remote mode without a terminal, and the TUI under our PTY) against
the fake Messages API: pairing, live answers, sending and approving from the page, a server
killed and restarted under an open page, a second device, a revoked one."""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from happy_launcher.home.dirs import socket_path
from happy_launcher.store.sessions import SessionStore
from happy_launcher.web.devices import DeviceStore
from tests.e2e.conftest import bash_rules, echo
from tests.support.claude_env import ClaudeEnv
from tests.support.control import wait_for_file
from tests.support.fake_anthropic import Script
from tests.support.happy_tui import HappyTui, happy_executable
from tests.support.web import WebServer, chromium

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]
WAIT_MS = 30_000


@pytest.fixture
def script() -> Script:
    return Script(bash_rules(), fallback=echo)


@pytest.fixture
def claude_options() -> dict[str, Any]:
    return {"permission_mode": "default", "allow": (), "max_retries": 1}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def web(home: Path) -> Iterator[WebServer]:
    server = WebServer(home)
    yield server
    server.kill()


class LineSession:
    """`happy claude --happy-remote` without a terminal: a prompt per stdin line, agent text on
    stdout; its control socket is up once started."""

    def __init__(self, cenv: ClaudeEnv, home: Path) -> None:
        env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}
        self.proc = subprocess.Popen(
            [happy_executable(), "claude", "--happy-remote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cenv.cwd,
        )
        self.home = home
        # In a thread: the sync Playwright API keeps an event loop running on this one.
        with ThreadPoolExecutor(1) as pool:
            pool.submit(wait_for_file, socket_path(home, self.proc.pid), 30).result()
        self._out = b""

    def say(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def wait_line(self, line: str, timeout: float = 30) -> None:
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while line.encode() + b"\n" not in self._out:
            left = deadline - time.monotonic()
            assert left > 0 and sel.select(left), f"no {line!r} from happy within {timeout}s: {self._out!r}"
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            assert chunk, f"happy exited before printing {line!r}"
            self._out += chunk

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def sdk(cenv: ClaudeEnv, home: Path) -> Iterator[LineSession]:
    session = LineSession(cenv, home)
    yield session
    session.close()


def paired_page(browser: Any, url: str) -> Any:
    page = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    page.goto(url)
    page.wait_for_selector("#app:not([hidden])", timeout=WAIT_MS)
    assert "#k=" not in page.url  # the secret left the address bar
    return page


def open_first_session(page: Any, drain: Callable[[Callable[[], bool]], None] | None = None) -> None:
    if drain is None:
        page.wait_for_selector("#sessions li", timeout=WAIT_MS)
    else:
        drain(lambda: page.locator("#sessions li").count() > 0)
    page.locator("#sessions li").first.click()
    page.wait_for_selector("#composer:not([hidden])", timeout=WAIT_MS)


def shown(page: Any, selector: str, text: str) -> Any:
    return page.locator(selector, has_text=text)


def stored_seqs(home: Path) -> list[int]:
    with SessionStore.open(home) as store:
        [session] = store.list_sessions()
        return [seq for seq, _ in store.raw_envelopes(session.id)]


def rendered_exactly_once(page: Any, home: Path) -> None:
    """Every stored envelope was rendered once, in order: no gap, no duplicate."""
    want = stored_seqs(home)
    page.wait_for_function(f"() => window.happy.seqs.length >= {len(want)}", timeout=WAIT_MS)
    assert page.evaluate("window.happy.seqs") == want == list(range(1, len(want) + 1))


def test_sdk_session_watched_driven_and_a_permission_approved(
    browser: Any, web: WebServer, sdk: LineSession, cenv: ClaudeEnv, home: Path
) -> None:
    page = paired_page(browser, web.url)
    open_first_session(page)
    sdk.say("hello")
    shown(page, ".msg.agent", "Echo: hello").wait_for(timeout=WAIT_MS)  # answered live
    assert shown(page, ".msg.user", "hello").count() == 1
    page.fill("#text", "use bash")
    page.click("#send")
    card = page.locator(".perm", has_text="Bash")
    card.wait_for(timeout=WAIT_MS)
    assert "written.txt" in card.inner_text()
    card.get_by_role("button", name="Allow").click()
    shown(page, ".msg.agent", "Done.").wait_for(timeout=WAIT_MS)
    page.wait_for_selector(".tool.done", timeout=WAIT_MS)
    assert (cenv.cwd / "written.txt").read_text() == "hi\n"
    assert page.locator(".perm").count() == 0
    page.locator(".turn-status.completed").nth(1).wait_for(timeout=WAIT_MS)
    rendered_exactly_once(page, home)


def test_server_killed_and_restarted_the_page_catches_up(
    browser: Any, web: WebServer, sdk: LineSession, home: Path
) -> None:
    page = paired_page(browser, web.url)
    open_first_session(page)
    sdk.say("hello one")
    shown(page, ".msg.agent", "Echo: hello one").wait_for(timeout=WAIT_MS)
    web.kill()
    page.wait_for_selector("#conn:not([hidden])", timeout=WAIT_MS)  # the page knows
    sdk.say("hello two")
    sdk.wait_line("Echo: hello two")  # answered while nobody served the page
    web.start()  # same port
    shown(page, ".msg.agent", "Echo: hello two").wait_for(timeout=WAIT_MS)
    page.locator(".turn-status.completed").nth(1).wait_for(timeout=WAIT_MS)
    with page.expect_request("**/stream"):  # a phone waking up: the page reconnects at once
        page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    sdk.say("hello three")  # and live again
    shown(page, ".msg.agent", "Echo: hello three").wait_for(timeout=WAIT_MS)
    page.locator(".turn-status.completed").nth(2).wait_for(timeout=WAIT_MS)
    for text in ("hello one", "hello two", "hello three"):
        assert page.locator(".msg.user", has_text=text).count() == 1
    rendered_exactly_once(page, home)


@contextmanager
def tui_in_page(
    browser: Any, web: WebServer, cenv: ClaudeEnv, home: Path
) -> Iterator[tuple[HappyTui, Any, Callable[[Callable[[], bool]], None]]]:
    """A TUI session, open in a paired page; `drain(cond)` waits on the page while the TUI's
    output is read meanwhile."""
    tui = HappyTui(cenv, home, env={"TERM": "xterm"})
    try:
        tui.wait_ready()
        page = paired_page(browser, web.url)

        def drain(cond: Callable[[], bool]) -> None:
            tui.wait(cond, 30, "the page")

        open_first_session(page, drain)
        yield tui, page, drain
    finally:
        tui.kill()


def test_tui_session_live_in_the_page_and_a_message_sent_from_it(
    browser: Any, web: WebServer, cenv: ClaudeEnv, home: Path
) -> None:
    with tui_in_page(browser, web, cenv, home) as (tui, page, drain):
        tui.submit("hello")
        drain(lambda: shown(page, ".msg.agent", "Echo: hello").count() > 0)
        page.fill("#text", "from the page")
        page.click("#send")  # local mode: the session moves to remote mode to deliver it
        drain(lambda: shown(page, ".msg.agent", "Echo: from the page").count() > 0)
        drain(lambda: "remote mode" in page.inner_text("#s-meta"))
        drain(lambda: page.locator(".turn-status.completed").count() == 2)
        rendered_exactly_once(page, home)


def test_tui_permission_approved_then_denied_with_a_reason_from_the_page(
    browser: Any, web: WebServer, cenv: ClaudeEnv, home: Path
) -> None:
    with tui_in_page(browser, web, cenv, home) as (tui, page, drain):
        card = page.locator(".perm", has_text="Bash")
        tui.submit("use bash")
        drain(lambda: card.count() == 1)  # the TUI's request, through its PermissionRequest hook
        card.get_by_role("button", name="Allow").click()
        drain(lambda: shown(page, ".msg.agent", "Done.").count() == 1)
        assert (cenv.cwd / "written.txt").read_text() == "hi\n"
        mark = len(tui.seen)
        tui.submit("use bash")
        drain(lambda: card.count() == 1)
        card.get_by_label("Reason").fill("not on a Friday")
        card.get_by_role("button", name="Deny").click()
        tui.expect_screen("not on a Friday", since=mark)  # Claude was told why
        drain(lambda: page.locator(".perm").count() == 0)


def test_a_second_device_gets_its_own_token_and_a_revoked_one_is_refused(
    browser: Any, web: WebServer, home: Path
) -> None:
    first = paired_page(browser, web.url)
    first.click("#pair-new")
    first.wait_for_selector("#pair-dialog[open]", timeout=WAIT_MS)
    link = first.inner_text("#pair-url")
    assert link.startswith(f"http://127.0.0.1:{web.port}/#k=")
    second = paired_page(browser, link)
    tokens = [p.evaluate("localStorage.getItem('happy.token')") for p in (first, second)]
    assert tokens[0] != tokens[1]
    device = DeviceStore(home, clock_ms=lambda: 0).verify(tokens[1])
    assert device is not None
    revoked = subprocess.run(
        [happy_executable(), "web", "revoke", device.id],
        env={**web.env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert revoked.returncode == 0, revoked.stderr
    second.reload()
    second.wait_for_selector("#pair-view:not([hidden])", timeout=WAIT_MS)
    assert "revoked" in second.inner_text("#pair-message")
    assert second.evaluate("localStorage.getItem('happy.token')") is None
    first.reload()
    first.wait_for_selector("#app:not([hidden])", timeout=WAIT_MS)
    assert first.locator("#pair-view").is_hidden()
