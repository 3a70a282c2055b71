"""What local mode does beside the running Claude: follow its session ids (SessionStart hook),
tail its transcripts, and deliver their records to the run's session."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from happy_launcher.claude.existing import ExistingFiles
from happy_launcher.claude.paths import transcript_path
from happy_launcher.claude.records import Record
from happy_launcher.claude.scanner import SAFETY_POLL, TranscriptScanner, safety_poll
from happy_launcher.claude.session_files import SessionFiles
from happy_launcher.claude.tail import LineTail
from happy_launcher.claude.watch import Watcher, make_watcher
from happy_launcher.local.hooks import HookEvent, parse_hook_line
from happy_launcher.local.launch import Launch
from happy_launcher.session.config import RunConfig
from happy_launcher.session.core import Session

# SessionStart sources whose transcript already holds history that was mirrored before (or
# that the user did not ask to see again): mark it processed instead of re-sending it.
_HISTORY_SOURCES = frozenset({"resume", "fork"})


class LocalTracker:
    """Follows a local Claude's session ids (SessionStart hook, or the transcript that grows)
    and tails its transcripts into the run's session, whose mirror does the rest."""

    def __init__(
        self,
        cfg: RunConfig,
        launch: Launch,
        hook_events: Path | None,
        *,
        existing: ExistingFiles,
        session: Session,
        watchers: Callable[[], Watcher] = make_watcher,
    ) -> None:
        """`watchers` makes each of its watchers (transcripts, hook events, a picked session)."""
        self._cfg = cfg
        self._existing = existing  # taken before Claude was spawned
        self._session = session
        self._watchers = watchers
        self._watcher = watchers()
        self.scanner = TranscriptScanner(SessionFiles(clock=time.monotonic), self._watcher)
        self._hooks = LineTail(hook_events) if hook_events is not None else None
        self._replay_existing = cfg.args.options.replay_existing
        self._picking = False  # waiting to learn which session Claude picked (no hook)
        self.on_prompt: Callable[[str], None] | None = None  # UserPromptSubmit's prompt (inject)
        self._follow_expected(launch)
        # What is alive now (modules, the session's objects) lives as long as happy: out of the
        # cyclic GC's sight, so that a full collection while a large history streams takes a few
        # ms instead of 20-70 ms of a blocked event loop (issue 7 §2).
        gc.freeze()

    def _follow_expected(self, launch: Launch) -> None:
        """Watch the transcript before Claude writes it, when its session id is known already."""
        expected = launch.expected_session_id
        if expected is None:
            # Bare --resume, --continue, a title: Claude picks. The SessionStart hook tells us;
            # without one (headless), the transcript that grows does.
            self._picking = self._hooks is None
            return
        history = launch.mode != "fresh" and not self._replay_existing
        if launch.fork and launch.target is not None:
            # The fork's file starts with a copy of the original's records: seed their keys.
            self._add(self._path(launch.target), history=True)
        # The session was bound to it as it opened (`Run.starts_on`), or, on a later
        # launch of the run, its SessionStart hook records it.
        self._add(self._path(expected), history=history)

    def _path(self, session_id: str) -> Path:
        return transcript_path(self._cfg.env, self._cfg.cwd, session_id)

    def _add(self, path: Path, *, history: bool) -> None:
        """Watch a session's files; with `history`, what they held before the launch is not sent
        (a resumed happy session's own: only what it mirrored, see `Session.history_sizes`)."""
        if not history:
            self.scanner.add_main(path)
            return
        existing = self._existing
        if not existing.covers(path):  # a session Claude named later (`/resume` in the TUI): as of now
            existing = ExistingFiles.of_sessions([path])
        path = path.absolute()
        own = path.with_suffix("")
        sizes = {p: n for p, n in existing.sizes.items() if p == path or p.is_relative_to(own)}
        self.scanner.add_main(path, known=self._session.history_sizes(sizes))

    def on_hook(self, event: HookEvent) -> None:
        if event.hook_event_name == "UserPromptSubmit":
            if self.on_prompt is not None and event.prompt is not None:
                self.on_prompt(event.prompt)
            return
        if event.hook_event_name != "SessionStart" or not event.session_id:
            return
        path = event.transcript_path or self._path(event.session_id)
        history = event.source in _HISTORY_SOURCES and not self._replay_existing
        # Recorded first: a resumed happy session is adopted before its history is measured.
        self._record_claude_session(event.session_id, event.source or "unknown", path)
        self._add(path, history=history)

    def _record_claude_session(self, claude_session_id: str, source: str, path: Path) -> None:
        self._session.set_claude_session(claude_session_id, source, path)

    def _read_hooks(self) -> None:
        if self._hooks is None:
            return
        while lines := self._hooks.read_lines():
            for line in lines:
                event = parse_hook_line(line)
                if event is not None:
                    self.on_hook(event)

    async def run(self) -> None:
        """Mirror until cancelled (when Claude exits)."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.scanner.run, self._deliver)
            if self._hooks is not None:
                tg.start_soon(self._watch_hooks, self._hooks)
            if self._picking:
                tg.start_soon(self._watch_picked)

    def _deliver(self, batch: list[Record]) -> None:
        self._session.deliver(batch)

    async def _watch_hooks(self, hooks: LineTail) -> None:
        watcher = self._watchers()
        try:
            while True:
                self._read_hooks()
                watcher.watch({hooks.path.parent})
                await watcher.wait(safety_poll(watcher))
        finally:
            watcher.close()

    async def _watch_picked(self) -> None:
        project = self._existing.project
        watcher = self._watchers()
        try:
            while not self._find_picked():
                if project is not None:
                    watcher.watch({d for d in (project, project.parent) if d.is_dir()})
                await watcher.wait(SAFETY_POLL)
        finally:
            watcher.close()

    def _find_picked(self) -> bool:
        """Follow the session Claude picked once its transcript grows; True once found."""
        if not self._picking:
            return True
        path = self._existing.grown()
        if path is None:
            return False
        self._picking = False
        self._add(path, history=not self._replay_existing)
        self._record_claude_session(path.stem, "resume", path)
        return True

    def finish(self) -> None:
        """Claude is gone: read what is left (the session is ended by its owner)."""
        try:
            self._read_hooks()  # a /clear just before exit names a file we must still read
            self._find_picked()  # Claude may have picked and written in its last moments
            for batch in self.scanner.final_batches():
                self._session.deliver(batch)
        finally:
            self._watcher.close()
