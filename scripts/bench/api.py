#!/usr/bin/env python3
"""Python API cost: `happy_launcher.open_session` + one `send` vs a bare `ClaudeSDKClient` doing
the same one-prompt turn, the real bundled Claude against the fake Messages API, same machine,
same run, interleaved (api, bare, api, …). Each run is a fresh session: connect, prompt, reply,
disconnect. The API's run also mirrors the session into the store (and tails the transcript).
Target: median ratio <= 1.10.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import happy_launcher  # noqa: E402
from tests.support.claude_env import ClaudeEnv, make_claude_env  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic, Reply, Script, Text  # noqa: E402


async def via_api(cenv: ClaudeEnv, home: Path) -> float:
    start = time.perf_counter()
    env = {**cenv.env, "HAPPY_CLAUDE_PATH": str(cenv.binary)}
    async with happy_launcher.open_session(
        cenv.cwd, env=env, home=home, permission_mode="bypassPermissions"
    ) as s:
        texts = [e async for e in s.send("hello") if e.ev.t == "text"]
    elapsed = time.perf_counter() - start
    assert any(getattr(e.ev, "text", "") == "Echo: hello" for e in texts)
    return elapsed


async def bare(cenv: ClaudeEnv) -> float:
    start = time.perf_counter()
    options = ClaudeAgentOptions(
        cli_path=cenv.binary,
        cwd=cenv.cwd,
        env=dict(cenv.env),
        session_id=str(uuid.uuid4()),
        system_prompt={"type": "preset", "preset": "claude_code"},
        setting_sources=["user", "project", "local"],
        permission_mode="bypassPermissions",
        include_partial_messages=True,
    )
    async with ClaudeSDKClient(options) as client:
        await client.query("hello")
        async for _ in client.receive_response():
            pass
    return time.perf_counter() - start


async def main(runs: int) -> None:
    script = Script(fallback=lambda req: Reply([Text("Echo: " + req.last_user_text)]))
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(script) as fake:
        cenv = make_claude_env(Path(tmp) / "claude", fake.url, use_config_dir=True)
        home = Path(tmp) / "happy"
        await via_api(cenv, home)  # warm-up: page cache, imports, the store's creation
        await bare(cenv)
        api, sdk = [], []
        for _ in range(runs):
            api.append(await via_api(cenv, home))
            sdk.append(await bare(cenv))
    a, b = statistics.median(api), statistics.median(sdk)
    ratios = statistics.median(x / y for x, y in zip(api, sdk, strict=True))
    print(f"Python API one-shot (median of {runs} interleaved pairs, load {os.getloadavg()[0]:.2f}):")
    print(f"  bare ClaudeSDKClient    {b * 1000:7.0f} ms")
    print(f"  happy_launcher session  {a * 1000:7.0f} ms  (+{(a - b) * 1000:.0f} ms)")
    print(
        f"  ratio                   {a / b:7.2f}   (median of per-pair ratios {ratios:.2f}; target <= 1.10)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="pairs of runs (default 9)")
    anyio.run(main, parser.parse_args().runs)
