"""bench_scale's clients, as a user has them beside the sessions: each mirror serves its control
socket (its real session's history and commits; nothing drives these sessions, so the other
verbs are the fake's), `happy watch --from-start --json` processes (the real CLI) follow the
sessions round-robin, and the web page (the real `happy web`, Debian's Chromium) is open on the
first session. A mirror starts its measured run only once every client of its session has
subscribed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

from happy_launcher.control.fake import FakeController
from happy_launcher.session.core import Session
from happy_launcher.session.ports import CommitSubscriber, SessionFacts

CLIENTS_WITHIN = 120.0  # s for every watcher and the page to subscribe, and for a watcher to end


class MirrorController(FakeController):
    """A mirror's control socket over its real session; `subscribed` is set once `expected`
    clients follow it."""

    def __init__(self, session: Session, cwd: Path, expected: int) -> None:
        super().__init__(SessionFacts(None, None, "local", str(cwd), os.getpid(), 0, False))
        self._session = session
        self._expected = expected
        self._followers = 0
        self.subscribed = anyio.Event()
        if expected == 0:
            self.subscribed.set()

    def facts(self) -> SessionFacts:
        return replace(super().facts(), happy_session_id=self._session.id)

    def history(self, after_seq: int, limit: int) -> list[tuple[int, bytes]]:
        assert self._session.id is not None  # bound before the socket is served
        return self._session.store.raw_envelopes(self._session.id, after_seq, limit)

    def subscribe(self, subscriber: CommitSubscriber) -> Callable[[], None]:
        unsubscribe = self._session.subscribe(subscriber)
        self._followers += 1
        if self._followers >= self._expected:
            self.subscribed.set()
        return unsubscribe


@dataclass(frozen=True, slots=True)
class Watcher:
    proc: subprocess.Popen[bytes]
    session: int
    output: Path

    def lines(self) -> int:
        """How many envelopes it printed, once its session has ended (it then ends too)."""
        self.proc.wait(CLIENTS_WITHIN)
        assert self.proc.returncode == 0, f"happy watch exited {self.proc.returncode}"
        return self.output.read_bytes().count(b"\n")


def expected_clients(n: int, watchers: int, page: bool) -> list[int]:
    """How many clients follow each of `n` sessions: watchers round-robin, the page on the first."""
    return [len(range(i, watchers, n)) + (1 if page and i == 0 else 0) for i in range(n)]


@contextmanager
def watching(sessions: list[tuple[Path, str]], watchers: int, out: Path) -> Iterator[list[Watcher]]:
    """`watchers` `happy watch` processes over `sessions` (home, happy id), round-robin."""
    started: list[Watcher] = []
    try:
        for k in range(watchers):
            i = k % len(sessions)
            home, happy_id = sessions[i]
            output = out / f"watch{k}.jsonl"
            with output.open("wb") as sink:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "happy_launcher", "watch", "--from-start", "--json", happy_id],
                    stdout=sink,
                    env={**os.environ, "HAPPY_HOME_DIR": str(home)},
                )
            started.append(Watcher(proc, i, output))
        yield started
    finally:
        for watcher in started:
            if watcher.proc.poll() is None:
                watcher.proc.kill()
                watcher.proc.wait()


@contextmanager
def page_open(home: Path, happy_id: str) -> Iterator[None]:
    """The web page open on `happy_id`'s session, its stream connected, until the block ends: in
    a process of its own (the browser's driver neither forked into the mirrors started after it
    nor counted in their memory)."""
    proc = subprocess.Popen(
        [sys.executable, __file__, str(home), happy_id], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        if proc.stdout.readline() != b"ready\n":  # bounded: the pipe ends if it dies
            raise SystemExit("the page did not open")
        yield
    finally:
        proc.stdin.close()
        proc.wait(CLIENTS_WITHIN)


def _open_page(home: Path, happy_id: str) -> None:
    """The page's process: open it, say so, hold it open until stdin closes."""
    from scripts.bench.web_growth import connect
    from tests.support.web import WebServer, chromium, paired_context

    with ExitStack() as stack:
        web = WebServer(home)
        stack.callback(web.kill)
        browser = stack.enter_context(chromium())
        connect(paired_context(browser, web).new_page(), f"{web.base}/#s={happy_id}")
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        sys.stdin.read()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    _open_page(Path(sys.argv[1]), sys.argv[2])
