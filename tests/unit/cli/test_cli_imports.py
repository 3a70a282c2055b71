"""The CLI's start-up: listing the verbs loads none of their subsystems (each verb imports what it
runs when it runs), `happy watch --json` of an ended session reads the store alone, and `happy
claude` spawns Claude before the session's modules load. Read in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect

from happy_launcher.home.procs import this_process
from happy_launcher.protocol import EnvelopeFactory, SequentialIds
from happy_launcher.store.sessions import SessionStore

# What listing the verbs may load of ours besides cli/: the errors, where HAPPY_HOME_DIR is.
REGISTRATION = {
    "happy_launcher.errors",
    "happy_launcher.version",
    "happy_launcher.home",
    "happy_launcher.home.dirs",
}


def loaded_after(code: str, home: Path | None = None) -> set[str]:
    """The modules loaded in a fresh interpreter once `code` has run (it may print to stdout)."""
    probe = f"import json, sys\n{code}\nsys.stderr.write(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, **({"HAPPY_HOME_DIR": str(home)} if home else {})}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_the_verbs_help_loads_every_verb_and_none_of_their_subsystems() -> None:
    run = "from happy_launcher.cli.app import run_app\nrun_app(['--help'])"
    ours = {m for m in loaded_after(run) if m.startswith("happy_launcher.")}
    assert {"happy_launcher.cli.control_cmds", "happy_launcher.cli.daemon_cmds"} <= ours  # listed
    assert {m for m in ours if not m.startswith("happy_launcher.cli")} <= REGISTRATION


def test_watch_json_of_an_ended_session_loads_no_rich_nor_event_loop_nor_control_client_nor_logging(
    tmp_path: Path,
) -> None:
    factory = EnvelopeFactory(SequentialIds("imp"))
    with SessionStore.open(tmp_path) as store:
        store.create_session("hs-ended", cwd="/x", started_at=1, status="completed")
        store.append_envelopes("hs-ended", [factory.user_text("hello", 1)])
    run = "from happy_launcher.cli.app import run_app\nrun_app(['watch', '--json', 'hs-ended'])"
    loaded = loaded_after(run, tmp_path)
    assert "happy_launcher.control.history" in loaded  # it did read the session: the probe is sound
    assert not {"rich", "asyncio", "anyio", "pydantic", "happy_launcher.control.client"} & loaded
    assert not {m for m in loaded if m.startswith(("happy_launcher.runner", "happy_launcher.local"))}
    # Each costs 5-20 ms to import here, against a first line within 100 ms (issue 20).
    assert not {"logging", "dataclasses", "socket"} & loaded


def test_sessions_lists_what_the_store_describes_without_event_loop_nor_control_client(
    tmp_path: Path,
) -> None:
    with SessionStore.open(tmp_path) as store:
        store.create_session("hs-live", cwd="/x", started_at=1, owner=this_process(os.getpid()))
        store.note_front("hs-live", "remote", terminal=True)  # as its launcher does
    loaded = loaded_after("from happy_launcher.cli.app import run_app\nrun_app(['sessions'])", tmp_path)
    assert "happy_launcher.control.views" in loaded
    assert not {"asyncio", "anyio", "pydantic", "happy_launcher.control.client"} & loaded
    assert not {"logging", "dataclasses", "socket"} & loaded  # as `watch` of an ended session


# What may load while Claude boots, not before its spawn: the mirror, the event loop, logging and
# dataclasses (`happy claude -p` against `claude -p`, issue 20).
WHILE_CLAUDE_BOOTS = {"logging", "dataclasses", "asyncio", "anyio", "sqlite3", "orjson"}


def loaded_at_spawn(tmp_path: Path, spawner: str, argv: list[str]) -> set[str]:
    """The modules loaded when `happy <argv>`, run in a terminal, spawns Claude: `spawner`
    ("module.function", what spawns it) is replaced by a report of them."""
    module, function = spawner.rsplit(".", 1)
    probe = (
        "import json, os, sys\n"
        f"import {module} as spawning\n"
        "def spawn(*args, **kwargs):\n"
        "    print('LOADED', json.dumps(sorted(sys.modules)), flush=True)\n"
        "    os._exit(0)\n"
        f"spawning.{function} = spawn\n"
        "from happy_launcher.cli.main import main\n"
        f"sys.argv = {['happy', *argv]!r}\n"
        "main()\n"
    )
    env = {**os.environ, "HAPPY_HOME_DIR": str(tmp_path), "HAPPY_CLAUDE_PATH": "/bin/true", "TERM": "xterm"}
    terminal = pexpect.spawn(sys.executable, ["-c", probe], env=env, cwd=str(tmp_path), timeout=30)
    terminal.expect(rb"LOADED (\[.*\])\r\n")
    loaded = set(json.loads(terminal.match.group(1)))
    terminal.expect(pexpect.EOF)
    return loaded


def session_modules(loaded: set[str]) -> set[str]:
    return {m for m in loaded if m.startswith(("happy_launcher.session.launcher", "happy_launcher.store."))}


def test_a_headless_run_spawns_claude_before_the_session_s_modules_load(tmp_path: Path) -> None:
    loaded = loaded_at_spawn(
        tmp_path, "happy_launcher.local.headless.spawn_direct", ["claude", "-p", "hello"]
    )
    assert "happy_launcher.local.launch" in loaded  # it did plan Claude's launch: the probe is sound
    assert not WHILE_CLAUDE_BOOTS & loaded
    assert not session_modules(loaded)


def test_the_tui_s_run_spawns_claude_before_the_session_s_modules_load(tmp_path: Path) -> None:
    loaded = loaded_at_spawn(tmp_path, "happy_launcher.local.launcher.start_pty", ["claude"])
    assert "happy_launcher.local.pty_start" in loaded  # it did get to the spawn: the probe is sound
    assert not WHILE_CLAUDE_BOOTS & loaded
    assert not session_modules(loaded)
