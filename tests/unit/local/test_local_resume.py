"""`happy claude --resume` / `--continue` with a stand-in Claude that appends to a large resumed
transcript as soon as it starts: what it writes is mirrored even when the mirror starts reading
(indexing the history) only after that (issue 7). The stand-in and happy meet on a FIFO and on
the hook channel: nothing sleeps."""

from __future__ import annotations

import os
import select
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from happy_launcher.claude.args import parse_happy_claude_args
from happy_launcher.claude.existing import ExistingFiles
from happy_launcher.claude.paths import transcript_path
from happy_launcher.claude.records import Record, make_record
from happy_launcher.home.dirs import ensure_home
from happy_launcher.local.launch import Launch
from happy_launcher.local.launcher import LocalLauncher
from happy_launcher.local.tracker import LocalTracker
from happy_launcher.local.tracking import TrackerFactory
from happy_launcher.protocol import Envelope
from happy_launcher.runner.start import run_started
from happy_launcher.session.config import RunConfig
from happy_launcher.session.core import Session
from happy_launcher.store.sessions import SessionStore
from tests.support.transcripts import assistant, user, write_jsonl

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

NEW = 20  # prompt + reply pairs the stand-in appends

# The stand-in Claude: append NEW prompt/reply pairs at once, then (optionally) run happy's
# SessionStart hook from the --settings overlay, like Claude does for a resumed session, then
# tell the test through the FIFO.
STAND_IN = """
import json, subprocess, sys
transcript, fifo, session_id, fire_hook = {args!r}
with open(transcript, "ab", buffering=0) as f:
    for n in range({new}):
        for kind, text in (("user", f"new prompt {{n}}"), ("assistant", f"new reply {{n}}")):
            content = text if kind == "user" else [{{"type": "text", "text": text}}]
            record = {{"type": kind, "uuid": f"new-{{kind}}-{{n}}", "message": {{"content": content}}}}
            f.write(json.dumps(record).encode() + b"\\n")
if fire_hook:
    settings = json.load(open(sys.argv[sys.argv.index("--settings") + 1]))
    command = settings["hooks"]["SessionStart"][-1]["hooks"][-1]["command"]
    payload = {{"hook_event_name": "SessionStart", "session_id": session_id,
               "transcript_path": transcript, "source": "resume"}}
    subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode(), check=True)
if fifo:
    with open(fifo, "w") as f:
        f.write("appended")
"""


def prefill(path: Path, count: int = 8000) -> None:
    """A resumed session's history: ~4 MB of turns."""
    records = []
    for n in range(count // 2):
        records.append(user(f"old-user-{n}", f"old prompt {n} " + "x" * 400))
        records.append(assistant(f"old-assistant-{n}", {"type": "text", "text": "y" * 400}))
    write_jsonl(path, records)


def stand_in(
    tmp_path: Path, transcript: Path, fifo: Path | None, session_id: str, *, fire_hook: bool
) -> Path:
    path = tmp_path / "claude"
    args = (str(transcript), fifo and str(fifo), session_id, fire_hook)
    body = STAND_IN.format(args=args, new=NEW)
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


def wait_for_fifo(fifo: Path, timeout: float = 20.0) -> None:
    """Until the stand-in has written the FIFO (it has appended everything by then)."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, "the stand-in Claude never said it had appended"
    finally:
        os.close(fd)


@pytest.fixture
def std_fds(tmp_path: Path) -> Iterator[tuple[int, int]]:
    stdin = os.open(os.devnull, os.O_RDONLY)
    stdout = os.open(tmp_path / "tty-out", os.O_WRONLY | os.O_CREAT, 0o600)
    yield stdin, stdout
    os.close(stdin)
    os.close(stdout)


def mirrored_uuids(home: Path) -> list[str]:
    with SessionStore.open(home) as store:
        (session,) = store.list_sessions()
        return [e.claudeUuid for _, e in store.envelopes(session.id) if e.claudeUuid is not None]


def expected_new() -> list[str]:
    return [f"new-{kind}-{n}" for n in range(NEW) for kind in ("user", "assistant")]


async def run_local(cfg: RunConfig, *, make_tracker: TrackerFactory | None = None) -> int:
    return await run_started(cfg, LocalLauncher(cfg, make_tracker=make_tracker), mode="local")


def config(tmp_path: Path, argv: list[str], claude: Path, std_fds: tuple[int, int]) -> RunConfig:
    return RunConfig(
        args=parse_happy_claude_args(argv),
        binary=claude,
        env={"HOME": str(tmp_path), "PATH": os.environ["PATH"]},
        cwd=tmp_path,
        home=ensure_home(tmp_path / "happy"),
        stdin_fd=std_fds[0],
        stdout_fd=std_fds[1],
    )


async def test_resume_by_id_mirrors_what_claude_appends_before_the_history_is_indexed(
    tmp_path: Path, std_fds: tuple[int, int]
) -> None:
    session_id = str(uuid.uuid4())
    transcript = transcript_path({"HOME": str(tmp_path)}, tmp_path, session_id)
    prefill(transcript)
    fifo = tmp_path / "appended"
    os.mkfifo(fifo)
    claude = stand_in(tmp_path, transcript, fifo, session_id, fire_hook=False)

    def slow_tracker(
        cfg: RunConfig,
        launch: Launch,
        hook_events: Path | None,
        *,
        existing: ExistingFiles,
        session: Session,
    ) -> LocalTracker:
        wait_for_fifo(fifo)  # the mirror starts only once Claude has appended everything
        return LocalTracker(cfg, launch, hook_events, existing=existing, session=session)

    cfg = config(tmp_path, ["--resume", session_id], claude, std_fds)
    code = await run_local(cfg, make_tracker=slow_tracker)
    assert code == 0
    assert mirrored_uuids(tmp_path / "happy") == expected_new()


async def test_continue_mirrors_what_claude_appends_before_the_hook_names_the_session(
    tmp_path: Path, std_fds: tuple[int, int]
) -> None:
    session_id = str(uuid.uuid4())
    transcript = transcript_path({"HOME": str(tmp_path)}, tmp_path, session_id)
    prefill(transcript)
    write_jsonl(transcript.with_name(f"{uuid.uuid4()}.jsonl"), [user("other", "another session")])
    # Claude picks the session: happy learns it from the hook, which comes after the appends.
    claude = stand_in(tmp_path, transcript, None, session_id, fire_hook=True)
    code = await run_local(config(tmp_path, ["--continue"], claude, std_fds))
    assert code == 0
    assert mirrored_uuids(tmp_path / "happy") == expected_new()


# Claude resuming a transcript whose last 32 KiB hold no `mode` record (here: a tool result bigger
# than that) re-writes its session metadata at start-up, before its SessionStart hook reaches
# happy (issue 16 §1). This stand-in does the same, then waits for the test (FIFO `go`) before it
# runs the hook, then answers one prompt.
REWRITING = """
import json, subprocess, sys
transcript, go, session_id = {args!r}
def append(*records):
    with open(transcript, "ab", buffering=0) as f:
        for record in records:
            f.write(json.dumps(record).encode() + b"\\n")
append({{"type": "last-prompt", "lastPrompt": "Use Bash", "sessionId": session_id}},
       {{"type": "cost-state", "sessionId": session_id}},
       {{"type": "tools-used", "tools": ["Bash"], "sessionId": session_id}})
with open(go) as f:
    f.read()
settings = json.load(open(sys.argv[sys.argv.index("--settings") + 1]))
command = settings["hooks"]["SessionStart"][-1]["hooks"][-1]["command"]
payload = {{"hook_event_name": "SessionStart", "session_id": session_id,
           "transcript_path": transcript, "source": "resume"}}
subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode(), check=True)
append({{"type": "user", "uuid": "late-prompt", "message": {{"content": "after the resume"}}}},
       {{"type": "assistant", "uuid": "late-reply",
         "message": {{"content": [{{"type": "text", "text": "resumed"}}], "stop_reason": "end_turn"}}}})
