"""A seeded random walk through one `happy claude` session (issue 16's soak test): typed prompts,
`happy send` (sometimes the same `--id` twice), `happy send --inject`, Ctrl-T, `happy switch`,
`happy abort` during a slow turn, kill -9 or SIGTERM of happy then `--resume`. Then the
invariants of soak_check.py. Used by tests/test_soak_e2e.py (one seed) and scripts/soak (many).

    result = run_seed(seed, actions, tmp_dir)   # result.findings.ok, result.steps
"""

from __future__ import annotations

import random
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.claude_env import make_claude_env
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.soak_check import (
    Findings,
    check_exits,
    check_messages,
    check_nothing_running,
    check_replay,
    check_sessions,
)
from tests.support.soak_run import BIG_WORD, SLOW_WORD, TOOL_WORD, Driver, StepFailed, soak_script

Action = Callable[[], str]


@dataclass
class SoakResult:
    seed: int
    steps: list[str] = field(default_factory=list)  # "n name: what it did", in order
    findings: Findings = field(default_factory=Findings)

    def report(self) -> str:
        lines = [f"soak seed {self.seed}: {len(self.steps)} actions, {self.findings.messages} messages"]
        lines += [f"  {step}" for step in self.steps]
        f = self.findings
        lines += [f"  LOST {text}" for text in f.lost] + [f"  DUPLICATED {text}" for text in f.duplicated]
        lines += [f"  VIOLATION {v}" for v in f.violations]
        return "\n".join(lines)


def other(mode: str) -> str:
    return "remote" if mode == "local" else "local"


