"""The running session behind the control socket (`control_types.Controller`): what clients may
see and do, carried out by whichever launcher drives Claude now (its `Front`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from happy_launcher.errors import StoreError
from happy_launcher.local.tui_input import inject_problem, normalized
from happy_launcher.protocol import Clock, Envelope, wall_clock_ms
from happy_launcher.session.continuity import ChainMark, check, mark
from happy_launcher.session.launcher import Run
from happy_launcher.session.ports import (
    NO_META,
    AbortOutcome,
    Accepted,
    CommitSubscriber,
    ControlRefused,
    InputMode,
    MessageMeta,
    Mode,
    Outcome,
    PermissionAnswer,
    PermissionListener,
    PermissionRequest,
    SessionFacts,
    ShownMode,
    SwitchOutcome,
    message_too_large,
)

_log = logging.getLogger(__name__)


class SessionController:
    """One per run; `switching(to)` is called by the session loop at each hand-over, and
    `check_continuity()` runs beside the loop. `transcript(id)`: Claude session id -> its file.
    `terminal`: whether the run has one (the facts say so: `happy attach` takes a run without)."""

    def __init__(
        self,
        ref: Run,
        *,
        mode: ShownMode,
        pid: int,
        transcript: Callable[[str], Path],
        clock: Clock = wall_clock_ms,
        terminal: bool = True,
    ) -> None:
        self._ref = ref
        self._terminal = terminal
        self._mode: ShownMode = mode
        self._pid = pid
        self._transcript = transcript
        self._clock = clock
        self._started_at = clock()
        self._chain: ChainMark | None = None  # where the last front end left the chain
        self._changed = anyio.Event()
        self._watching = False
        ref.when_open(lambda session: session.when_bound(self._note_front))

    def _note_front(self) -> None:
        """Keep the store's word on the front end true (`happy sessions` lists it from there)."""
        session = self._ref.opened
        if session is None or session.id is None:
            return
        try:
            session.store.note_front(session.id, self._mode, terminal=self._terminal)
        except StoreError:
            _log.warning("the session's front end could not be noted in the store", exc_info=True)

    def switching(self, to: Mode) -> None:
        self._mode = to
        self._note_front()
        session = self._ref.opened
        if session is not None and session.claude_session_id is not None:
            self._chain = mark(self._transcript(session.claude_session_id))
            self._changed.set()
            if not self._watching:
                self._watching = True
                session.subscribe(self)

    async def check_continuity(self) -> None:
        """After each switch: once the new front end has written its first record, check that
        it continues the chain (continuity.py); a break becomes a service envelope and a note
        on the session in the store."""
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            chain, session = self._chain, self._ref.opened
            if chain is None or session is None or session.claude_session_id is None:
                continue
            verdict = check(chain, self._transcript(session.claude_session_id))
            if verdict == "unknown":
                continue
            self._chain = None
            if verdict == "broken":
                text = (
                    f"The conversation did not continue where it was left in {chain.path.name} after "
                    "the switch: Claude may not see the turns before it."
                )
                _log.warning("%s", text)
                session.mirror.notice(text)
                if session.id is not None:
                    session.store.note_break(session.id, text)

    def committed(self, seqs: Sequence[int], envelopes: Sequence[Envelope]) -> None:
        """New records were mirrored: time to look at the chain again, if a switch is open."""
        if self._chain is not None:
            self._changed.set()

    def facts(self) -> SessionFacts:
        session = self._ref.opened
        front = self._ref.front
        return SessionFacts(
            happy_session_id=None if session is None else session.id,
            claude_session_id=None if session is None else session.claude_session_id,
            mode=self._mode,
            cwd=str(self._ref.cwd),
            pid=self._pid,
            started_at=self._started_at,
            busy=front is not None and front.busy,
            terminal=self._terminal,
        )

    def history(self, after_seq: int, limit: int) -> list[tuple[int, bytes]]:
        session = self._ref.get()
        if session.id is None:
            return []
        return session.store.raw_envelopes(session.id, after_seq, limit)

    def subscribe(self, subscriber: CommitSubscriber) -> Callable[[], None]:
        return self._ref.get().subscribe(subscriber)

    async def send(
        self, message_id: str, text: str, mode: InputMode | None = None, meta: MessageMeta = NO_META
    ) -> Accepted:
        if not text.strip():
            raise ControlRefused("the message is empty: send some text")
        if (too_large := message_too_large(text)) is not None:  # a client that did not check
            raise ControlRefused(too_large)
        front = self._ref.front
        if front is not None:  # before the mode's checks: a watch-only run refuses any message
            front.check_inbound()
        mode = mode or self._ref.remote_input
        if mode == "inject":
            problem = inject_problem(text)
            if problem is not None:
                raise ControlRefused(problem)
            text = normalized(text)
        accepted = self._ref.get().accept_inbound(message_id, text, mode, meta)
        if front is not None and not accepted.duplicate:
            front.inbound()  # between launchers: the next one delivers what is pending
        return accepted

    async def switch(self, to: Mode) -> SwitchOutcome:
        front = self._ref.front
        if front is None:
            raise ControlRefused("the session is between front ends (switching): try again in a moment")
        if front.mode == to:
            return "already-there"
        front.request_switch()
        return "switched"

    async def abort(self) -> AbortOutcome:
        front = self._ref.front
        if front is None:
            return "no-turn"
        busy = front.busy
        await front.abort()  # idle: a no-op, or a refusal (a watch-only run)
        return "aborted" if busy else "no-turn"

    def pending_permissions(self) -> list[PermissionRequest]:
        return self._ref.permissions.pending

    def answer(self, request_id: str, allow: bool, message: str | None) -> None:
        answer = PermissionAnswer(allow, message or ("" if allow else "Denied by a happy client"))
        broker = self._ref.permissions
        if not broker.answer(request_id, answer):
            raise ControlRefused(_too_late(request_id, broker.settled_as(request_id)))

    def watch_permissions(self, listener: PermissionListener) -> Callable[[], None]:
        return self._ref.permissions.listen(listener)

    async def ask_permission(self, tool: str, tool_input: dict[str, Any]) -> PermissionAnswer | None:
        front = self._ref.front
        if front is None or front.mode != "local":  # a hook of a TUI that is gone: nothing to ask
            return None
        return await self._ref.local_permissions.ask(tool, tool_input)


def _too_late(request_id: str, settled: Outcome | None) -> str:
    if settled == "withdrawn":
        return (
            f"permission request {request_id} was withdrawn: it was answered in the terminal, "
            "or its turn ended; nothing to answer"
        )
    if settled is not None:
        return f"permission request {request_id} was {settled} already: the first answer counts"
    return f"no pending permission request {request_id}: see `happy watch` or the status for pending ones"
