"""The happy session: one per `happy claude` run, shared by every launcher that drives Claude
during the run (design §5). It owns the store, the happy session id, the current Claude session
id, and the one mirror whose mapper state and dedupe keys carry over from launcher to launcher
and, through the store, from run to run: `happy claude --resume S` continues the happy session
that last held Claude session S instead of starting a new one.

The session is bound to its store row lazily, when the first Claude session id is known or the
first envelope is written, because only then is it known whether this run continues an earlier
happy session (`--continue`, `--resume <title>`: Claude picks the session, and says which).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Self

import orjson

from happy_launcher.claude.keyset import KeySet
from happy_launcher.claude.mapper import Mapper
from happy_launcher.claude.mapper_state import MapperState
from happy_launcher.claude.records import Record
from happy_launcher.home.dirs import run_dir, settings_dir
from happy_launcher.home.procs import is_alive, this_process
from happy_launcher.protocol import Clock, Cuid2Ids, Envelope, IdFactory, TurnStatus, wall_clock_ms
from happy_launcher.session.commit import CommitPoint, CommitStats
from happy_launcher.session.continuity import unanswered_prompt
from happy_launcher.session.events_output import EventsOutput
from happy_launcher.session.inbound import (
    InboundLedger,
    InboundPrompt,
    accept,
    pending_prompts,
    redeliver_unanswered,
)
from happy_launcher.session.mirror import Mirror
from happy_launcher.session.ports import NO_META, Accepted, CommitSubscriber, InputMode, MessageMeta
from happy_launcher.session.sinks import BackgroundSink, EnvelopeSink, JsonLinesSink
from happy_launcher.store.sessions import SessionInfo, SessionStore
from happy_launcher.store.sweep import clean_kept_settings, clean_run_dirs, end_dead_sessions

_log = logging.getLogger(__name__)
# How Claude came to a session id: these continue a conversation that may have a happy session.
_CONTINUING = frozenset({"resume", "continue"})


class Session:
    """One happy session. Use as a context manager, or call `close()`; `end(status)` ends it
    (the launchers only end themselves). `replay`: the run re-sends what its Claude session
    already holds (--happy-replay-existing), so it is a new happy session, never one continued."""

    def __init__(
        self,
        home: Path,
        cwd: Path,
        *,
        events: EventsOutput | None = None,
        clock: Clock = wall_clock_ms,
        ids: IdFactory | None = None,
        replay: bool = False,
    ) -> None:
        self._cwd = cwd
        self._replay = replay  # re-sends its Claude session's history: never continues a happy session
        self._clock = clock
        self._ids = ids if ids is not None else Cuid2Ids()
        self.store = SessionStore.open(home)
        self._events = events
        self._sweep(home)
        self.id: str | None = None  # the happy session id, once bound
        self.claude_session_id: str | None = None
        self._claude_source: str | None = None
        self._mirror: Mirror | None = None
        self._commit: CommitPoint | None = None
        self._subscribers: list[CommitSubscriber] = []
        self._ended = False
        self._adopted = False  # bound to an earlier happy session (resumed)
        self.inbound = InboundLedger()
        self._marks: dict[str, int] = {}  # history marks taken before the session was bound
        self._on_bind: list[Callable[[], None]] = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if not self._ended:
            self.end("failed" if exc_type is not None else "completed")
        self.close()

    # --- binding ------------------------------------------------------------------------------

    @property
    def mirror(self) -> Mirror:
        if self._mirror is None:
            self._bind(None)
        assert self._mirror is not None
        return self._mirror

    @property
    def stats(self) -> CommitStats | None:
        return None if self._commit is None else self._commit.stats

    def set_claude_session(self, claude_session_id: str, source: str, transcript: Path | None) -> None:
        """Claude runs on `claude_session_id` now (`source`: startup, resume, fork, clear, …).
        Told again as it was last told (the SessionStart hook of a start known before the spawn,
        or of a switch back to the TUI), it is recorded once."""
        if (claude_session_id, source) == (self.claude_session_id, self._claude_source):
            return
        if self.id is None:
            earlier = self.store.latest_session_for_claude_id(claude_session_id)
            self._bind(earlier if source in _CONTINUING and not self._replay else None, transcript)
        assert self.id is not None
        self.claude_session_id, self._claude_source = claude_session_id, source
        self.store.record_claude_session(
            self.id,
            claude_session_id,
            source=source,
            seen_at=self._clock(),
            transcript_path=None if transcript is None else str(transcript),
        )

    def _bind(self, earlier: SessionInfo | None, transcript: Path | None = None) -> None:
        owner = this_process(os.getpid())
        state: MapperState | None = None
        seen = KeySet()  # every record's key, for the whole run: compact
        if earlier is not None and self._adoptable(earlier):
            self.id = earlier.id
            saved = self.store.load_mapper_state(earlier.id)
            state = MapperState.from_dict(orjson.loads(saved)) if saved is not None else None
            seen = KeySet(self.store.processed_keys(earlier.id))
            self.store.reopen_session(earlier.id, owner=owner)
            self._adopted = True
            if transcript is not None and (leaf := unanswered_prompt(transcript)) is not None:
                redeliver_unanswered(self.store, earlier.id, leaf, str(uuid.uuid4()))
            for prompt in pending_prompts(self.store, earlier.id):  # what a tail may show taken
                self.inbound.expect(prompt.uuid, prompt.seq, again=prompt.again)
                if prompt.inject and not prompt.again:  # typed by the last run, perhaps, as it stopped
                    self.inbound.expect_text(prompt.text, prompt.seq)
        else:
            self.id = self._ids()
            self.store.create_session(self.id, cwd=str(self._cwd), started_at=self._clock(), owner=owner)
        if self._marks:
            self.store.add_history_marks(self.id, self._marks)
        mapper = Mapper(self._ids, state)
        self._commit = CommitPoint(
            self.store, self.id, self._sinks(), state=_state_of(mapper), delivered=self.inbound.drain
        )
        for subscriber in self._subscribers:
            self._commit.subscribe(subscriber)
        self._mirror = Mirror(mapper, self._commit, self._clock, seen=seen, inbound=self.inbound)
        for callback in self._on_bind:
            callback()

    def when_bound(self, callback: Callable[[], None]) -> None:
        """Call `callback` once the session is bound (now, if it is): only then is it known
        whether it continues an earlier one, with messages still waiting for Claude."""
        if self.id is not None:
            callback()
        else:
            self._on_bind.append(callback)

    def _adoptable(self, earlier: SessionInfo) -> bool:
        if earlier.status != "running":
            return True
        # Its launcher still runs (the sweep ended the dead ones): that one owns it.
        owners = dict(self.store.running_sessions())
        owner = owners.get(earlier.id)
        if owner is not None and is_alive(owner):
            _log.warning("session %s is still running in another happy: starting a new one", earlier.id)
            return False
        return True

    def _sinks(self) -> list[EnvelopeSink]:
        if self._events is None:
            return []
        sink = JsonLinesSink(self._events)
        return [sink if self._events.regular else BackgroundSink(sink)]  # see `EventsOutput.regular`

    def _sweep(self, home: Path) -> None:
        """End what dead launchers left behind; a failure here must not stop this session."""
        try:
            end_dead_sessions(self.store, self._ids, self._clock)
            clean_run_dirs(run_dir(home))
            clean_kept_settings(settings_dir(home), self._clock())
        except Exception:
            _log.exception("could not end the sessions of dead launchers")

    def history_sizes(self, sizes: Mapping[Path, int]) -> Mapping[Path, int]:
        """What of a transcript's files (their `sizes` now) counts as history, not to be sent.
        A resumed happy session reads on from where it first began mirroring them (what Claude
        wrote while happy was down, e.g. a prompt it took just before happy died, is mirrored,
        and its processed keys skip the rest); otherwise it is all there is now (remembered as
        where this session began)."""
        if self._adopted and self.id is not None:
            marks = self.store.history_marks(self.id, [os.fspath(p) for p in sizes])
            return {Path(path): size for path, size in marks.items()}
        now = {os.fspath(p): size for p, size in sizes.items()}
        if self.id is None:
            self._marks.update({p: s for p, s in now.items() if p not in self._marks})
        else:
            self.store.add_history_marks(self.id, now)
        return sizes

    # --- inbound messages ---------------------------------------------------------------------

    def accept_inbound(
        self, message_id: str, text: str, mode: InputMode = "switch", meta: MessageMeta = NO_META
    ) -> Accepted:
        """Store a client's message for Claude, with its `meta`, before it is acknowledged
        (idempotent on `message_id`). A message that comes before Claude has named its session binds the
        session now, as a new happy session: storing it cannot wait, and the cost is only that
        this run does not continue the happy session of a Claude session it then resumes."""
        if self.id is None:
            self._bind(None)
        assert self.id is not None
        prompt_uuid = str(uuid.uuid4())
        accepted = accept(self.store, self.id, message_id, text, self._clock(), prompt_uuid, mode, meta)
        if not accepted.duplicate:
            self.inbound.expect(prompt_uuid, accepted.message_seq)
        return accepted

    def pending_prompts(self) -> list[InboundPrompt]:
        """Inbound messages Claude has not taken yet, oldest first."""
        return [] if self.id is None else pending_prompts(self.store, self.id)

    def has_pending(self) -> bool:
        """Some inbound message waits for Claude (one indexed query: cheap to poll)."""
        return self.id is not None and bool(self.store.pending_inbound(self.id))

    # --- the commit point ---------------------------------------------------------------------

    def deliver(self, records: Iterable[Record]) -> list[Envelope]:
        """Map records (those already processed are skipped) and commit their envelopes."""
        return self.mirror.deliver(records)

    def close_turn(self, status: TurnStatus) -> list[Envelope]:
        """End what is open: active subagents, then the turn (Claude stopped, or was stopped)."""
        return self.mirror.close_turn(status)

    def subscribe(self, subscriber: CommitSubscriber) -> Callable[[], None]:
        """Be told of every envelope committed from now on, with its seq."""
        self._subscribers.append(subscriber)
        unsubscribe = self._commit.subscribe(subscriber) if self._commit is not None else None

        def remove() -> None:
            self._subscribers.remove(subscriber)
            if unsubscribe is not None:
                unsubscribe()

        return remove

    # --- the end ------------------------------------------------------------------------------

    def end(self, status: TurnStatus) -> None:
        """End the session: what is open is closed with `status`, and the session ends so."""
        if self._ended:
            return
        self._ended = True
        self.mirror.close_turn(status)
        assert self.id is not None
        self.store.end_session(self.id, status, self._clock())

    def close(self) -> None:
        try:
            if self._commit is not None:
                self._commit.close()
        finally:
            self.store.close()


def _state_of(mapper: Mapper) -> Callable[[], str]:
    return lambda: orjson.dumps(mapper.state.snapshot()).decode()
