"""The control verbs as a user runs them (`happy send|watch|…` in a subprocess) against a control
server over a FakeController, with a real store in HAPPY_HOME_DIR."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import anyio
import orjson
import pexpect
import pytest

from happy_launcher.control.fake import FakeController
from happy_launcher.control.server import serve
from happy_launcher.control.sockets import make_control_dir
from happy_launcher.home.dirs import socket_path
from happy_launcher.home.procs import ProcessId, this_process
from happy_launcher.protocol import (
    Envelope,
    EnvelopeFactory,
    SequentialIds,
    TextEv,
    ToolCallEndEv,
    ToolCallStartEv,
    ToolStatus,
)
from happy_launcher.session.ports import MAX_MESSAGE, PermissionRequest
from happy_launcher.store.sessions import SessionStore
from tests.support.control import Envelopes, facts, running, stored_session
from tests.support.happy_tui import happy_executable

pytestmark = pytest.mark.anyio
HAPPY = happy_executable()
DEAD_PID = 4_194_304 + 7  # above the kernel's pid_max


def env(home: Path) -> dict[str, str]:
    return {**os.environ, "HAPPY_HOME_DIR": str(home), "COLUMNS": "200"}


async def happy(home: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return await anyio.run_process([HAPPY, *args], input=stdin, env=env(home), check=False)


def store_session(
    home: Path, session_id: str, owner: ProcessId | None, *, claude_id: str | None = None
) -> None:
    store = SessionStore.open(home)
    try:
        store.create_session(session_id, cwd="/work/project", started_at=1_700_000_000_000, owner=owner)
        if claude_id is not None:
            store.record_claude_session(
                session_id, claude_id, source="startup", seen_at=1, transcript_path=None
            )
    finally:
        store.close()


@asynccontextmanager
async def live_session(home: Path) -> AsyncIterator[FakeController]:
    """A running session `hs-alpha` (this process is its launcher) serving its control socket."""
    store_session(home, "hs-alpha", this_process(os.getpid()))
    controller = FakeController(facts())
    async with running(controller, home):
        yield controller


def one_error_line(done: subprocess.CompletedProcess[bytes], *words: str) -> None:
    err = done.stderr.decode()
    assert done.returncode != 0 and err.count("\n") == 1 and err.startswith("happy: "), err
    for word in words:
        assert word in err, err


async def test_send_reaches_the_only_running_session(tmp_path: Path) -> None:
    async with live_session(tmp_path) as controller:
        done = await happy(tmp_path, "send", "hello there", "--id", "m-1")
        piped = await happy(tmp_path, "send", "hs-al", "-", stdin=b"from stdin\n")
        again = await happy(tmp_path, "send", "hello there", "--id", "m-1")
        injected = await happy(tmp_path, "send", "--inject", "typed", "--id", "m-2")
        switched = await happy(tmp_path, "send", "--switch", "sent", "--id", "m-3")
    assert (injected.returncode, switched.returncode) == (0, 0)
    assert [controller.modes[m] for m in ("m-1", "m-2", "m-3")] == [None, "inject", "switch"]
    assert done.returncode == 0 and done.stdout == b"accepted: message m-1\n"
    assert again.stdout == b"already accepted: message m-1\n"
    assert piped.returncode == 0 and [text for _, text in controller.sent.values()] == [
        "hello there",
        "from stdin\n",
        "typed",
        "sent",
    ]


async def test_send_to_a_dead_session_is_one_line_and_a_failure(tmp_path: Path) -> None:
    claude_id = "c0ffee00-0000-4000-8000-00000000dead"
    store_session(tmp_path, "hs-dead", ProcessId(DEAD_PID, None), claude_id=claude_id)
    make_control_dir(tmp_path)
    socket_path(tmp_path, DEAD_PID).touch()  # what a killed launcher leaves behind
    done = await happy(tmp_path, "send", "hs-dead", "hello")
    one_error_line(done, "hs-dead has ended", f"happy claude --resume {claude_id}")
    one_error_line(await happy(tmp_path, "send", "hello"), "no happy session is running")


async def test_an_ambiguous_prefix_is_one_line_and_a_failure(tmp_path: Path) -> None:
    async with live_session(tmp_path) as controller:
        store_session(tmp_path, "hs-alpine", None)
        one_error_line(await happy(tmp_path, "send", "hs-al", "hi"), "'hs-al' matches 2 sessions")
        one_error_line(await happy(tmp_path, "send", "nope", "hi"), "no session matches 'nope'")
    assert not controller.sent


async def test_sessions_shows_a_dead_launcher_as_ended(tmp_path: Path) -> None:
    store_session(tmp_path, "hs-dead", ProcessId(DEAD_PID, None))
    async with live_session(tmp_path):
        table = (await happy(tmp_path, "sessions")).stdout.decode().splitlines()
        rows = [
            orjson.loads(line) for line in (await happy(tmp_path, "sessions", "--json")).stdout.splitlines()
        ]
    assert table[0].split()[:5] == ["HAPPY", "ID", "CLAUDE", "ID", "STATE"]
    by_id = {row["happy_id"]: row for row in rows}
    assert by_id["hs-alpha"]["state"] == "running" and by_id["hs-alpha"]["mode"] == "local"
    assert by_id["hs-dead"]["state"] == "ended" and by_id["hs-dead"]["mode"] is None
    assert any("hs-dead" in line and " ended " in line for line in table)


async def test_sessions_names_each_session_by_claude_s_title_or_its_first_prompt(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    title = {"type": "custom-title", "customTitle": "Renamed \x1b]0;owned\x07 [red]x[/red]"}
    transcript.write_bytes(orjson.dumps(title) + b"\n")
    stored_session(tmp_path, "hs-named", prompt="Ignored", at=2_000, transcript=transcript)
    stored_session(tmp_path, "hs-prompt", prompt="Make it fast\nand small", at=1_000)
    table = (await happy(tmp_path, "sessions")).stdout.decode().splitlines()
    rows = [orjson.loads(line) for line in (await happy(tmp_path, "sessions", "--json")).stdout.splitlines()]
    assert table[0].split()[-2:] == ["CWD", "TITLE"]
    assert table[1].endswith("/work/project  Renamed ␛]0;owned␇ [red]x[/red]")
    assert table[2].endswith("/work/project  Make it fast …")
    assert [(row["happy_id"], row["title"]) for row in rows] == [
        ("hs-named", "Renamed \x1b]0;owned\x07 [red]x[/red]"),
        ("hs-prompt", "Make it fast …"),
    ]
    assert not {"first_prompt", "transcript", "socket"} & rows[0].keys()


async def test_switch_abort_approve_deny(tmp_path: Path) -> None:
    async with live_session(tmp_path) as controller:
        switched = await happy(tmp_path, "switch", "--to", "remote")
        again = await happy(tmp_path, "switch", "--to", "remote")
        aborted = await happy(tmp_path, "abort", "hs-alpha")
        assert [(d.returncode, d.stdout) for d in (switched, again, aborted)] == [
            (0, b"switched to remote\n"),
            (0, b"already in remote mode\n"),
            (0, b"no turn is running\n"),
        ]
        one_error_line(await happy(tmp_path, "approve"), "no permission request is pending")
        controller.request_permission(PermissionRequest(id="perm-1", tool="Bash", input={}, title="Run ls"))
        assert (await happy(tmp_path, "approve")).stdout == b"allowed perm-1\n"
        controller.request_permission(PermissionRequest(id="perm-2", tool="Bash", input={}, title="Run rm"))
        done = await happy(tmp_path, "deny", "hs-alpha", "perm-2", "--message", "not that")
        assert done.stdout == b"denied perm-2\n"
        controller.request_permission(PermissionRequest(id="perm-3", tool="Bash", input={}, title="Run pwd"))
        controller.request_permission(PermissionRequest(id="perm-4", tool="Bash", input={}, title="Run id"))
        assert (await happy(tmp_path, "approve", "perm-4")).stdout == b"allowed perm-4\n"  # a lone request id
        controller.refuse_switch = "a dialog is open in the terminal: answer it first"
        one_error_line(await happy(tmp_path, "switch", "--to", "local"), "answer it first")
    assert controller.facts().mode == "remote" and controller.aborts == 1
    assert controller.answers == [
        ("perm-1", True, None),
        ("perm-2", False, "not that"),
        ("perm-4", True, None),
    ]


async def test_an_error_quoting_session_text_shows_its_escape_sequences(tmp_path: Path) -> None:
    async with live_session(tmp_path) as controller:
        for n in (1, 2):
            request = PermissionRequest(
                id=f"perm-{n}", tool="Bash", input={}, title="\x1b[2J\x1b]0;owned\x07"
            )
            controller.request_permission(request)
        done = await happy(tmp_path, "approve")
    one_error_line(done, "perm-1 (␛[2J␛]0;owned␇)")
    assert b"\x1b" not in done.stderr


async def test_abort_of_a_running_turn_says_so(tmp_path: Path) -> None:
    store_session(tmp_path, "hs-alpha", this_process(os.getpid()))
    async with running(FakeController(facts(busy=True)), tmp_path):
        done = await happy(tmp_path, "abort")
    assert (done.returncode, done.stdout) == (0, b"aborted the running turn\n")


async def test_watch_of_an_ended_session_prints_its_history_as_stored(tmp_path: Path) -> None:
    store_session(tmp_path, "hs-old", None)
    store = SessionStore.open(tmp_path)
    made = Envelopes().make(3)
    store.append_envelopes("hs-old", made)
    store.end_session("hs-old", "completed", 2)
    store.close()
    done = await happy(tmp_path, "watch", "hs-old", "--json")
    assert done.returncode == 0 and done.stdout == b"".join(env.to_json() + b"\n" for env in made)
    pretty = await happy(tmp_path, "watch", "hs-old")
    assert pretty.returncode == 0 and "message 2" in pretty.stdout.decode()


async def test_watch_of_an_ended_session_whose_history_is_lost_says_so_in_one_line(tmp_path: Path) -> None:
    store_session(tmp_path, "hs-lost", None)
    with SessionStore.open(tmp_path) as store:
        store.append_envelopes("hs-lost", Envelopes().make(1))
        store.end_session("hs-lost", "completed", 2)
        lost = store.data_file("hs-lost")
    lost.unlink()
    done = await happy(tmp_path, "watch", "hs-lost", "--json")
    one_error_line(done, str(lost), "is missing", "start a new session")
    assert not lost.exists()


async def test_watch_tells_a_tool_call_that_failed_was_denied_or_cancelled_from_one_that_succeeded(
    tmp_path: Path,
) -> None:
    store_session(tmp_path, "hs-old", None)
    make = EnvelopeFactory(SequentialIds("e"))
    statuses: list[ToolStatus | None] = [None, "failed", "denied", "cancelled"]
    ends = [ToolCallEndEv(call=f"c{i}", status=status) for i, status in enumerate(statuses)]
    store = SessionStore.open(tmp_path)
    store.append_envelopes("hs-old", [make.agent(ev, turn="t1", time=1_700_000_000_000) for ev in ends])
    store.end_session("hs-old", "completed", 2)
    store.close()
    done = await happy(tmp_path, "watch", "hs-old")
    assert done.returncode == 0, done.stderr
    assert [line[9:] for line in done.stdout.decode().splitlines()] == [
        "agent    ← tool done",
        "agent    ✗ tool failed",
        "agent    ✗ tool denied",
        "agent    tool cancelled",
    ]


async def test_watch_follows_a_running_session_until_it_ends(tmp_path: Path) -> None:
    made = Envelopes()
    store_session(tmp_path, "hs-alpha", this_process(os.getpid()))
    controller = FakeController(facts())
    controller.commit(made.make(2))
    async with anyio.create_task_group() as tg:
        await tg.start(partial(serve, controller, tmp_path))
        process = await anyio.open_process(
            [HAPPY, "watch", "--from-start", "--json"], env=env(tmp_path), stdin=subprocess.DEVNULL
        )
        assert process.stdout is not None
        buffered = b""
        while buffered.count(b"\n") < 2:
            buffered += await process.stdout.receive()
        controller.commit(made.make(1))
        while buffered.count(b"\n") < 3:
            buffered += await process.stdout.receive()
        tg.cancel_scope.cancel()  # the session ends
    async with process:
        assert await process.wait() == 0  # and so does watch
    assert buffered.splitlines() == [body for _, body in controller.stored]


async def test_watch_shows_session_text_as_written_and_an_open_request_once(tmp_path: Path) -> None:
    """Titles and text are never rich markup (`[/]` crashed watch) nor escape sequences; a request
    open when watch attaches is listed once (it was twice)."""
    store_session(tmp_path, "hs-alpha", this_process(os.getpid()))
    controller = FakeController(facts())
    make = EnvelopeFactory(SequentialIds("e"))
    tool = ToolCallStartEv(
        call="c1", name="Bash", title="[red]x[/red] \x1b]0;owned\x07", description="", args={}
    )
    text = TextEv(text="[bold]not bold[/bold] \x1b[31mnot red")
    controller.commit([make.agent(ev, turn="t1", time=1_700_000_000_000) for ev in (text, tool)])
    controller.request_permission(PermissionRequest(id="perm-1", tool="Bash", input={}, title="[/]"))
    controller.request_permission(PermissionRequest(id="perm-2", tool="Bash", input={}, title="[red]x[/red]"))
    async with anyio.create_task_group() as tg:
        await tg.start(partial(serve, controller, tmp_path))
        process = await anyio.open_process(
            [HAPPY, "watch", "--from-start"], env=env(tmp_path), stdin=subprocess.DEVNULL
        )
        out, err = process.stdout, process.stderr
        assert out is not None and err is not None
        buffered = b""
        with anyio.fail_after(20):
            while b"owned" not in buffered:  # the last envelope of the history
                try:
                    buffered += await out.receive()
                except anyio.EndOfStream:
                    pytest.fail(f"watch failed: {(await err.receive()).decode()}")
        tg.cancel_scope.cancel()  # the session ends, and so does watch
    assert out is not None and err is not None  # (mypy forgets it past the task group)
    async with process:
        buffered += b"".join([chunk async for chunk in out])
        errors = b"".join([chunk async for chunk in err])
        assert await process.wait() == 0, errors
    lines = buffered.decode().splitlines()
    assert lines[:2] == [
        "permission requested [/] (Bash, id perm-1)",
        "permission requested [red]x[/red] (Bash, id perm-2)",
    ]
    assert [line[9:] for line in lines[2:]] == [  # after the time
        "agent    [bold]not bold[/bold] ␛[31mnot red",
        "agent    → Bash: [red]x[/red] ␛]0;owned␇",
    ]


def ended_session(
    home: Path, made: list[Envelope], session_id: str, cwd: Path, started_at: int
) -> list[bytes]:
    store = SessionStore.open(home)
    try:
        store.create_session(session_id, cwd=str(cwd), started_at=started_at, owner=None)
        store.append_envelopes(session_id, made)
        store.end_session(session_id, "completed", started_at + 1)
    finally:
        store.close()
    return [env.to_json() + b"\n" for env in made]


async def test_watch_without_a_session_takes_the_latest_of_this_directory(tmp_path: Path) -> None:
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    made = Envelopes()
    ended_session(tmp_path, made.make(2), "hs-older", here, 1_000)
    latest = ended_session(tmp_path, made.make(2), "hs-latest", here, 2_000)
    ended_session(tmp_path, made.make(2), "hs-other", elsewhere, 3_000)  # later, but not here

    async def watch(cwd: Path) -> subprocess.CompletedProcess[bytes]:
        return await anyio.run_process(
            [HAPPY, "watch", "--from-start", "--json"], cwd=cwd, env=env(tmp_path), check=False
        )

    done = await watch(here)
    assert done.returncode == 0 and done.stdout == b"".join(latest), done.stderr
    nowhere = await watch(tmp_path)
    one_error_line(nowhere, f"none ran in {tmp_path}: name one")


async def test_a_headless_run_is_listed_as_headless(tmp_path: Path) -> None:
    store_session(tmp_path, "hs-alpha", this_process(os.getpid()))
    async with running(FakeController(facts(mode="headless")), tmp_path):
        done = await happy(tmp_path, "sessions", "--json")
    assert [orjson.loads(line)["mode"] for line in done.stdout.splitlines()] == ["headless"]


async def test_a_lone_mistyped_verb_is_not_sent_to_claude(tmp_path: Path) -> None:
    # No Claude binary: a typo that went on to Claude would fail to find one instead.
    environ = {**env(tmp_path), "HAPPY_CLAUDE_PATH": str(tmp_path / "no-claude"), "PATH": "/nonexistent"}
    typo = await anyio.run_process([HAPPY, "sesions"], env=environ, check=False)
    assert typo.returncode == 2 and typo.stderr == (
        b"happy: did you mean `happy sessions`? (to ask Claude, use `happy claude sesions`)\n"
    )
    prompt = await anyio.run_process([HAPPY, "hello"], env=environ, check=False)
    assert b"did you mean" not in prompt.stderr  # a word, not a typo: it goes to Claude


async def test_send_of_a_message_over_1_mib_says_so(tmp_path: Path) -> None:
    just_fits = '"quoted"\n' * (MAX_MESSAGE // 9)  # JSON escapes make its request line longer than 1 MiB
    async with live_session(tmp_path) as controller:
        fits = await happy(tmp_path, "send", "--id", "m-1", stdin=just_fits.encode())
        too_large = await happy(tmp_path, "send", "--id", "m-2", stdin=b"x" * (MAX_MESSAGE + 1))
    assert fits.returncode == 0, fits.stderr
    assert too_large.returncode == 2
    one_error_line(too_large, "the message is larger than 1 MiB")
    assert list(controller.sent) == ["m-1"]


async def test_sessions_shows_the_front_end_its_launcher_noted_in_the_store(tmp_path: Path) -> None:
    store_session(tmp_path, "hs-live", this_process(os.getpid()))
    with SessionStore.open(tmp_path) as store:
        store.note_front("hs-live", "remote", terminal=True)  # as its launcher does; no socket asked
    done = await happy(tmp_path, "sessions", "--json")
    (row,) = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert (row["happy_id"], row["state"], row["mode"], row["terminal"]) == (
        "hs-live",
        "running",
        "remote",
        True,
    )


@pytest.mark.parametrize("as_json", [False, True], ids=["readable", "json"])
def test_watch_into_a_reader_that_stops_early_ends_quietly_with_0(tmp_path: Path, as_json: bool) -> None:
    with SessionStore.open(tmp_path) as store:
        store.create_session("hs-long", cwd="/x", started_at=1, status="completed")
        store.append_envelopes("hs-long", Envelopes().make(3000, size=100))  # past the pipe's buffer
    argv = [HAPPY, "watch", "--from-start", *(["--json"] if as_json else []), "hs-long"]
    proc = subprocess.Popen(argv, env=env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert b"message 1 " in proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    assert proc.wait(timeout=30) == 0
    assert proc.stderr.read() == b""


def test_ctrl_c_at_a_verb_is_exit_130_and_no_traceback(tmp_path: Path) -> None:
    child = pexpect.spawn(HAPPY, ["send"], env=env(tmp_path), timeout=30)  # reads TEXT from the terminal
    try:
        child.expect("type the message, then Ctrl-D")  # said before it reads
        child.sendline("half a message")
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 130
    assert b"Traceback" not in (child.before or b"")
