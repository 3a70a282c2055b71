"""The page in a real browser (Debian's Chromium under Playwright) over the real `happy web`,
fed envelopes by a FakeController behind a control socket (no Claude needed): agent text
rendered as Markdown and safely (hostile text stays text, no script runs, the CSP holds), tool
calls that did not succeed shown as such, and the session list (titles, the "Older" fold,
hiding)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from happy_launcher.control.fake import FakeController
from happy_launcher.home.procs import this_process
from happy_launcher.protocol import (
    Envelope,
    EnvelopeFactory,
    Event,
    SequentialIds,
    StartEv,
    StopEv,
    TextEv,
    ToolCallEndEv,
    ToolCallStartEv,
    ToolStatus,
    TurnEndEv,
    TurnStartEv,
)
from happy_launcher.store.sessions import SessionStore
from tests.support.control import facts, running, stored_session
from tests.support.web import WebServer, chromium

pytestmark = pytest.mark.timeout(120)
WAIT_MS = 30_000
HOSTILE = """# Plan
Some **bold**, *em*, `code <b>x</b>` and <img src=x onerror="window.pwned=1">
and <script>window.pwned=2</script>
- first
- second [docs](https://example.com/two)
  1. nested

[bad](javascript:window.pwned=3) and [js2]( JAVASCRIPT:window.pwned=5) and [d](data:text/html,<b>x</b>)
<javascript:window.pwned=6> then https://example.com/bare. <a href="javascript:1" onclick="x()">a</a>

```python
print("a line long enough to need scrolling sideways on a phone: %s" % ("x" * 300))
```
"""
LONG_PROMPT = (
    "Refactor the parser so that every token keeps its source position, and report errors with"
    " the line and column\nthen update the tests\nand the docs"
)
HOSTILE_PROMPT = '<img src=x onerror="window.pwned=1"> <b>bold?</b>'
DAY_MS = 24 * 3600 * 1000
UNCLOSED = "Before\n```js\nunclosed <img src=x onerror=window.pwned=4>\n[z](https://example.com/in-code)"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal("asyncio") as started:
        yield started


@pytest.fixture
def controller(home: Path, portal: BlockingPortal) -> Iterator[FakeController]:
    fake = FakeController(facts(happy_session_id="hs-web", mode="remote"))
    with portal.wrap_async_context_manager(running(fake, home)):
        yield fake


@pytest.fixture
def server(home: Path, controller: FakeController) -> Iterator[WebServer]:
    web = WebServer(home)
    yield web
    web.kill()


@pytest.fixture
def listing(server: WebServer) -> Iterator[Any]:
    """A paired phone-sized page, on the session list."""
    with chromium() as browser:
        page = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
        page.csp_errors = []
        page.on("console", lambda m: "Content Security Policy" in m.text and page.csp_errors.append(m.text))
        page.goto(server.url)
        page.wait_for_selector("#app:not([hidden])", timeout=WAIT_MS)
        yield page


@pytest.fixture
def page(listing: Any, server: WebServer) -> Any:
    """The page showing the running session hs-web."""
    listing.goto(f"{server.base}/#s=hs-web")
    return listing


def turn(*events: Event) -> list[Envelope]:
    make = EnvelopeFactory(SequentialIds("pg"))
    turn_id = make.new_id()
    return [make.agent(ev, turn=turn_id, time=1_700_000_000_000) for ev in (TurnStartEv(), *events)]


def test_agent_markdown_is_rendered_and_hostile_text_stays_text(
    page: Any, controller: FakeController
) -> None:
    controller.commit(turn(TextEv(text=HOSTILE), TextEv(text=UNCLOSED)))
    page.wait_for_function("() => window.happy.seqs.length >= 3", timeout=WAIT_MS)
    box = page.locator("#transcript")
    # The Markdown's structure.
    assert box.locator("h3").inner_text() == "Plan"
    assert box.locator("strong").first.inner_text() == "bold" and box.locator("em").first.inner_text() == "em"
    assert box.locator(".md > ul > li").count() == 2 and box.locator("ul li ol li").inner_text() == "nested"
    assert box.locator("p code").first.inner_text() == "code <b>x</b>"
    # Links only for http(s), in a new tab that cannot reach back; the others stay text.
    links = box.locator("a").evaluate_all("as => as.map(a => [a.getAttribute('href'), a.target, a.rel])")
    assert links == [
        ["https://example.com/two", "_blank", "noopener noreferrer"],
        ["https://example.com/bare", "_blank", "noopener noreferrer"],
    ]
    text = box.inner_text()
    for shown in (
        '<img src=x onerror="window.pwned=1">',
        "<script>window.pwned=2</script>",
        "[bad](javascript:window.pwned=3)",
        "[js2]( JAVASCRIPT:window.pwned=5)",
        "<javascript:window.pwned=6>",
        '<a href="javascript:1" onclick="x()">a</a>',
    ):
        assert shown in text
    # Code blocks keep their lines and scroll sideways; an unclosed fence runs to the end.
    [code, unclosed] = box.locator("pre.code").all()
    assert code.evaluate("p => p.scrollWidth > p.clientWidth && getComputedStyle(p).overflowX === 'auto'")
    assert (
        unclosed.inner_text()
        == "unclosed <img src=x onerror=window.pwned=4>\n[z](https://example.com/in-code)"
    )
    # Nothing ran, nothing was made of the markup, and the CSP was never tested.
    assert page.evaluate("window.pwned") is None
    names = set(box.locator("*").evaluate_all("es => es.flatMap(e => [e.tagName, ...e.getAttributeNames()])"))
    assert not names & {"IMG", "SCRIPT", "IFRAME", "onerror", "onclick", "style"}
    assert page.csp_errors == []


def test_a_tool_call_that_did_not_succeed_is_shown_as_such(page: Any, controller: FakeController) -> None:
    ends: list[ToolStatus | None] = [None, "failed", "denied", "cancelled"]
    starts = [
        ToolCallStartEv(call=f"c{n}", name="Bash", title=f"step {n}", description="", args={})
        for n in range(4)
    ]
    controller.commit(turn(*starts, *(ToolCallEndEv(call=f"c{n}", status=s) for n, s in enumerate(ends))))
    page.wait_for_function("() => window.happy.seqs.length >= 9", timeout=WAIT_MS)
    tools = page.locator("#transcript .tool")
    assert tools.locator(".status").all_inner_texts() == ["done", "failed", "denied", "cancelled"]
    classes = tools.evaluate_all("ts => ts.map(t => t.className)")
    assert classes == ["tool done", "tool failed", "tool denied", "tool cancelled"]
    colors = tools.locator(".status").evaluate_all("ss => ss.map(s => getComputedStyle(s).backgroundColor)")
    assert colors[0] != colors[1] == colors[2] == colors[3]  # the failures stand out alike


def names(page: Any, ul: str) -> list[str]:
    return page.locator(f"#{ul} li .name").all_inner_texts()  # type: ignore[no-any-return]


def test_the_list_names_sessions_by_what_they_are_about_and_folds_older_ones(
    listing: Any, home: Path, tmp_path: Path
) -> None:
    now = time.time_ns() // 1_000_000
    transcript = tmp_path / "named.jsonl"
    transcript.write_bytes(orjson.dumps({"type": "ai-title", "aiTitle": "Titled by Claude"}) + b"\n")
    stored_session(home, "hs-named", prompt="not this", at=now - 1000, transcript=transcript)
    stored_session(home, "hs-long", prompt=LONG_PROMPT, at=now - 2000, cwd="/src/parser")
    stored_session(home, "hs-html", prompt=HOSTILE_PROMPT, at=now - 3000)
    stored_session(home, "hs-old", prompt="Old work", at=now - 2 * DAY_MS)
    listing.reload()
    listing.wait_for_function("() => document.querySelectorAll('#sessions li').length === 4", timeout=WAIT_MS)
    first_line = LONG_PROMPT.splitlines()[0]
    assert (
        names(listing, "sessions")
        == [
            "project",  # the running session (no prompt yet): its directory
            "Titled by Claude",
            first_line[:79] + "…",
            HOSTILE_PROMPT,
        ]
    )
    long = listing.locator("#sessions li[data-id=hs-long]")
    assert long.locator(".where").inner_text().startswith("parser · ")
    assert long.locator(".name").evaluate("n => n.getClientRects().length === 1 && n.offsetHeight < 30")
    # Ended and quiet for a day: folded under "Older", closed.
    assert listing.locator("#older-group summary").inner_text() == "Older (1)"
    assert not listing.locator("#older li").is_visible()
    listing.locator("#older-group summary").click()
    assert names(listing, "older") == ["Old work"]
    assert listing.locator("#older li").is_visible()
    assert listing.evaluate("window.pwned") is None
    assert listing.locator("#list img").count() == 0 and listing.csp_errors == []
    listing.screenshot(path=str(tmp_path / "list-390.png"))


def test_an_ended_session_can_be_hidden_and_shown_again(listing: Any, home: Path) -> None:
    now = time.time_ns() // 1_000_000
    stored_session(home, "hs-done", prompt="Done already", at=now)
    listing.reload()
    row = listing.locator("#sessions li[data-id=hs-done]")
    row.locator("button.hide").click()
    listing.wait_for_function(
        "() => !document.querySelector('#sessions li[data-id=hs-done]')", timeout=WAIT_MS
    )
    assert listing.locator("#hidden-group summary").inner_text() == "Hidden (1)"
    assert not listing.locator("#hidden-sessions li").is_visible()
    assert orjson.loads((home / "web" / "hidden.json").read_bytes()) == ["hs-done"]
    assert listing.evaluate("location.hash") == ""  # the button did not open the session
    # A running session has no such button.
    assert listing.locator("#sessions li[data-id=hs-web] button").count() == 0
    listing.locator("#hidden-group summary").click()
    listing.locator("#hidden-sessions li[data-id=hs-done] button.hide").click()  # "Show"
    listing.wait_for_selector("#sessions li[data-id=hs-done]", timeout=WAIT_MS)
    assert listing.locator("#hidden-group").is_hidden()
    # Hidden again, it comes back by itself when it runs again.
    listing.locator("#sessions li[data-id=hs-done] button.hide").click()
    listing.wait_for_selector("#hidden-sessions li[data-id=hs-done]", state="attached", timeout=WAIT_MS)
    store = SessionStore.open(home)
    try:
        store.reopen_session("hs-done", owner=this_process(os.getpid()))
    finally:
        store.close()
    listing.wait_for_selector("#sessions li[data-id=hs-done] .badge.running", timeout=WAIT_MS)
    assert listing.locator("#hidden-group").is_hidden()


def test_a_long_history_opens_on_its_newest_envelopes_and_loads_earlier_ones(
    listing: Any, server: WebServer, home: Path
) -> None:
    """200 turns: the page shows the newest 300 envelopes (the window's edge falls inside a tool
    call), and "Load earlier" brings the rest back a page at a time, each envelope once, the
    tool call cut by the edge ended and no turn left "working…"."""
    make = EnvelopeFactory(SequentialIds("lh"))
    made: list[Envelope] = []
    for n in range(200):
        call, turn_id = f"call{n}", f"turn{n}"
        events: list[Event] = [
            TurnStartEv(),
            ToolCallStartEv(call=call, name="Bash", title=f"Step {n}", description="", args={}),
            ToolCallEndEv(call=call),
            TextEv(text=f"done with step {n}"),
            TurnEndEv(status="completed"),
        ]
        made += [make.agent(ev, turn=turn_id, time=1_700_000_000_000) for ev in events]
    made += [make.user_text(f"after {n}", 1_700_000_000_000) for n in range(2)]  # 1002: seq 703 ends call140
    with SessionStore.open(home) as store:
        store.create_session("hs-long", cwd="/work/project", started_at=1, status="completed")
        store.append_envelopes("hs-long", made)
    listing.goto(f"{server.base}/#s=hs-long")
    listing.wait_for_function("() => window.happy.seqs.length >= 300", timeout=WAIT_MS)
    assert listing.evaluate("window.happy.seqs") == list(range(703, 1003))
    assert listing.locator("#transcript [data-seq]").count() <= 300
    for _ in range(4):  # 403-702, 103-402, 1-102, and the button is gone
        if listing.locator("#earlier").count() == 0:
            break
        shown = listing.evaluate("window.happy.earlier.length")
        listing.click("#earlier")
        listing.wait_for_function(f"() => window.happy.earlier.length > {shown}", timeout=WAIT_MS)
    assert listing.locator("#earlier").count() == 0
    earlier = listing.evaluate("window.happy.earlier")
    assert sorted(earlier) == list(range(1, 703)) and len(earlier) == 702
    assert listing.locator('[data-seq="702"]').get_attribute("class") == "tool done"
    assert listing.locator(".turn-status", has_text="working").count() == 0


LIMIT = 1000  # static/bounded.js: rendered envelopes in the DOM, at most
SHOWN = "() => [...document.querySelectorAll('#transcript [data-seq]')].map(n => Number(n.dataset.seq))"


class LiveSession:
    """hs-web growing as a running session's does: each batch in the store and then told to the
    control socket's subscribers (FakeController), under the same seqs; `nodes`: the seqs that
    render a node (the others start, end or name something)."""

    def __init__(self, home: Path, controller: FakeController, portal: BlockingPortal) -> None:
        self.store = SessionStore.open(home)
        self.store.create_session(
            "hs-web", cwd="/work/project", started_at=1, owner=this_process(os.getpid())
        )
        self.controller, self.portal = controller, portal
        self.make = EnvelopeFactory(SequentialIds("live"))
        self.last, self.n = 0, 0
        self.nodes: list[int] = []

    def commit(self, made: list[Envelope], renders: list[bool]) -> int:
        seqs = self.store.append_envelopes("hs-web", made)
        assert self.portal.call(self.controller.commit, made) == seqs
        self.nodes += [seq for seq, node in zip(seqs, renders, strict=True) if node]
        self.last = seqs[-1]
        return self.last

    def turns(self, count: int) -> int:
        """Turns of a prompt, a tool call and two texts (one while the call runs)."""
        for _ in range(count):
            self.n += 1
            n, t = self.n, 1_700_000_000_000
            events: list[Event] = [
                TurnStartEv(),
                ToolCallStartEv(call=f"c{n}", name="Bash", title=f"Step {n}", description="", args={}),
                TextEv(text=f"while step {n} runs"),
                ToolCallEndEv(call=f"c{n}"),
                TextEv(text=f"done with step {n}"),
                TurnEndEv(status="completed"),
            ]
            made = [self.make.user_text(f"question {n}", t)]
            made += [self.make.agent(ev, turn=f"turn{n}", time=t) for ev in events]
            self.commit(made, [True, False, True, True, False, True, False])
        return self.last

    def subagent_turn(self, texts: int) -> int:
        """A turn whose subagent goes on for `texts` texts, 50 at a time."""
        self.n += 1
        turn, t = f"turn{self.n}", 1_700_000_000_000
        sub = partial(self.make.agent, turn=turn, time=t, subagent="sub")
        start = self.make.agent(TurnStartEv(), turn=turn, time=t)
        self.commit([start, sub(StartEv(title="Explore"))], [False] * 2)
        for at in range(0, texts, 50):
            self.commit([sub(TextEv(text=f"subagent {m}")) for m in range(at, at + 50)], [True] * 50)
        end = self.make.agent(TurnEndEv(status="completed"), turn=turn, time=t)
        return self.commit([sub(StopEv()), end], [False] * 2)

    def rendered(self, first: int, last: int) -> list[int]:
        return [seq for seq in self.nodes if first <= seq <= last]


def no_gap_nor_doubling(page: Any, live: LiveSession) -> list[int]:
    """The envelopes shown: each once, and every one between the oldest and the newest shown."""
    shown: list[int] = page.evaluate(SHOWN)
    assert len(shown) <= LIMIT
    assert sorted(shown) == live.rendered(min(shown), max(shown)), "a gap or a doubling"
    assert page.locator("#transcript .tool:not(.done)").count() == 0  # ends cut off by an edge kept
    assert page.locator(".turn-status", has_text="working").count() == 0
    return shown


def test_a_long_live_session_keeps_a_bounded_window_that_loads_earlier_without_gap(
    listing: Any, server: WebServer, home: Path, controller: FakeController, portal: BlockingPortal
) -> None:
    """Thousands of envelopes live (a subagent of 1,200 among them): the DOM holds at most LIMIT
    of them (the oldest dropped while the reader follows the end); a reader scrolled up keeps
    their place while older ones go; "Load earlier" brings back what was dropped, each once and
    with no gap, until the newer end is dropped instead (the reader is far up), and "Show newest"
    brings the live end back; a hidden page (no animation frames) stays bounded too."""
    live = LiveSession(home, controller, portal)
    live.turns(100)
    listing.goto(f"{server.base}/#s=hs-web")
    listing.wait_for_function("() => window.happy.seqs.at(-1) === 700", timeout=WAIT_MS)
    for _ in range(50):
        last = live.turns(10)
    last = live.subagent_turn(1200)  # cut by drops while it runs
    listing.wait_for_function(f"() => window.happy.seqs.at(-1) === {last}", timeout=WAIT_MS)
    shown = no_gap_nor_doubling(listing, live)
    assert max(shown) == last - 2 and min(shown) > 1500  # the oldest were dropped
    assert listing.locator(".subagent").count() == 1
    assert listing.locator("#transcript *").count() < 4 * LIMIT
    assert listing.locator("#earlier").count() == 1

    # Scrolled up a little: the oldest go, what the reader sees does not move.
    place = """() => { const n = document.querySelector('[data-seq="%d"]');
                       return n && n.isConnected ? n.getBoundingClientRect().top : null; }"""
    listing.evaluate("() => { const b = document.getElementById('transcript'); b.scrollTop -= 400; }")
    anchor = listing.evaluate("""() => [...document.querySelectorAll('#transcript [data-seq]')]
        .find(n => n.getBoundingClientRect().top > document.getElementById('transcript')
        .getBoundingClientRect().top).dataset.seq""")
    before = listing.evaluate(place % int(anchor))
    last = live.turns((LIMIT - len(shown)) // 4 + 5)
    listing.wait_for_function(f"() => window.happy.seqs.at(-1) === {last}", timeout=WAIT_MS)
    assert min(no_gap_nor_doubling(listing, live)) > min(shown)
    assert abs(listing.evaluate(place % int(anchor)) - before) <= 1  # scrollTop is whole pixels

    # Up at the top, loading earlier pages: they come back; past the bound the newer end goes.
    for _ in range(4):
        listing.evaluate("() => { document.getElementById('transcript').scrollTop = 0; }")
        oldest = min(listing.evaluate(SHOWN))
        with listing.expect_response(lambda r: "before=" in r.url) as asked:
            listing.click("#earlier")
        before_seq = int(asked.value.url.split("before=")[1].split("&")[0])
        assert before_seq <= oldest and live.rendered(before_seq, oldest - 1) == []
        listing.wait_for_function(f"() => Math.min(...({SHOWN})()) < {oldest}", timeout=WAIT_MS)
        shown = no_gap_nor_doubling(listing, live)
        assert min(shown) == live.rendered(before_seq - 300, before_seq)[0]
    assert max(shown) < last - 1 and listing.locator("#newest").count() == 1  # detached from live
    last = live.turns(3)  # not shown (the page is up in older pages), but not lost either
    listing.click("#newest")
    listing.wait_for_function(f"() => window.happy.seqs.at(-1) === {last}", timeout=WAIT_MS)
    shown = no_gap_nor_doubling(listing, live)
    assert max(shown) == last - 1 and listing.locator("#newest").count() == 0

    # Hidden, the page gets no animation frames: what arrives is rendered (and bounded) anyway.
    listing.evaluate("() => { window.requestAnimationFrame = () => 0; }")
    last = live.turns(300)
    listing.wait_for_function(f"() => window.happy.seqs.at(-1) > {last - LIMIT}", timeout=WAIT_MS)
    shown = sorted(listing.evaluate(SHOWN))
    assert len(shown) <= LIMIT and shown == live.rendered(shown[0], shown[-1])
