#!/usr/bin/env python3
"""Regenerate the recorded hook payloads under tests/fixtures/hooks/.

Runs the real Claude Code (HAPPY_CLAUDE_PATH, else the bundled one) once with `-p` against the
scripted fake Messages API, with a `--settings` that appends every payload of the hooks happy
installs (SessionStart, UserPromptSubmit, PermissionRequest: a Bash call no rule allows) to
``<out>/payloads.jsonl``, as happy's own hook does (local/hooks.py):

    .venv/bin/python scripts/gen_hook_fixtures.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.claude_env import claude_version, make_claude_env
from tests.support.fake_anthropic import FakeAnthropic, Reply, Rule, Script, Text, ToolUse

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "hooks"
EVENTS = ("SessionStart", "UserPromptSubmit", "PermissionRequest")


def hook_script() -> Script:
    touch = ToolUse("Bash", {"command": "touch asked.txt", "description": "Touch a file"})
    return Script(
        [
            Rule(name="after Bash", tool_result="Bash", reply=Reply([Text("Done.")])),
            Rule(name="tool call", prompt="Touch it", reply=Reply([Text("Touching."), touch])),
        ]
    )


def capture(out: Path, work: Path) -> list[dict[str, object]]:
    """Run Claude once and return (and save) the hook payloads it sent, ids and paths included."""
    out.mkdir(parents=True, exist_ok=True)
    log = work / "payloads.jsonl"
    log.unlink(missing_ok=True)
    command = f"{{ cat; echo; }} >> {shlex.quote(str(log))}"
    hooks = {e: [{"hooks": [{"type": "command", "command": command}]}] for e in EVENTS}
    with FakeAnthropic(hook_script()) as fake:
        cenv = make_claude_env(work / "claude", fake.url, permission_mode="default", allow=())
        argv = [*cenv.command("-p", "Touch it"), "--settings", json.dumps({"hooks": hooks})]
        subprocess.run(argv, cwd=cenv.cwd, env=cenv.env, capture_output=True, timeout=60, check=False)
    payloads = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    (out / "payloads.jsonl").write_text("".join(json.dumps(p) + "\n" for p in payloads))
    (out / "VERSION").write_text(claude_version(cenv.binary) + "\n")
    return payloads


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="fixtures folder (default: %(default)s)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "happy-hook-fixtures")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    payloads = capture(args.out, args.work.resolve())
    names = sorted({str(p.get("hook_event_name")) for p in payloads})
    print(f"{len(payloads)} hook payloads ({', '.join(names)}) -> {args.out}")
    missing = sorted(set(EVENTS) - set(names))
    if missing:
        print(f"no payload for: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