"""


def tool_turn(session_id: str) -> list[dict[str, object]]:
    """A turn whose last record is a Bash result of 40 KiB: no `mode` record in the last 32 KiB."""
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "seq 9999"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "9" * (40 << 10)}
    return [
        {"type": "mode", "mode": "normal", "sessionId": session_id},
        user("first-prompt", "Use Bash"),
        assistant("first-call", call, stop_reason="tool_use"),
        user("first-result", [result]),
        assistant("first-reply", {"type": "text", "text": "Done."}, stop_reason="end_turn"),
    ]


async def test_metadata_claude_rewrites_before_its_hook_goes_to_the_resumed_happy_session(
    tmp_path: Path, std_fds: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = str(uuid.uuid4())
    transcript = transcript_path({"HOME": str(tmp_path)}, tmp_path, session_id)
    records = tool_turn(session_id)
    write_jsonl(transcript, records)
    home = ensure_home(tmp_path / "happy")
    with Session(home, tmp_path) as first:  # the run that wrote that turn
        first.set_claude_session(session_id, "startup", transcript)
        first.deliver(make_record(r) for r in records)
        happy_id = first.id
    assert happy_id is not None
    go = tmp_path / "go"
    os.mkfifo(go)
    claude = tmp_path / "claude"
    claude.write_text(f"#!{sys.executable}\n" + REWRITING.format(args=(str(transcript), str(go), session_id)))
    claude.chmod(0o755)
    delivered = anyio.Event()

    def tracker(
        cfg: RunConfig,
        launch: Launch,
        hook_events: Path | None,
        *,
        existing: ExistingFiles,
        session: Session,
    ) -> LocalTracker:
        deliver = session.deliver

        def watched(batch: list[Record]) -> list[Envelope]:
            envelopes = deliver(batch)
            if batch:
                delivered.set()  # the re-written metadata was read before the hook was
            return envelopes

        monkeypatch.setattr(session, "deliver", watched)
        return LocalTracker(cfg, launch, hook_events, existing=existing, session=session)

    async def release_the_hook() -> None:
        await delivered.wait()
        await anyio.to_thread.run_sync(go.write_text, "go")

    cfg = config(tmp_path, ["--resume", session_id], claude, std_fds)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(release_the_hook)
            assert await run_local(cfg, make_tracker=tracker) == 0
    with SessionStore.open(home) as store:
        assert [s.id for s in store.list_sessions()] == [happy_id], "the resume split the session"
        stored = list(store.envelopes(happy_id))
    assert [seq for seq, _ in stored] == list(range(1, len(stored) + 1))
    uuids = [e.claudeUuid for _, e in stored if e.claudeUuid is not None]
    assert len(uuids) == len(set(uuids)), "a record was mirrored twice"
    assert uuids[-2:] == ["late-prompt", "late-reply"]
    assert set(uuids[:-2]) <= {"first-prompt", "first-call", "first-result", "first-reply"}
