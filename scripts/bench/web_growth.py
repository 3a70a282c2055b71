"""The page's memory as a live session grows (`scripts/bench_web --grow 10000,100000`): a page
opened on a new session (FakeController, empty), then envelopes of typical turns committed
live, 500 at a time as they are rendered; at each mark, after a garbage collection, the JS heap,
the renderer's DOM nodes (Chromium's count, detached ones not yet collected included) and the
transcript's elements. With --before-src, the same against an older tree's `happy web` (its
page), the two alternating round by round."""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal

from happy_launcher.control.fake import FakeController
from happy_launcher.protocol import EnvelopeFactory, SequentialIds
from tests.support.control import facts, running
from tests.support.web import WebServer, paired_context

BATCH = 500
CONN = "document.getElementById('conn')"
Sample = tuple[float, float, float, float]  # JS heap MB, DOM nodes, transcript elements, RSS MB


def grow(portal: BlockingPortal, browser: Any, marks: list[int], src: str) -> list[Sample]:
    """One page over one new session grown to each mark; `src`: the tree `happy web` runs."""
    from scripts.bench.web import history

    factory = EnvelopeFactory(SequentialIds("grow"))
    samples: list[Sample] = []
    with tempfile.TemporaryDirectory() as tmp:
        controller = FakeController(facts(happy_session_id="hs-grow", pid=os.getpid()))
        with portal.wrap_async_context_manager(running(controller, Path(tmp))):
            web = WebServer(Path(tmp), env={"PYTHONPATH": src})
            try:
                context = paired_context(browser, web)
                page = context.new_page()
                cdp = context.new_cdp_session(page)
                cdp.send("Performance.enable")
                connect(page, f"{web.base}/#s=hs-grow")
                for mark in marks:
                    while len(controller.stored) < mark:
                        [*_, seq] = portal.call(controller.commit, history(factory, BATCH))
                        page.wait_for_function(f"() => window.happy.seqs.at(-1) === {seq}", timeout=600_000)
                    samples.append(measure(page, cdp, browser))
                context.close()
            finally:
                web.kill()
    return samples


def connect(page: Any, url: str) -> None:
    """The page, its stream open; again if the server did not find the session (on a loaded
    machine its hello to the control socket can time out, and the page then stops there)."""
    for _ in range(5):
        page.goto(url)
        page.wait_for_function(f"() => {CONN}.hidden || {CONN}.textContent.startsWith('No')")
        if page.evaluate(f"{CONN}.hidden"):
            return
    raise AssertionError("the page never connected")


def measure(page: Any, cdp: Any, browser: Any) -> Sample:
    cdp.send("HeapProfiler.collectGarbage")
    heap = cdp.send("Runtime.getHeapUsage")["usedSize"] / 2**20
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    elements = page.evaluate("document.getElementById('transcript').getElementsByTagName('*').length")
    return heap, metrics["Nodes"], elements, renderer_rss(browser)


def renderer_rss(browser: Any) -> float:
    """The largest page renderer's RSS, MB (the page's: the others hold blank pages; Chromium's
    own UI has a renderer too, left out)."""
    processes = browser.new_browser_cdp_session().send("SystemInfo.getProcessInfo")["processInfo"]
    largest = 0
    for process in processes:
        proc = Path(f"/proc/{process['id']}")
        if process["type"] == "renderer" and b"--top-chrome-webui" not in (proc / "cmdline").read_bytes():
            status = (proc / "status").read_text()
            largest = max(largest, int(status.split("VmRSS:")[1].split()[0]))
    return largest / 1024


def report(portal: BlockingPortal, browser: Any, marks: list[int], rounds: int, before: str | None) -> None:
    trees = {"after": str(Path(__file__).resolve().parents[2] / "src")}
    if before:
        trees["before"] = before
    got: dict[str, list[list[Sample]]] = {name: [] for name in trees}
    for n in range(rounds):
        for name in sorted(trees, reverse=n % 2 == 1):  # alternating which goes first
            got[name].append(grow(portal, browser, marks, trees[name]))
    for name, runs in got.items():
        parts = []
        for i, mark in enumerate(marks):
            heap, nodes, elements, rss = (statistics.median(run[i][k] for run in runs) for k in range(4))
            parts.append(
                f"{mark} envelopes: JS heap {heap:.1f} MB, {nodes:.0f} DOM nodes ({elements:.0f} elements "
                f"in the transcript), renderer RSS {rss:.0f} MB"
            )
        print(f"page {name} ({trees[name]}), live growth, medians of n={rounds}: " + "; ".join(parts))
    print(f"load {os.getloadavg()[0]:.1f}")
