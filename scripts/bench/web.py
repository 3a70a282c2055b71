#!/usr/bin/env python3
"""The web page, measured in the browser (Debian's Chromium under Playwright) over the real
`happy web` and a control socket over a FakeController:

- live: an envelope committed (the FakeController's commit, as the session's commit point) ->
  rendered in the page (the page's own clock at the frame that put it in the DOM);
  one envelope at a time, p50/p90 over --count;
- history: page load (navigation start) -> first transcript paint, and -> all rendered, with
  --history envelopes of history; medians over --loads page loads;
- with --grow, instead: the page's memory as a live session grows (web_growth.py)."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from anyio.from_thread import start_blocking_portal

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from happy_launcher.control.fake import FakeController
from happy_launcher.protocol import Envelope, EnvelopeFactory, SequentialIds
from happy_launcher.protocol.events import TextEv, ToolCallEndEv, ToolCallStartEv, TurnEndEv, TurnStartEv
from scripts.bench.web_growth import report
from tests.support.control import facts, running
from tests.support.web import WebServer, chromium, paired_context


def history(factory: EnvelopeFactory, count: int) -> list[Envelope]:
    """Turns of a typical shape: a prompt, text, a tool call, more text, the turn's end."""
    made: list[Envelope] = []
    n = 0
    while len(made) < count:
        n += 1
        turn, t = f"turn{n}", 1_700_000_000_000 + n
        args = {"command": f"grep -rn pattern{n} src/ | head -20"}
        made += [
            factory.user_text(f"question {n}: what does module {n} do, briefly?", t),
            factory.agent(TurnStartEv(), turn=turn, time=t),
            factory.agent(TextEv(text=f"Let me look at module {n}. " * 4), turn=turn, time=t),
            factory.agent(
                ToolCallStartEv(call=f"c{n}", name="Bash", title=f"Search {n}", description="", args=args),
                turn=turn,
                time=t,
            ),
            factory.agent(ToolCallEndEv(call=f"c{n}"), turn=turn, time=t),
            factory.agent(TextEv(text=f"Module {n} maps records to envelopes. " * 6), turn=turn, time=t),
            factory.agent(TurnEndEv(status="completed"), turn=turn, time=t),
        ]
    return made[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100, help="live envelopes, one at a time")
    parser.add_argument("--history", type=int, default=1000)
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument("--grow", help="instead: the page's memory after N,M,... live envelopes")
    parser.add_argument("--rounds", type=int, default=2, help="with --grow")
    parser.add_argument("--before-src", help="with --grow: also an older tree's src/, alternating")
    args = parser.parse_args()
    if args.grow:
        with start_blocking_portal("asyncio") as portal, chromium() as browser:
            marks = [int(n) for n in args.grow.split(",")]
            report(portal, browser, marks, args.rounds, args.before_src)
        return
    factory = EnvelopeFactory(SequentialIds("bench"))
    with tempfile.TemporaryDirectory() as tmp, start_blocking_portal("asyncio") as portal:
        home = Path(tmp)
        controller = FakeController(facts(happy_session_id="hs-bench", pid=os.getpid()))
        controller.commit(history(factory, args.history))
        with portal.wrap_async_context_manager(running(controller, home)), chromium() as browser:
            web = WebServer(home)
            try:
                context = paired_context(browser, web)
                page = context.new_page()
                first, full = [], []
                for _ in range(args.loads):
                    page.goto("about:blank")
                    page.goto(f"{web.base}/#s=hs-bench")
                    page.wait_for_function(f"() => window.happy.seqs.length >= {args.history}")
                    first.append(page.evaluate("window.happy.firstPaint"))
                    full.append(page.evaluate("window.happy.rendered.at(-1)[1] - performance.timeOrigin"))
                live = []
                for n in range(args.count):
                    envelope = factory.user_text(f"a typical message of a sentence or two, number {n}", n)
                    start = time.time() * 1000
                    [seq] = portal.call(controller.commit, [envelope])
                    page.wait_for_function(f"() => window.happy.seqs.at(-1) === {seq}")
                    rendered = page.evaluate(f"window.happy.rendered.find(r => r[0] === {seq})[1]")
                    live.append(rendered - start)
            finally:
                web.kill()
    q = statistics.quantiles(live, n=10)
    load = os.getloadavg()[0]
    print(
        f"web: committed -> rendered in the page, n={args.count}: p50 {statistics.median(live):.1f} ms, "
        f"p90 {q[8]:.1f} ms (target p50 <= 50 ms); page load with {args.history} envelopes of history, "
        f"medians of n={args.loads}: first transcript paint {statistics.median(first):.0f} ms, all rendered "
        f"{statistics.median(full):.0f} ms (target <= 1000 ms); load {load:.1f}"
    )


if __name__ == "__main__":
    main()
