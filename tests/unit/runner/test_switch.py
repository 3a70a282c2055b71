"""A local → remote → local switch in-process, over the session loop (runner/loop.py): a stand-in
for the TUI's launcher, and remote mode's real `connect` (driver, remote session, front) on the
fake SDK client replaying a recorded turn. The loop hands the same Claude session across, and a
message stored in local mode is delivered once, in remote mode (no Claude, milliseconds)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from happy_launcher.claude.args import parse_happy_claude_args
from happy_launcher.claude.paths import transcript_path
from happy_launcher.remote.driver import SentPrompt
from happy_launcher.remote.fake_sdk import FakeSdkClient
from happy_launcher.remote.front import RemoteFront
from happy_launcher.remote.launcher import connect
from happy_launcher.runner.loop import run_session
from happy_launcher.session.inbound import InboundPrompt
from happy_launcher.session.launcher import Launcher, LauncherExit, Run
from happy_launcher.session.ports import Mode
from happy_launcher.store.sessions import SessionStore
from tests.support.remote_driver import Transcript, claude_takes_prompts
from tests.support.remote_feed import main_transcript
from tests.support.sdk_stream import recorded_turns, scenario_dir

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(10)]

SCENARIO = scenario_dir("text")  # one prompt, one reply
MESSAGE = "Say hello"  # the recorded prompt's text


class Tui:
    """The local launcher's stand-in. Claude's SessionStart hook names the session; with a
    `message`, a client sends one meanwhile (stored as the controller stores it) and the TUI
    hands over to remote mode to deliver it."""

    def __init__(self, claude_id: str, transcript: Path, *, source: str, message: str | None) -> None:
        self.claude_id, self.transcript, self.source, self.message = claude_id, transcript, source, message
        self.pending: list[InboundPrompt] = []  # what waited for Claude when it started

    async def run(self, ref: Run | None) -> LauncherExit:
        assert ref is not None
        session = ref.get()
        session.set_claude_session(self.claude_id, self.source, self.transcript)
        self.pending = session.pending_prompts()
        if self.message is None:
            return LauncherExit("exited")
        session.accept_inbound("m-1", self.message)
        return LauncherExit("switch")


class Remote:
    """Remote mode's launcher, but for its screen: the real `connect` on `claude_id`, what is
    pending delivered, then back to the TUI once Claude is idle."""

    def __init__(self, claude_id: str, cwd: Path, env: dict[str, str], sdk: FakeSdkClient) -> None:
        self.claude_id, self.cwd, self.env, self.sdk = claude_id, cwd, env, sdk
        self.sent: list[SentPrompt] = []

    async def run(self, ref: Run | None) -> LauncherExit:
        assert ref is not None
        args = parse_happy_claude_args([])
        async with connect(
            ref.get(),
            args,
            binary=Path("claude"),
            cwd=self.cwd,
            env=self.env,
            claude_session_id=self.claude_id,
            resume=True,
            broker=ref.permissions,
            client=self.sdk,
        ) as remote:
            front = ref.front = RemoteFront(remote, can_switch=True)
            self.sent = await remote.deliver_pending()
            await remote.wait_idle()
            front.request_switch()
            ref.front = None
        return LauncherExit("switch" if front.switch_requested else "exited")


class Modes:
    """Makes the launcher a switch asks for, on the Claude session the loop hands it."""

    def __init__(self, cwd: Path, env: dict[str, str], sdk: FakeSdkClient) -> None:
        self.cwd, self.env, self.sdk = cwd, env, sdk
        self.asked: list[tuple[Mode, str]] = []
        self.made: list[Tui | Remote] = []

    def launcher(self, mode: Mode, claude_session_id: str) -> Launcher:
        self.asked.append((mode, claude_session_id))
        transcript = transcript_path(self.env, self.cwd, claude_session_id)
        made = (
            Remote(claude_session_id, self.cwd, self.env, self.sdk)
            if mode == "remote"
            else Tui(claude_session_id, transcript, source="resume", message=None)
        )
        self.made.append(made)
        return made


async def test_local_remote_local_hands_the_claude_session_and_delivers_the_message_once(
    tmp_path: Path,
) -> None:
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    cwd, claude_id = tmp_path, main_transcript(SCENARIO).stem
    path = transcript_path(env, cwd, claude_id)
    path.parent.mkdir(parents=True)
    turns = recorded_turns(SCENARIO)
    sdk = FakeSdkClient([turn for _, turn in turns])
    modes = Modes(cwd, env, sdk)
    ref = Run(tmp_path / "home", cwd)
    first = Tui(claude_id, path, source="startup", message=MESSAGE)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as claude:
            claude.start_soon(
                claude_takes_prompts, sdk, Transcript(main_transcript(SCENARIO), path), [turns[0][0]]
            )
            exit = await run_session(ref, first, modes=modes)
            claude.cancel_scope.cancel()

    assert exit == LauncherExit("exited")
    assert modes.asked == [("remote", claude_id), ("local", claude_id)]
    remote, back = modes.made
    assert isinstance(remote, Remote) and isinstance(back, Tui)
    assert sdk.options is not None and sdk.options.resume == claude_id  # remote resumed that session
    assert [(p["message"]["content"], p["uuid"]) for p in sdk.prompts] == [(MESSAGE, remote.sent[0].uuid)]
    assert back.pending == []  # delivered: nothing left for the TUI
    with SessionStore.open(tmp_path / "home") as store:
        [session] = store.list_sessions()
        texts = [e.ev.text for _, e in store.envelopes(session.id) if e.ev.t == "text" and e.role == "user"]
    assert texts == [MESSAGE] and session.status == "completed"
