"""The page starts and resumes sessions, and tells what asks for its user as browser
notifications: in Debian's Chromium under Playwright, over `happy web`, the real Claude against
the fake API. A refused directory is said in the form; New session in the allowed directory starts
a session whose first prompt asks for a permission (one notification, once "Notify me" was
pressed) and is answered; once it has ended, Resume continues the same Claude session."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest

from happy_launcher.control.sockets import live_sockets
from happy_launcher.spawn.dirs import SpawnSettings, write_settings
from happy_launcher.spawn.spawner import spawner_for
from happy_launcher.store.sessions import SessionStore
from tests.e2e.conftest import bash_rules, echo
from tests.support.claude_env import ClaudeEnv
from tests.support.fake_anthropic import FakeAnthropic, Script
from tests.support.web import WebServer, chromium

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
WAIT_MS = 30_000
# `new Notification` observed: the page's calls are recorded before the browser's own runs.
RECORD_NOTIFICATIONS = """
(() => {
  const Real = window.Notification;
  window.notified = [];
  function Recorded(title, options) {
    window.notified.push({ title, body: (options || {}).body });
    return new Real(title, options);
  }
  Recorded.requestPermission = (...args) => Real.requestPermission(...args);
  Object.defineProperty(Recorded, "permission", { get: () => Real.permission });
  window.Notification = Recorded;
})();
"""


@pytest.fixture
def script() -> Script:
    return Script(bash_rules(), fallback=echo)


@pytest.fixture
def claude_options() -> dict[str, Any]:
    return {"permission_mode": "default", "allow": (), "max_retries": 1}


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Iterator[Path]:
    """The one allowed directory; every session started in the test is killed at its end."""
    allowed = tmp_path / "work"
    (allowed / "project").mkdir(parents=True)
    write_settings(home, SpawnSettings((allowed,)))
    yield allowed / "project"
    for pid in live_sockets(home):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


@pytest.fixture
def web(home: Path, cenv: ClaudeEnv, project: Path) -> Iterator[WebServer]:
    server = WebServer(home, env={**cenv.env, "HAPPY_CLAUDE_PATH": str(cenv.binary)})
    yield server
    server.kill()


def test_new_session_and_resume_from_the_page_with_a_notification(
    web: WebServer, project: Path, home: Path, fake: FakeAnthropic, tmp_path: Path
) -> None:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1000, "height": 800})
        context.grant_permissions(["notifications"], origin=web.base)
        context.add_init_script(RECORD_NOTIFICATIONS)
        page = context.new_page()
        page.goto(web.url)
        page.wait_for_selector("#app:not([hidden])", timeout=WAIT_MS)
        page.click("#notify")
        page.wait_for_selector("#notify:disabled", timeout=WAIT_MS)

        page.click("#new-session")
        page.wait_for_selector("#new-dialog[open]", timeout=WAIT_MS)
        assert page.input_value("#new-dir") == str(project.parent)  # the allowed one: HOME is not
        page.fill("#new-dir", str(tmp_path))
        page.click("#new-start")
        page.locator("#new-error", has_text="not allowed: ").wait_for(timeout=WAIT_MS)
        assert "outside the directories allowed here" in page.inner_text("#new-error")
        page.fill("#new-dir", str(project))
        page.fill("#new-prompt", "use bash")
        page.select_option("#new-mode", "default")
        page.click("#new-start")
        page.wait_for_selector("#new-dialog", state="hidden", timeout=WAIT_MS)
        page.wait_for_url("**/#s=*", timeout=WAIT_MS)  # the page opened the new session

        card = page.locator(".perm", has_text="Bash")
        card.wait_for(timeout=WAIT_MS)
        page.wait_for_function("() => window.notified.length > 0", timeout=WAIT_MS)
        card.get_by_role("button", name="Allow").click()
        page.locator(".msg.agent", has_text="Done.").wait_for(timeout=WAIT_MS)
        assert (project / "written.txt").read_text() == "hi\n"
        [told] = page.evaluate("window.notified")
        # Named by its first prompt, or by its folder when the request outran the prompt's envelope.
        assert told["title"] == "Permission request" and told["body"] in ("use bash", "project")

        session_id = page.url.split("#s=", 1)[1]
        # As the daemon stops it; in a thread: the sync Playwright API keeps a loop on this one.
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(anyio.run, spawner_for(home, {}).stop, session_id).result()
        page.wait_for_selector("#resume:not([hidden])", timeout=WAIT_MS)  # it ended: Resume offered
        with SessionStore.open(home) as store:
            [ended] = store.list_sessions()
        page.click("#resume")
        page.wait_for_selector("#send:not([disabled])", timeout=WAIT_MS)  # running again
        page.fill("#text", "hello again")
        page.click("#send")
        page.locator(".msg.agent", has_text="Echo: hello again").wait_for(timeout=WAIT_MS)
        with SessionStore.open(home) as store:
            claude_ids = {s.claude_session_id for s in store.list_sessions()}
        assert claude_ids == {ended.claude_session_id}  # the same Claude session, continued
        last = [r for r in fake.requests if r.is_messages][-1]
        assert "use bash" in str(last.body)  # its history intact
        context.close()
