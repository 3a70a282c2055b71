"""The real-Claude tests: every test here is marked `e2e`, and the fixtures they share.

A file changes the fake API's rules by overriding `script`, Claude's settings by overriding
`claude_options`; the rest is the same for all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import happy_server as peer
from tests.support.bridge_procs import stop_bridges
from tests.support.claude_env import ClaudeEnv, make_claude_env
from tests.support.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, Rule, Script, Text, ToolUse
from tests.support.happy_account import HappyAccount
from tests.support.happy_tui import HappyTui

HERE = Path(__file__).parent
UNSCRIPTED = "[fake_anthropic: unscripted request]"
UNSCRIPTED_REPLY = Reply([Text(UNSCRIPTED)])  # a script's fallback when every request must meet a rule
Launch = Callable[..., HappyTui]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.e2e)


def echo(req: RecordedRequest) -> Reply:
    return Reply([Text("Echo: " + req.last_user_text)])


def bash_rules() -> list[Rule]:
    """ "use bash" asks to write written.txt with Bash (a permission in default mode); its result
    is answered "Done."."""
    bash = ToolUse("Bash", {"command": "echo hi > written.txt", "description": "Write a file"})
    return [
        Rule(name="bash", prompt="use bash", reply=Reply([Text("Running it."), bash])),
        Rule(name="after", tool_result="Bash", reply=Reply([Text("Done.")])),
    ]


@pytest.fixture
def script() -> Script:
    """The fake API's rules; a file overrides this fixture for its own (or adds rules in a test)."""
    return Script(fallback=echo)


@pytest.fixture
def fake(script: Script) -> Iterator[FakeAnthropic]:
    """The fake Messages API; with UNSCRIPTED_REPLY as the fallback, a request no rule answered fails."""
    with FakeAnthropic(script) as api:
        yield api
        if script.fallback == UNSCRIPTED_REPLY:
            unscripted = [r.last_user_text[:200] for r in api.requests if r.rule == "fallback"]
            assert not unscripted, f"requests no rule answered: {unscripted}"


@pytest.fixture
def claude_options() -> dict[str, Any]:
    """make_claude_env's keyword arguments; a file overrides this fixture for its own."""
    return {}


@pytest.fixture
def cenv(tmp_path: Path, fake: FakeAnthropic, claude_options: dict[str, Any]) -> ClaudeEnv:
    return make_claude_env(tmp_path / "claude", fake.url, **claude_options)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """HAPPY_HOME_DIR; a bridge started there (`happy claude` starts one when access.key is there)
    is stopped at the end."""
    path = tmp_path / "home"
    path.mkdir()
    yield path
    stop_bridges(path)


@pytest.fixture(autouse=True)
def no_bridge_left(tmp_path: Path) -> Iterator[None]:
    """No test leaves a bridge running once its fixtures are torn down (this one is torn down
    last): one found under its tmp_path is stopped, and the test fails."""
    yield
    left = stop_bridges(tmp_path)
    assert not left, f"the test left bridges running (pids {left}): stop them in its fixtures"


@pytest.fixture
def launch(home: Path) -> Iterator[Launch]:
    """`launch(cenv, args, **kw)` starts `happy claude` under a PTY; every one is torn down at the end."""
    started: list[HappyTui] = []

    def _launch(cenv: ClaudeEnv, args: tuple[str, ...] = (), **kw: Any) -> HappyTui:
        tui = HappyTui(cenv, home, args, **kw)
        started.append(tui)
        return tui

    yield _launch
    for tui in started:
        tui.kill()


@pytest.fixture(scope="session")
def happy_peer() -> Path:
    """Happy's real server, built once per test run (about a minute cold, at once when cached)."""
    return peer.build()


@pytest.fixture(scope="session")
def happy_server(happy_peer: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[peer.HappyServer]:
    """A real Happy server on a free 127.0.0.1 port, its data in a fresh directory, shared by the
    whole run (a start is seconds and 550 MB): each test keeps to accounts of its own, so tests
    stay apart; one that stops or restarts a server starts its own."""
    server = peer.start(happy_peer, tmp_path_factory.mktemp("happy-server"))
    yield server
    peer.discard(server)


@pytest.fixture
def account(
    happy_peer: Path, happy_server: peer.HappyServer, home: Path, tmp_path: Path
) -> Iterator[HappyAccount]:
    """A fresh Happy account on the run's server, `home` logged in to it; the bridge that
    `happy claude` starts for `home` is stopped at the end."""
    happy = HappyAccount(happy_peer, happy_server, tmp_path / "account")
    happy.log_in(home)
    yield happy
    happy.stop_daemon(home)
