"""Switching one Claude session between the TUI and the Agent SDK mid-run (issue 9), with the
real bundled Claude under happy's PTY and through the SDK, against the fake Messages API."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from happy_launcher.claude.paths import project_dir
from happy_launcher.home.dirs import socket_path
from happy_launcher.store.sessions import SessionStore
from tests.e2e.conftest import Launch, echo
from tests.support.claude_env import ClaudeEnv
from tests.support.control import wait_for_file
from tests.support.fake_anthropic import FakeAnthropic, Reply, Rule, Script, Text
from tests.support.happy_tui import READY_MARKERS, HappyTui, happy_executable, squeeze, wait_pid_gone

pytestmark = pytest.mark.timeout(120)


SLOW = " ".join(f"word{n}" for n in range(40))


@pytest.fixture
def script() -> Script:
    slow = Rule(Reply([Text(SLOW, chunk_size=6)], chunk_delay=0.3), prompt="use slow")
    return Script([slow], fallback=echo)


@pytest.fixture
def tui(cenv: ClaudeEnv, launch: Launch) -> Callable[..., HappyTui]:
    """`tui(*args)` starts this file's `happy claude`: stty checked, a plain xterm."""
    return lambda *args: launch(cenv, args, wrap_stty=True, env={"TERM": "xterm"})


