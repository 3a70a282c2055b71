"""`happy claude` without a terminal (and with `-p`): Claude gets our stdin, stdout and stderr as
they are, so a script sees exactly what `claude` gives it, and the run is still mirrored.

Each comparison runs the real bundled Claude twice in the same test, once as `happy claude …` and
once as `claude …`, with the same arguments, environment and fake Messages API, and compares
stdout byte for byte (JSON outputs: up to ids, times, costs and durations), stderr and the exit code.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import pytest

from happy_launcher.store.sessions import SessionStore
from tests.support.claude_env import ClaudeEnv
from tests.support.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, Script, Text
from tests.support.happy_tui import checked_envelope, happy_executable

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

HAPPY = happy_executable()
SLOW = "SLOW-REPLY"


def echo(req: RecordedRequest) -> Reply:
    if SLOW in req.last_user_text:  # long enough to be interrupted mid-stream
        return Reply([Text(" ".join(f"word{i}" for i in range(400)))], chunk_delay=0.05, chunk_size=8)
    return Reply([Text("Echo: " + req.last_user_text)])


@pytest.fixture
def script() -> Script:
    return Script(fallback=echo)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "happy"  # not made: happy makes it (one test makes it read-only first)


def env_for(cenv: ClaudeEnv, home: Path) -> dict[str, str]:
    return {**cenv.env, "HAPPY_HOME_DIR": str(home), "HAPPY_CLAUDE_PATH": str(cenv.binary)}


def run(
    argv: list[str], cenv: ClaudeEnv, home: Path, *, stdin: bytes | None = None, **kw: Any
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        argv,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        env=env_for(cenv, home),
        cwd=cenv.cwd,
        timeout=45,
        check=False,
        **kw,
    )


def both(
    cenv: ClaudeEnv, home: Path, *args: str, stdin: bytes | None = None
) -> tuple[subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes]]:
    """(happy claude ARGS, claude ARGS)."""
    return (
        run([HAPPY, "claude", *args], cenv, home, stdin=stdin),
        run([str(cenv.binary), *args], cenv, home, stdin=stdin),
    )


_VOLATILE_KEYS = {"session_id", "uuid", "request_id", "timestamp", "id", "messaging_socket_path"}
_VOLATILE_NUMBER = re.compile(r"(_ms|Ms|cost|Cost|USD|duration)")


def normalized(value: Any, key: str = "") -> Any:
    """`value` with ids, times, costs and durations blanked, for comparing two runs."""
    if isinstance(value, dict):
        return {k: normalized(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalized(v, key) for v in value]
    if key in _VOLATILE_KEYS or (isinstance(value, int | float) and _VOLATILE_NUMBER.search(key)):
        return "<volatile>"
    return value


def mirrored(home: Path) -> list[dict[str, Any]]:
    with SessionStore.open(home) as store:
        (session,) = store.list_sessions()
        return [checked_envelope(body) for _, body in store.raw_envelopes(session.id)]


def session_status(home: Path) -> tuple[str, str | None]:
    with SessionStore.open(home) as store:
        (session,) = store.list_sessions()
        return session.status, session.claude_session_id


def kinds(envelopes: list[dict[str, Any]]) -> list[str]:
    return [
        e["ev"]["t"] if e["ev"]["t"] != "turn-end" else f"turn-end:{e['ev']['status']}" for e in envelopes
    ]


# --------------------------------------------------------------------------------------------------


def test_text_output_is_byte_identical_and_mirrored(cenv: ClaudeEnv, home: Path) -> None:
    ours, theirs = both(cenv, home, "-p", "hello")
    assert ours.stdout == theirs.stdout == b"Echo: hello\n"
    assert ours.stderr == theirs.stderr == b""
    assert ours.returncode == theirs.returncode == 0
    envelopes = mirrored(home)
    assert kinds(envelopes) == ["text", "turn-start", "text", "turn-end:completed"]
    assert [e["ev"]["text"] for e in envelopes if e["ev"]["t"] == "text"] == ["hello", "Echo: hello"]
    status, claude_id = session_status(home)
    assert status == "completed" and claude_id is not None
    assert cenv.transcript_path(claude_id).is_file()


def test_json_output_parses_and_matches(cenv: ClaudeEnv, home: Path) -> None:
    ours, theirs = both(cenv, home, "-p", "--output-format", "json", "hello")
    assert ours.returncode == theirs.returncode == 0
    assert ours.stdout.endswith(b"}\n") and b"\r" not in ours.stdout and b"\x1b" not in ours.stdout
    assert normalized(orjson.loads(ours.stdout)) == normalized(orjson.loads(theirs.stdout))


def test_stream_json_has_no_lines_of_ours(cenv: ClaudeEnv, home: Path) -> None:
    ours, theirs = both(cenv, home, "-p", "--output-format", "stream-json", "--verbose", "hello")
    assert ours.returncode == theirs.returncode == 0
    our_lines = [orjson.loads(line) for line in ours.stdout.splitlines()]  # every line is JSON
    their_lines = [orjson.loads(line) for line in theirs.stdout.splitlines()]
    assert [(m["type"], m.get("subtype")) for m in our_lines] == [
        (m["type"], m.get("subtype")) for m in their_lines
    ]
    assert not any(m.get("subtype", "").startswith("hook_") for m in our_lines)
    assert normalized(our_lines[1:]) == normalized(their_lines[1:])  # all but init (paths, pids)


def test_stderr_stays_separate_and_exit_codes_match(cenv: ClaudeEnv, home: Path) -> None:
    ours, theirs = both(cenv, home, "-p", "--bogus-flag", "hello")
    assert ours.stdout == theirs.stdout == b""
    assert b"bogus" in theirs.stderr and ours.stderr == theirs.stderr
    assert ours.returncode == theirs.returncode != 0


def test_piped_stdin_is_claudes(cenv: ClaudeEnv, home: Path, fake: FakeAnthropic) -> None:
    ours, theirs = both(cenv, home, "-p", stdin=b"hi\n")
    assert ours.stdout == theirs.stdout == b"Echo: hi\n"
    assert ours.returncode == theirs.returncode == 0
    ours, theirs = both(cenv, home, "-p", "summarize", stdin=b"1\n2\n3\n")
    assert ours.stdout == theirs.stdout
    assert ours.returncode == theirs.returncode == 0
    assert "1\n2\n3" in fake.requests[-2].last_user_text  # happy's run, before claude's


def test_no_prompt_and_no_terminal_exits_at_once_like_claude(cenv: ClaudeEnv, home: Path) -> None:
    ours, theirs = both(cenv, home)  # stdin is /dev/null, no -p
    assert ours.returncode == theirs.returncode == 1
    assert ours.stdout == theirs.stdout
    assert ours.stderr == theirs.stderr and b"Input must be provided" in ours.stderr


def test_events_to_an_inherited_fd(cenv: ClaudeEnv, home: Path, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    with events.open("wb") as out:
        fd = out.fileno()  # inherited by happy under the same number
        done = run([HAPPY, "claude", "--happy-events", f"fd:{fd}", "-p", "hello"], cenv, home, pass_fds=(fd,))
    assert done.returncode == 0 and done.stdout == b"Echo: hello\n"
    written = [orjson.loads(line) for line in events.read_bytes().splitlines()]
    assert written == mirrored(home)


@pytest.mark.parametrize(
    ("spec", "message"),
    [("-", b"would mix envelopes into Claude's own output"), ("fd:7", b"fd 7 is not open")],
)
def test_events_that_cannot_work_are_refused_before_claude(
    cenv: ClaudeEnv, home: Path, fake: FakeAnthropic, spec: str, message: bytes
) -> None:
    done = run([HAPPY, "claude", "--happy-events", spec, "-p", "hello"], cenv, home)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.startswith(b"happy: ") and message in done.stderr
    assert done.stderr.count(b"\n") == 1
    assert fake.requests == []  # Claude never started


def test_events_write_failure_is_reported_at_exit(cenv: ClaudeEnv, home: Path) -> None:
    done = run([HAPPY, "claude", "--happy-events", "/dev/full", "-p", "hello"], cenv, home)
    assert done.returncode == 0 and done.stdout == b"Echo: hello\n"
    assert done.stderr == (
        b"happy: events file /dev/full: No space left on device: envelopes from then on were not written"
        b" there\n"
    )
    assert "turn-end:completed" in kinds(mirrored(home))  # the store has everything


@pytest.mark.parametrize("kind", ["proc", "file", "read-only"])
def test_an_unusable_home_runs_claude_unmirrored(cenv: ClaudeEnv, tmp_path: Path, kind: str) -> None:
    wrap: list[str] = []
    if kind == "proc":
        home = Path("/proc/self")
    elif kind == "file":
        home = tmp_path / "a-file"
        home.write_text("")
    else:
        home = tmp_path / "ro"
        home.mkdir(mode=0o500)
        wrap = read_only_mount(home)
    ours = run([*wrap, HAPPY, "claude", "-p", "hello"], cenv, home)
    assert ours.returncode == 0 and ours.stdout == b"Echo: hello\n"
    assert ours.stderr.startswith(b"happy: ") and ours.stderr.count(b"\n") == 1
    assert b"running Claude without mirroring" in ours.stderr
    events = str(tmp_path / "events.jsonl")
    with_events = run([*wrap, HAPPY, "claude", "--happy-events", events, "-p", "x"], cenv, home)
    assert with_events.returncode == 2 and b"needed for --happy-events" in with_events.stderr


def read_only_mount(path: Path) -> list[str]:
    """A prefix that runs a command with `path` on a read-only mount. Root can write in a 0500
    directory, so as root the test uses a private mount namespace with a read-only bind mount."""
    if os.geteuid() != 0:
        return []
    p = shlex.quote(str(path))
    setup = f'mount --make-rprivate / && mount --bind {p} {p} && mount -o remount,bind,ro {p} && exec "$@"'
    return ["unshare", "--mount", "sh", "-c", setup, "sh"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_happy_reaches_claude_and_closes_the_turn(
    cenv: ClaudeEnv, home: Path, fake: FakeAnthropic, sig: signal.Signals
) -> None:
    proc = subprocess.Popen(
        [HAPPY, "claude", "-p", f"{SLOW} please"],
        env=env_for(cenv, home),
        cwd=cenv.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        fake.wait_for_requests(1, timeout=30)
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == 128 + sig
    status, _ = session_status(home)
    assert status == "cancelled"
    assert kinds(mirrored(home))[-1] == "turn-end:cancelled"


def test_the_next_start_ends_the_session_of_a_killed_happy(
    cenv: ClaudeEnv, home: Path, fake: FakeAnthropic
) -> None:
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        [HAPPY, "claude", "--happy-events", f"fd:{write_end}", "-p", f"{SLOW} please"],
        env=env_for(cenv, home),
        cwd=cenv.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(write_end,),
        start_new_session=True,  # its own process group: Claude goes down with it below
    )
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as events:
            read_until(events, b'"role":"user"')  # the prompt is on record
        (home / "run" / f"{proc.pid}-left").mkdir()  # what a TUI run leaves: its hook channel
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert session_status(home)[0] == "running"  # nobody was left to say otherwise
    done = run([HAPPY, "claude", "-p", "hello"], cenv, home)
    assert done.returncode == 0
    with SessionStore.open(home) as store:
        killed = next(s for s in store.list_sessions() if s.status != "completed")
        closing = orjson.loads(store.raw_envelopes(killed.id)[-1][1])
    assert killed.status == "failed" and killed.ended_at is not None
    assert closing["ev"] == {"t": "turn-end", "status": "failed"}
    assert list((home / "run").iterdir()) == []


def read_until(stream: BinaryIO, needle: bytes, timeout: float = 30) -> None:
    """Read envelope lines from a pipe until one holds `needle` (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([stream], [], [], left)[0]:
            raise TimeoutError(f"no envelope with {needle!r} within {timeout} s")
        line = stream.readline()
        if not line:
            raise EOFError(f"the events pipe closed before an envelope with {needle!r}")
        if needle in line:
            return


def test_resume_continue_and_fork_mirror_only_what_is_new(cenv: ClaudeEnv, home: Path) -> None:
    """The session id is known without a hook: pre-assigned, resumed, forked (pre-assigned), or
    for --continue the transcript that grows. A resumed session continues its happy session
    (same id, seqs go on) and its history is not sent again; a fork is a new happy session."""
    sent: dict[str, int] = {}  # happy session id -> envelopes seen so far

    def happy(*args: str) -> tuple[str, str, list[str]]:
        """(happy session id, Claude session id, texts mirrored by this run) of one run."""
        done = run([HAPPY, "claude", "-p", *args], cenv, home)
        assert done.returncode == 0 and done.stdout == f"Echo: {args[-1]}\n".encode(), done.stderr
        with SessionStore.open(home) as store:
            session = max(store.list_sessions(), key=lambda s: s.ended_at or 0)
            rows = store.raw_envelopes(session.id, after_seq=sent.get(session.id, 0))
        assert [seq for seq, _ in rows] == list(range(sent.get(session.id, 0) + 1, rows[-1][0] + 1))
        sent[session.id] = rows[-1][0]
        bodies = [orjson.loads(body) for _, body in rows]
        assert session.claude_session_id is not None and session.status == "completed"
        assert kinds(bodies) == ["text", "turn-start", "text", "turn-end:completed"]
        texts = [e["ev"]["text"] for e in bodies if e["ev"]["t"] == "text"]
        return session.id, session.claude_session_id, texts

    happy_id, first, texts = happy("first")
    assert texts == ["first", "Echo: first"]
    assert happy("--resume", first, "second") == (happy_id, first, ["second", "Echo: second"])
    assert happy("--continue", "third") == (happy_id, first, ["third", "Echo: third"])
    fork_happy_id, forked, texts = happy("--resume", first, "--fork-session", "fourth")
    assert forked != first and texts == ["fourth", "Echo: fourth"]
    assert fork_happy_id != happy_id
    assert cenv.transcript_path(forked).is_file()
