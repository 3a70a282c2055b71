"""The page in a real browser (Debian's Chromium under Playwright) over the real `happy web`,
fed envelopes by a FakeController behind a control socket (no Claude needed): agent text
rendered as Markdown and safely (hostile text stays text, no script runs, the CSP holds), and
tool calls that did not succeed shown as such."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from happy_launcher.protocol import (
    Envelope,
    EnvelopeFactory,
    Event,
    SequentialIds,
    TextEv,
    ToolCallEndEv,
    ToolCallStartEv,
    ToolStatus,
    TurnStartEv,
)
from happy_launcher.session.control_fake import FakeController
from tests.support.control import facts, running
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
UNCLOSED = "Before\n```js\nunclosed <img src=x onerror=window.pwned=4>\n[z](https://example.com/in-code)"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def controller(home: Path) -> Iterator[FakeController]:
    fake = FakeController(facts(happy_session_id="hs-web", mode="remote"))
    portal: BlockingPortal
    with start_blocking_portal("asyncio") as portal, portal.wrap_async_context_manager(running(fake, home)):
        yield fake


@pytest.fixture
def page(home: Path, controller: FakeController) -> Iterator[Any]:
    server = WebServer(home)
    with chromium() as browser:
        page = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
        page.csp_errors = []
        page.on("console", lambda m: "Content Security Policy" in m.text and page.csp_errors.append(m.text))
        page.goto(server.url)
        page.wait_for_selector("#app:not([hidden])", timeout=WAIT_MS)
        page.goto(f"{server.base}/#s=hs-web")
        yield page
    server.kill()


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