def happy(t: HappyTui, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Another process on the machine running a `happy` verb against the running session."""
    return subprocess.run(
        [happy_executable(), *args],
        env=t.env,
        cwd=t.cenv.cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def wait_tui_ready(t: HappyTui, since: int) -> None:
    markers = [squeeze(m) for m in READY_MARKERS]
    t.wait(lambda: any(m in squeeze(t.seen[since:]) for m in markers), 30, "the TUI's input box")


def transcripts(cenv: ClaudeEnv) -> list[Path]:
    return sorted(project_dir(cenv.env, cenv.cwd).glob("*.jsonl"))


def off_chain(path: Path) -> int:
    """Main-chain records not on the path from the last one back to the root (0: linear)."""
    records = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    chain = [r for r in records if r.get("uuid") and not r.get("isSidechain")]
    parents = {r["uuid"]: r.get("parentUuid") for r in chain}
    on_path: set[str] = set()
    node: str | None = chain[-1]["uuid"]
    while node is not None and node in parents and node not in on_path:
        on_path.add(node)
        node = parents[node]
    return len(chain) - len(on_path)


def stored(home: Path) -> tuple[Any, list[dict[str, Any]]]:
    with SessionStore.open(home) as store:
        [session] = store.list_sessions()
        return session, [orjson.loads(body) for _, body in store.raw_envelopes(session.id)]


def ended_cleanly(t: HappyTui, cenv: ClaudeEnv, home: Path) -> tuple[Any, list[dict[str, Any]]]:
    """After happy exited 0: the terminal as it was, one transcript with a linear chain; the
    stored session and its envelopes."""
    assert t.stty_before == t.stty_after
    [transcript] = transcripts(cenv)
    assert off_chain(transcript) == 0
    session, envelopes = stored(home)
    assert transcript.stem == session.claude_session_id
    return session, envelopes


def texts(envelopes: list[dict[str, Any]], role: str) -> list[str]:
    return [e["ev"]["text"] for e in envelopes if e["ev"]["t"] == "text" and e["role"] == role]


def test_remote_screen_to_tui_with_ctrl_t(tui: Any, cenv: ClaudeEnv, tmp_path: Path) -> None:
    t: HappyTui = tui("--happy-remote")
    t.expect_screen("remote")
    t.child.send("hello remote one\r")
    t.expect_screen("Echo: hello remote one")
    t.wait_turn_end(1)
    mark = len(t.seen)
    t.child.send("\x14")  # Ctrl-T: local mode
    wait_tui_ready(t, mark)
    t.expect_screen("hello remote one", since=mark)  # the TUI shows the conversation so far
    t.submit("hello local two")
    t.wait_turn_end(2)
    assert t.exit() == 0
    session, envelopes = ended_cleanly(t, cenv, tmp_path / "home")
    assert session.status == "completed"
    assert texts(envelopes, "user") == ["hello remote one", "hello local two"]
    assert texts(envelopes, "agent") == ["Echo: hello remote one", "Echo: hello local two"]
    ends = [e["ev"]["status"] for e in envelopes if e["ev"]["t"] == "turn-end"]
    assert ends == ["completed", "completed"]


def test_local_then_send_from_elsewhere_then_ctrl_t_back(tui: Any, cenv: ClaudeEnv, tmp_path: Path) -> None:
    """The issue's round trip: one Claude session, one linear transcript, every prompt and reply
    exactly once in the store, the events file and `happy watch`; the terminal as it was."""
    t: HappyTui = tui()
    t.wait_ready()
    t.submit("hello local one")
    t.wait_turn_end(1)
    watcher = subprocess.Popen(
        [happy_executable(), "watch", "--from-start", "--json"],
        env=t.env,
        cwd=t.cenv.cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        sent = happy(t, "send", "hello remote two")
        assert sent.returncode == 0, sent.stderr
        t.expect_screen("Echo: hello remote two")  # the remote screen shows the reply
        t.wait_turn_end(2)
        mark = len(t.seen)
        t.child.send("\x14")  # Ctrl-T: back to the TUI
        wait_tui_ready(t, mark)
        t.submit("hello local three")
        t.wait_turn_end(3)
        assert t.exit() == 0
        watched, _ = watcher.communicate(timeout=30)
    finally:
        watcher.kill()
    assert watcher.returncode == 0
    session, envelopes = ended_cleanly(t, cenv, tmp_path / "home")
    assert session.status == "completed"
    prompts = ["hello local one", "hello remote two", "hello local three"]
    assert texts(envelopes, "user") == prompts
    assert texts(envelopes, "agent") == [f"Echo: {p}" for p in prompts]
    ends = [e["ev"]["status"] for e in envelopes if e["ev"]["t"] == "turn-end"]
    assert ends == ["completed"] * 3
    assert [orjson.loads(line) for line in watched.splitlines()] == envelopes
    assert [e["id"] for e in t.events()] == [e["id"] for e in envelopes]
    with SessionStore.open(tmp_path / "home") as store:
        assert store.pending_inbound(session.id) == []
        assert store.continuity_break(session.id) is None


def turn_ends(envelopes: list[dict[str, Any]]) -> list[str]:
    return [e["ev"]["status"] for e in envelopes if e["ev"]["t"] == "turn-end"]


def answered(envelopes: list[dict[str, Any]], text: str) -> bool:
    """The turn that answered `text` has ended. The events file is the session's, so it also holds
    the turn ends of the runs before: any turn end would not do (Ctrl-C would interrupt)."""
    turns = {e["turn"] for e in envelopes if e["ev"]["t"] == "text" and e["ev"]["text"] == text}
    return any(e["ev"]["t"] == "turn-end" and e["turn"] in turns for e in envelopes)


def test_switch_to_remote_while_the_tui_is_mid_turn(tui: Any, cenv: ClaudeEnv, tmp_path: Path) -> None:
    t: HappyTui = tui()
    t.wait_ready()
    t.submit("use slow please")
    t.expect_screen("word2")  # streaming
    switched = happy(t, "switch", "--to", "remote")
    assert switched.returncode == 0, switched.stderr
    t.wait_events(lambda evs: turn_ends(evs) == ["cancelled"], 30, "the interrupted turn's end")
    t.expect_screen("remote")
    sent = happy(t, "send", "hello after")
    assert sent.returncode == 0, sent.stderr
    t.expect_screen("Echo: hello after")
    t.wait_turn_end(2)
    t.child.send("\x03")
    t.child.send("\x03")  # Ctrl-C twice when idle: exit
    assert t.wait_exit() == 0
    _, envelopes = ended_cleanly(t, cenv, tmp_path / "home")
    assert texts(envelopes, "user") == ["use slow please", "hello after"]
    [partial, reply] = texts(envelopes, "agent")
    assert partial.startswith("word0 word1") and reply == "Echo: hello after"  # nothing lost
    assert turn_ends(envelopes) == ["cancelled", "completed"]


def test_switch_to_local_while_remote_is_mid_turn(tui: Any, cenv: ClaudeEnv, tmp_path: Path) -> None:
    t: HappyTui = tui("--happy-remote")
    t.expect_screen("remote")
    t.child.send("use slow please\r")
    t.expect_screen("word2")  # the remote screen's streaming preview
    mark = len(t.seen)
    switched = happy(t, "switch", "--to", "local")
    assert switched.returncode == 0, switched.stderr
    wait_tui_ready(t, mark)
    t.wait_events(lambda evs: turn_ends(evs) == ["cancelled"], 30, "the interrupted turn's end")
    t.submit("hello after")
    t.wait_turn_end(2)
    assert t.exit() == 0
    _, envelopes = ended_cleanly(t, cenv, tmp_path / "home")
    assert texts(envelopes, "user") == ["use slow please", "hello after"]
    [partial, reply] = texts(envelopes, "agent")
    assert partial.startswith("word0 word1") and reply == "Echo: hello after"
    assert turn_ends(envelopes) == ["cancelled", "completed"]


def test_a_message_acknowledged_before_happy_is_killed_is_delivered_once_on_resume(
    tui: Any, cenv: ClaudeEnv, fake: FakeAnthropic, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    t: HappyTui = tui()
    t.wait_ready()
    claude = t.claude_pid()
    t.submit("hello local one")
    t.wait_turn_end(1)
    sent = happy(t, "send", "--id", "m-1", "hello while dying")
    assert sent.returncode == 0, sent.stderr
    os.kill(t.happy_pid(), signal.SIGKILL)  # acknowledged; the switch to deliver it takes ~1 s
    assert wait_pid_gone(claude, 10)  # the TUI ends with its terminal
    session, before = stored(home)
    with SessionStore.open(home) as store:
        assert [m.id for m in store.pending_inbound(session.id)] == ["m-1"]  # Claude had not taken it
    assert happy(t, "send", "--id", "m-1", "hello while dying").returncode != 0  # nobody to take it now

    again: HappyTui = tui("--resume", session.claude_session_id)
    again.expect_screen("Echo: hello while dying", timeout=60)  # delivered through remote mode
    again.wait_events(lambda evs: answered(evs, "Echo: hello while dying"), 30, "its turn end")
    again.child.send("\x03")
    again.child.send("\x03")
    assert again.wait_exit() == 0
    resumed, after = stored(home)
    assert resumed.id == session.id  # the same happy session, continued
    assert after[: len(before)] == before  # nothing sent twice: the earlier envelopes stand as they were
    assert len({e["id"] for e in after}) == len(after)
    assert texts(after, "user") == ["hello local one", "hello while dying"]
    assert texts(after, "agent") == ["Echo: hello local one", "Echo: hello while dying"]
    asked = [r for r in fake.requests if r.last_user_text == "hello while dying"]
    assert len(asked) == 1  # Claude saw it once
    with SessionStore.open(home) as store:
        assert store.pending_inbound(session.id) == []


def test_a_message_claude_took_but_never_answered_before_the_kill_is_answered_once_on_resume(
    tui: Any, cenv: ClaudeEnv, fake: FakeAnthropic, script: Script, tmp_path: Path
) -> None:
    home, held = tmp_path / "home", [60.0]  # the first answer never comes: Claude dies waiting

    def answer(req: Any) -> Reply:
        return Reply([Text("Echo: " + req.last_user_text)], delay=held.pop() if held else 0.0)

    script.add(Rule(answer, exact="hold me"))
    t: HappyTui = tui()
    t.wait_ready()
    t.submit("hello local one")
    t.wait_turn_end(1)
    assert happy(t, "send", "--id", "m-1", "hold me").returncode == 0  # through remote mode
    fake.wait_until(lambda reqs: any(r.last_user_text == "hold me" for r in reqs), 60)
    claude = t.front_pid()  # remote mode's Claude: it wrote the prompt down and waits on the API
    os.kill(t.happy_pid(), signal.SIGKILL)
    os.kill(claude, signal.SIGKILL)  # Claude dies with happy (as seen in the soak, seed 9)
    assert wait_pid_gone(claude, 10)
    session, before = stored(home)

    again: HappyTui = tui("--resume", session.claude_session_id)
    again.expect_screen("Echo: hold me", timeout=60)  # sent again, through remote mode
    again.wait_events(lambda evs: answered(evs, "Echo: hold me"), 30, "its turn end")
    again.child.send("\x03")
    again.child.send("\x03")
    assert again.wait_exit() == 0
    resumed, after = stored(home)
    assert resumed.id == session.id and after[: len(before)] == before
    assert texts(after, "user") == ["hello local one", "hold me"]  # its text shown once
    assert texts(after, "agent") == ["Echo: hello local one", "Echo: hold me"]
    assert len([r for r in fake.requests if r.last_user_text == "hold me"]) == 2  # the first unanswered


def test_clients_at_once_garbage_and_a_stalled_reader_never_block_the_session(
    tui: Any, cenv: ClaudeEnv, fake: FakeAnthropic, tmp_path: Path
) -> None:
    t: HappyTui = tui()
    t.wait_ready()
    path = socket_path(tmp_path / "home", t.happy_pid())
    stalled = socket.socket(socket.AF_UNIX)
    stalled.connect(str(path))
    stalled.sendall(b'{"type": "subscribe", "id": "s", "after_seq": 0}\n')  # and never reads again
    garbage = socket.socket(socket.AF_UNIX)
    garbage.connect(str(path))
    garbage.sendall(b"\x00\xffnot json\n")
    assert b'"type":"error"' in garbage.recv(4096).replace(b" ", b"")
    senders = [
        subprocess.Popen(
            [happy_executable(), "send", "--id", f"m-{n}", f"hello at once {n}"],
            env=t.env,
            cwd=t.cenv.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(2)
    ]
    for sender in senders:
        _, err = sender.communicate(timeout=60)
        assert sender.returncode == 0, err
    t.wait_turn_end(2, timeout=60)
    garbage.sendall(b'{"type": "status", "id": "st"}\n')  # still served after the garbage
    assert b'"mode":"remote"' in garbage.recv(65536).replace(b" ", b"")
    t.child.send("\x03")
    t.child.send("\x03")
    assert t.wait_exit() == 0
    stalled.close()
    garbage.close()
    _, envelopes = stored(tmp_path / "home")
    assert sorted(texts(envelopes, "user")) == ["hello at once 0", "hello at once 1"]
    assert sorted(texts(envelopes, "agent")) == ["Echo: hello at once 0", "Echo: hello at once 1"]
    for n in range(2):
        assert len([r for r in fake.requests if r.last_user_text == f"hello at once {n}"]) == 1


def test_a_headless_run_is_watched_but_takes_no_messages(cenv: ClaudeEnv, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}

    def verb(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [happy_executable(), *args], env=env, cwd=cenv.cwd, capture_output=True, text=True, timeout=60
        )

    run = subprocess.Popen(
        [happy_executable(), "claude", "-p", "use slow please"],
        env=env,
        cwd=cenv.cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_file(socket_path(home, run.pid), 30)  # happy serves its session
        watcher = subprocess.Popen(
            [happy_executable(), "watch", "--from-start", "--json"],
            env=env,
            cwd=cenv.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert watcher.stdout is not None
        first = watcher.stdout.readline()  # live: the prompt, while Claude is still streaming
        assert b'"use slow please"' in first
        refused = verb("send", "hello")
        assert refused.returncode != 0 and "takes no messages" in refused.stderr
        listed = verb("sessions").stdout
        assert "running" in listed and " headless " in listed, listed
        with SessionStore.open(home) as store:  # as the launcher noted it: listed without asking it
            assert [s.mode for s in store.session_summaries() if s.info.status == "running"] == ["headless"]
        out, _ = run.communicate(timeout=60)
        watched = watcher.stdout.read()  # to EOF: watch ends with the session (the test's timeout bounds it)
        assert watcher.wait(timeout=30) == 0
    finally:
        run.kill()
    assert run.returncode == 0 and out.decode().startswith("word0")
    _, envelopes = stored(home)
    got = [orjson.loads(line) for line in (first + watched).splitlines()]
    assert [(e["ev"]["t"], e["id"]) for e in got] == [(e["ev"]["t"], e["id"]) for e in envelopes]
    assert got == envelopes


def claude_id_of_the_run(t: HappyTui) -> str:
    """The Claude session id the running session is bound to (from the store, once it is)."""
    found: list[str] = []

    def bound() -> bool:
        with SessionStore.open(t.home) as store:
            found[:] = [s.claude_session_id for s in store.list_sessions() if s.claude_session_id]
        return bool(found)

    t.wait(bound, 30, "the session bound to its Claude session")
    return found[0]


@pytest.mark.parametrize("start", ["remote", "local"])
def test_back_to_the_tui_before_any_prompt_on_the_same_session(
    tui: Any, cenv: ClaudeEnv, tmp_path: Path, start: str
) -> None:
    """Remote mode before the first prompt: no transcript to resume, so the TUI starts the session
    under its id (issue 16 §2b)."""
    if start == "remote":
        t: HappyTui = tui("--happy-remote")
    else:
        t = tui()
        t.wait_ready()
        assert happy(t, "switch", "--to", "remote").returncode == 0
    t.expect_screen("remote")
    claude_id = claude_id_of_the_run(t)
    mark = len(t.seen)
    switched = happy(t, "switch", "--to", "local")
    assert switched.returncode == 0, switched.stderr
    wait_tui_ready(t, mark)
    t.submit("hello local one")
    t.wait_turn_end(1)
    assert t.exit() == 0
    session, envelopes = ended_cleanly(t, cenv, tmp_path / "home")
    assert session.status == "completed" and session.claude_session_id == claude_id
    assert texts(envelopes, "user") == ["hello local one"]
    assert texts(envelopes, "agent") == ["Echo: hello local one"]


def ours(home: Path) -> list[int]:
    """The processes still running with this test's happy home in their environment."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # not a process, or gone meanwhile
            continue
        if f"HAPPY_HOME_DIR={home}".encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize(
    ("start", "to", "sig", "in_the_gap"),
    [
        pytest.param("local", "remote", signal.SIGTERM, False, id="to-remote-SIGTERM-at-once"),
        pytest.param("local", "remote", signal.SIGHUP, True, id="to-remote-SIGHUP-once-the-TUI-is-gone"),
        pytest.param("remote", "local", signal.SIGTERM, False, id="to-local-SIGTERM-at-once"),
        pytest.param("remote", "local", signal.SIGHUP, True, id="to-local-SIGHUP-once-the-SDK-is-gone"),
    ],
)
def test_a_signal_during_a_switch_ends_happy_as_anywhere_else(
    tui: Any, start: str, to: str, sig: signal.Signals, in_the_gap: bool
) -> None:
    """Issue 16 §2a: the switch is abandoned, Claude stopped, the turn and the session end
    `cancelled`, the socket removed, the terminal restored, and happy exits 128 + n."""
    t: HappyTui = tui("--happy-remote") if start == "remote" else tui()
    if start == "remote":
        t.expect_screen("remote")
        t.child.send("use slow please\r")
    else:
        t.wait_ready()
        t.submit("use slow please")
    t.expect_screen("word2")  # mid-turn
    pid, front = t.happy_pid(), t.front_pid()
    switched = happy(t, "switch", "--to", to)
    assert switched.returncode == 0, switched.stderr
    if in_the_gap:  # the old front end is gone; the new one may still be starting
        assert wait_pid_gone(front, 15)
    os.kill(pid, sig)
    ended_by_signal(t, pid, sig)


def ended_by_signal(t: HappyTui, pid: int, sig: signal.Signals) -> None:
    """happy (`pid`) got `sig`: it exits 128 + n within a bound, the terminal as it was, the turn
    and the session ended `cancelled`, its socket removed, no Claude of it left running."""
    assert t.wait_exit(timeout=15) == 128 + sig
    assert t.stty_after == t.stty_before
    session, envelopes = stored(t.home)
    assert session.status == "cancelled"
    assert turn_ends(envelopes) == ["cancelled"]
    assert not socket_path(t.home, pid).exists()
    assert all(wait_pid_gone(left, 5) for left in ours(t.home)), "a Claude outlived happy"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_in_remote_mode_mid_turn_ends_happy(tui: Any, sig: signal.Signals) -> None:
    t: HappyTui = tui("--happy-remote")
    t.expect_screen("remote")
    t.child.send("use slow please\r")
    t.expect_screen("word2")
    pid = t.happy_pid()
    t.front_pid()  # the SDK's Claude: ended on teardown if happy left it
    os.kill(pid, sig)
    ended_by_signal(t, pid, sig)