class Soak:
    def __init__(self, seed: int, driver: Driver, log: Callable[[str], None]) -> None:
        self.seed, self.d, self.log = seed, driver, log
        self.rng = random.Random(seed)
        self.step = 0
        self.steps: list[str] = []

    def text(self, extra: str = "") -> str:
        return f"soak-{self.seed}-{self.step}{' ' + extra if extra else ''}"

    def choices(self) -> list[tuple[str, Action, int]]:
        acts: list[tuple[str, Action, int]] = [
            ("prompt", self.prompt, 3),
            ("send", self.send, 3),
            ("inject", self.inject, 2),
            ("switch", self.switch, 2),
            ("abort", self.abort, 1),
        ]
        if self.d.mode == "remote":
            acts.append(("ctrl-t", self.ctrl_t, 2))
        if self.d.resumable():
            acts += [("kill -9", self.kill9, 1), ("sigterm", self.sigterm, 1)]
        return acts

    def run(self, count: int) -> None:
        remote = self.rng.random() < 0.25
        self.steps.append(f"  0 start ({'remote' if remote else 'local'})")
        try:
            self.d.start(*(["--happy-remote"] if remote else []))
            for self.step in range(1, count + 1):
                self.d.step = self.step
                acts = self.choices()
                name, act, _ = self.rng.choices(acts, weights=[w for *_, w in acts])[0]
                before = self.d.mode
                self.steps.append(f"{self.step:3} {name} ({before})")
                self.steps[-1] += ": " + act()
                self.log(self.steps[-1])
        except StepFailed as exc:
            self.steps[-1] += f": FAILED {exc}"
            self.log(self.steps[-1])
            self.d.notes.append(f"step {self.steps[-1].strip()}")
        self.finish()

    def finish(self) -> None:
        """Bring every acknowledged message home, then exit cleanly (or say why not)."""
        d = self.d
        try:
            if d.tui is not None and d.happy_pid() is None:
                d.ended("unexpected end")
            if d.tui is None and not d.resumable():
                return
            if d.tui is None:
                self.resume()
            for message in d.pending():
                d.wait_answered(message.text)
            d.settled()
            d.exit_cleanly()
        except StepFailed as exc:
            d.notes.append(f"finishing the run: {exc}")
        finally:
            d.close()

    # -- actions: each waits until happy is idle again, and says what it did ---------------------

    def settle(self, before: str, mark: int) -> None:
        """happy idle; if the mode changed, the new front end drawn since `mark`."""
        self.d.settled()
        if self.d.mode != before:
            self.d.front_ready(self.d.mode, mark)

    def flavour(self) -> str:
        """Most prompts are echoed; some make a Bash call, or get a big reply (see soak_script)."""
        return self.rng.choice(["", "", "", TOOL_WORD, BIG_WORD])

    def prompt(self) -> str:
        text = self.text(self.flavour())
        self.d.type_prompt(text, self.step)
        self.d.wait_answered(text)
        self.d.settled()
        return text

    def send(self, *flags: str) -> str:
        d, before, mark = self.d, self.d.mode, len(self.d.t.seen)
        text, message_id = self.text(self.flavour()), f"m-{self.seed}-{self.step}"
        again = self.rng.choice(["", "", "at once", "after"])
        d.send(text, message_id, self.step, *flags)
        if again == "at once":
            d.send(text, message_id, self.step, *flags)
        d.wait_answered(text)
        if again == "after":
            d.send(text, message_id, self.step, *flags)
        self.settle(before, mark)
        return f"{text}{' (its id sent again ' + again + ')' if again else ''} -> {d.mode}"

    def inject(self) -> str:
        return self.send("--inject")

    def switch(self) -> str:
        d, to, mark = self.d, other(self.d.mode), len(self.d.t.seen)
        done = d.verb("switch", "--to", to)
        if done.returncode != 0:
            raise StepFailed(f"happy switch --to {to} exited {done.returncode}: {done.stderr.strip()}")
        d.front_ready(to, mark)
        d.settled()
        if d.mode != to:
            raise StepFailed(f"switched to {to}, status says {d.mode}")
        return f"-> {to}"

    def ctrl_t(self) -> str:
        mark = len(self.d.t.seen)
        self.d.t.child.send("\x14")
        self.d.front_ready("local", mark)
        self.d.settled()
        return f"-> {self.d.mode}"

    def slow_turn(self) -> str:
        """Type a prompt the fake answers slowly; return once its reply is streaming."""
        text = self.text(SLOW_WORD)
        self.d.type_prompt(text, self.step)
        self.d.wait(lambda: self.d.streaming(text), 30, f"the reply to {text!r} streaming")
        return text

    def abort(self) -> str:
        text = self.slow_turn()
        done = self.d.verb("abort")
        if done.returncode != 0:
            raise StepFailed(f"happy abort exited {done.returncode}: {done.stderr.strip()}")
        self.d.wait_answered(text, 30)
        status = self.d.turn_status(text)
        if status != "cancelled":
            self.d.note(f"the aborted turn of {text!r} ended {status}")
        self.d.settled()
        return f"{text} aborted ({status})"

    def kill9(self) -> str:
        variant = self.rng.choice(["idle", "right after a send", "mid-turn"])
        detail = ""
        if variant == "right after a send":  # acknowledged, not yet delivered: the next run must
            detail = self.text()
            self.d.send(detail, f"m-{self.seed}-{self.step}", self.step)
        elif variant == "mid-turn":
            detail = self.slow_turn()
        self.d.signal(signal.SIGKILL)
        self.d.ended("kill -9")
        return f"{variant} {detail} then {self.resume()}".replace("  ", " ")

    def sigterm(self) -> str:
        """SIGTERM (sometimes SIGHUP) to happy: idle, mid-turn, or as a switch begins."""
        sig = self.rng.choice([signal.SIGTERM, signal.SIGTERM, signal.SIGHUP])
        variant = self.rng.choice(["idle", "mid-turn", "mid-switch"])
        detail = ""
        if variant == "mid-turn":
            detail = self.slow_turn()
        elif variant == "mid-switch":  # `switch` answers once the switch is under way
            detail = f"to {other(self.d.mode)}"
            done = self.d.verb("switch", "--to", other(self.d.mode))
            if done.returncode != 0:
                raise StepFailed(f"happy switch exited {done.returncode}: {done.stderr.strip()}")
        self.d.signal(sig)
        try:
            self.d.ended(sig.name.lower(), timeout=15)
        except StepFailed:
            self.d.note(f"{sig.name} {variant} {detail}: happy still running 15 s later")
            self.d.signal(signal.SIGKILL)
            self.d.ended("kill -9")
        return f"{sig.name} {variant} {detail} then {self.resume()}".replace("  ", " ")

    def resume(self) -> str:
        """`happy claude --resume` the Claude session; wait for what was pending to be answered."""
        d = self.d
        if d.claude_id is None:
            raise StepFailed("no Claude session id to resume")
        pending = d.pending()
        d.start("--resume", d.claude_id)
        for message in pending:
            d.wait_answered(message.text)
        self.settle("local", 0)
        return f"--resume -> {d.mode}" + (
            f" ({len(pending)} unanswered before: answered now)" if pending else ""
        )


def run_seed(seed: int, actions: int, root: Path, log: Callable[[str], None] = lambda _: None) -> SoakResult:
    """One soak run in `root` (a fresh directory); its steps and what it found."""
    result = SoakResult(seed)
    with FakeAnthropic(soak_script(), seed=seed) as fake:
        cenv = make_claude_env(root, fake.url)
        driver = Driver(cenv, root / "home", fake)
        soak = Soak(seed, driver, log)
        try:
            soak.run(actions)
        finally:
            driver.close()
            result.steps = soak.steps
        found = result.findings
        texts = [m.text for m in driver.messages]
        check_messages(found, texts, fake.requests, driver.home)
        if driver.claude_id is not None:
            check_sessions(found, driver.home, driver.claude_id)
            check_replay(found, driver.home, cenv.transcript_path(driver.claude_id), driver.env)
        check_exits(found, driver.exits)
        check_nothing_running(found, driver.home, driver.pids)
        found.violations += driver.notes
    return result
