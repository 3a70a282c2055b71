#!/usr/bin/env python3
"""Does happy still work with another Claude Code? (issue 21)

Installs the requested Claude Code from the npm registry (`@anthropic-ai/claude-code`, whose
platform package carries the native binary; install scripts are not run) and/or the requested
`claude-agent-sdk` from PyPI into a scratch venv layered over this one, then with that binary as
HAPPY_CLAUDE_PATH (the npm one when --cli is given, else the SDK's bundled one):

1. regenerates the goldens (scripts/gen_fixtures.py, gen_sdk_fixtures.py, gen_hook_fixtures.py)
   into a scratch folder and compares them with the committed ones by shape
   (tests/support/drift.py: record kinds, subtypes, keys, hook payload fields);
2. replays both sets of transcripts through the mapper (new unknown kinds, envelope shapes);
3. runs the end-to-end smoke set with that binary (and SDK).

Prints one table; exits 0 only when nothing a user would see broke (1 otherwise, 2 when an
install failed). Scratch files: $XDG_CACHE_HOME/happy_launcher/drift (default ~/.cache/...).

    scripts/drift --cli latest --sdk latest
    scripts/drift --cli 2.1.332
    scripts/drift --sdk 0.2.189 --no-smoke
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from happy_launcher.protocol import SequentialIds  # noqa: E402
from happy_launcher.session.replay import replay_file  # noqa: E402
from tests.support import drift  # noqa: E402
from tests.support.drift import Row  # noqa: E402

NPM_PACKAGE = "@anthropic-ai/claude-code"
SDK_PACKAGE = "claude-agent-sdk"
SMOKE = {
    "tests/e2e/test_local_e2e.py::test_prompt_reply_exit": "TUI turn",
    "tests/e2e/test_headless_e2e.py::test_text_output_is_byte_identical_and_mirrored": "headless",
    "tests/e2e/test_remote_e2e.py::test_text_turn_live_equals_replay": "remote turn",
    "tests/e2e/test_switch_e2e.py::test_local_then_send_from_elsewhere_then_ctrl_t_back": "switch round trip",
    "tests/e2e/test_permission_e2e.py::test_happy_approve_after_the_dialog_draws": "TUI permission elsewhere",
    "tests/e2e/test_inject_e2e.py::test_idle_then_a_repeat_is_not_typed_again": "inject",
}


class InstallError(RuntimeError):
    pass


def run(argv: Sequence[str], *, timeout: float = 600, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False, **kw)


# -- installing -----------------------------------------------------------------------------------


def install_cli(spec: str, cache: Path) -> tuple[str, Path]:
    """npm's version for `spec` and the platform binary npm picked for this machine."""
    view = run(["npm", "view", f"{NPM_PACKAGE}@{spec}", "version", "--json"])
    if view.returncode != 0:
        raise InstallError(f"npm view {NPM_PACKAGE}@{spec} failed: {view.stderr.strip()[:300]}")
    version = json.loads(view.stdout)
    version = version[-1] if isinstance(version, list) else version
    prefix = cache / f"cli-{version}"
    binaries = sorted((prefix / "node_modules" / "@anthropic-ai").glob("claude-code-*/claude"))
    if not binaries:
        args = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--ignore-scripts"]
        done = run([*args, f"{NPM_PACKAGE}@{version}"])
        if done.returncode != 0:
            raise InstallError(f"npm install {NPM_PACKAGE}@{version} failed: {done.stderr.strip()[:300]}")
        binaries = sorted((prefix / "node_modules" / "@anthropic-ai").glob("claude-code-*/claude"))
    if not binaries:
        raise InstallError(f"{NPM_PACKAGE}@{version} brought no platform binary for this machine")
    binaries[0].chmod(0o755)
    return version, binaries[0]


def install_sdk(spec: str, cache: Path) -> tuple[str, Path]:
    """A venv with `claude-agent-sdk` (`spec`: a version or latest) over this venv's packages
    (a .pth after its own site-packages): its version and its python."""
    venv = cache / f"sdk-{spec}"
    python = venv / "bin" / "python"
    if not python.exists():
        made = run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
        if made.returncode != 0:
            raise InstallError(f"could not make a venv at {venv}: {made.stderr.strip()[:300]}")
        site = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
        Path(site.stdout.strip(), "happy-base.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        # The e2e tests run the `happy` beside their python: this venv's, so remote mode uses its SDK.
        happy = venv / "bin" / "happy"
        happy.write_text(
            f"#!{python}\nimport sys\nfrom happy_launcher.cli.main import main\nsys.exit(main())\n"
        )
        happy.chmod(0o755)
    requirement = SDK_PACKAGE if spec == "latest" else f"{SDK_PACKAGE}=={spec}"
    upgrade = ["--upgrade"] if spec == "latest" else []
    done = run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *upgrade,
                requirement])  # fmt: skip
    if done.returncode != 0:
        raise InstallError(f"pip install {requirement} failed: {done.stderr.strip()[-300:]}")
    version = run([str(python), "-c", "import importlib.metadata as m; print(m.version('claude-agent-sdk'))"])
    return version.stdout.strip(), python


def bundled_binary(python: Path) -> Path:
    code = "import claude_agent_sdk, pathlib; print(pathlib.Path(claude_agent_sdk.__file__).parent)"
    return Path(run([str(python), "-c", code]).stdout.strip()) / "_bundled" / "claude"


# -- regenerating and comparing ---------------------------------------------------------------------


@dataclass(frozen=True)
class Env:
    binary: Path
    python: Path  # the one with the SDK under test (and pytest, through the base venv)
    out: Path  # this run's scratch folder

    def environ(self) -> dict[str, str]:
        src = str(REPO / "src")
        path = os.environ.get("PYTHONPATH", "")
        return {**os.environ, "HAPPY_CLAUDE_PATH": str(self.binary),
                "PYTHONPATH": f"{path}:{src}" if path else src}  # fmt: skip


def regenerate(env: Env, script: str, name: str) -> Row:
    started = time.monotonic()
    args = [
        str(env.python),
        f"scripts/{script}",
        "--out",
        str(env.out / name),
        "--work",
        str(env.out / f"work-{name}"),
    ]
    done = run(args, cwd=REPO, env=env.environ(), timeout=900)
    took = f"{time.monotonic() - started:.0f}s"
    if done.returncode == 0:
        return Row(f"{name}: regenerate", "ok", took)
    failed = [
        line for line in (done.stdout + done.stderr).splitlines() if "FAILED" in line or "failed" in line
    ]
    return Row(f"{name}: regenerate", "FAIL", f"{took}; {' '.join(failed)[:400]}")


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def scenario_dirs(root: Path) -> dict[str, Path]:
    return {d.name: d for d in sorted(root.iterdir()) if d.is_dir() and (d / "scenario.json").is_file()}


def transcript_features(scenario: Path) -> set[drift.Feature]:
    feats: set[drift.Feature] = set()
    for path in scenario.rglob("*.jsonl"):
        if path.name != "stream.jsonl":
            feats |= drift.record_features(load_jsonl(path))
    return feats


def replay(scenario: Path) -> tuple[list[str], dict[str, int]]:
    """The envelope shapes of a scenario's main transcript, and the mapper's unknown kinds."""
    main = next(p for p in scenario.glob("*.jsonl") if p.name != "stream.jsonl")
    out = io.BytesIO()
    summary = replay_file(main, SequentialIds(), out)
    unknown = summary.mapper.get("unknown_kinds") or {}
    envelopes = [orjson.loads(line) for line in out.getvalue().splitlines()]
    return drift.envelope_shapes(envelopes), dict(unknown) if isinstance(unknown, dict) else {}


def compare_suite(label: str, committed: Path, fresh: Path) -> list[Row]:
    old_dirs, new_dirs = scenario_dirs(committed), scenario_dirs(fresh)
    common = sorted(set(old_dirs) & set(new_dirs))
    rows = []
    for kind, features in (("transcript", transcript_features), ("stream", _stream_features)):
        old: set[drift.Feature] = set()
        new: set[drift.Feature] = set()
        for name in common:
            old |= features(old_dirs[name])
            new |= features(new_dirs[name])
        if old or new:
            rows += drift.feature_rows(f"{label} {kind}", old, new)
    old_shapes, new_shapes, old_unknown, new_unknown = {}, {}, {}, {}
    for name in common:
        old_shapes[name], u_old = replay(old_dirs[name])
        new_shapes[name], u_new = replay(new_dirs[name])
        old_unknown.update(u_old)
        new_unknown.update(u_new)
    rows += drift.unknown_kind_rows(label, old_unknown, new_unknown)
    rows += drift.shape_rows(label, old_shapes, new_shapes)
    return rows


def _stream_features(scenario: Path) -> set[drift.Feature]:
    stream = scenario / "stream.jsonl"
    return drift.stream_features(load_jsonl(stream)) if stream.is_file() else set()


def compare_hooks(committed: Path, fresh: Path) -> list[Row]:
    if not (fresh / "payloads.jsonl").is_file():
        return []
    old = drift.hook_features(load_jsonl(committed / "payloads.jsonl"))
    return drift.feature_rows("hooks", old, drift.hook_features(load_jsonl(fresh / "payloads.jsonl")))


def smoke(env: Env) -> list[Row]:
    report = env.out / "smoke.xml"
    args = [str(env.python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
            f"--junitxml={report}", *SMOKE]  # fmt: skip
    run(args, cwd=REPO, env=env.environ(), timeout=1200)
    xml = report.read_text() if report.is_file() else "<testsuites/>"
    return drift.junit_rows(xml, SMOKE)


# -- the run ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", metavar="VERSION", help="Claude Code from npm: a version or latest")
    ap.add_argument("--sdk", metavar="VERSION", help="claude-agent-sdk from PyPI: a version or latest")
    ap.add_argument("--fixtures", type=Path, default=REPO / "tests" / "fixtures",
                    help="the committed goldens to compare with (default: %(default)s)")  # fmt: skip
    ap.add_argument("--no-smoke", action="store_true", help="skip the end-to-end smoke set")
    args = ap.parse_args(argv)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "happy_launcher" / "drift"
    cache.mkdir(parents=True, exist_ok=True)
    try:
        rows, env = prepare(args.cli, args.sdk, cache)
    except InstallError as exc:
        print(f"drift: {exc}", file=sys.stderr)
        return 2
    for script, name in (
        ("gen_fixtures.py", "golden"),
        ("gen_sdk_fixtures.py", "sdk"),
        ("gen_hook_fixtures.py", "hooks"),
    ):
        rows.append(regenerate(env, script, name))
        print(f"drift: {rows[-1].check} {rows[-1].status}", file=sys.stderr, flush=True)
    for name in ("golden", "sdk"):
        rows += compare_suite(name, args.fixtures / name, env.out / name)
    rows += compare_hooks(args.fixtures / "hooks", env.out / "hooks")
    if not args.no_smoke:
        rows += smoke(env)
    print(drift.render(rows))
    print(f"(scratch: {env.out})")
    return drift.exit_code(rows)


def prepare(cli: str | None, sdk: str | None, cache: Path) -> tuple[list[Row], Env]:
    """Install what was asked for; the rows naming the versions, and where to run."""
    rows = []
    python, binary = Path(sys.executable), None
    if sdk:
        version, python = install_sdk(sdk, cache)
        binary = bundled_binary(python)
        rows.append(
            Row("claude-agent-sdk (PyPI)", "ok", f"{version}, bundles Claude Code {_version(binary)}")
        )
    if cli:
        version, binary = install_cli(cli, cache)
        rows.append(Row("Claude Code (npm)", "ok", f"{version}: {binary}"))
    if binary is None:
        binary = bundled_binary(python)
        rows.append(Row("Claude Code (bundled)", "ok", _version(binary)))
    out = cache / f"run-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True)
    return rows, Env(binary, python, out)


def _version(binary: Path) -> str:
    return run([str(binary), "--version"], timeout=60).stdout.strip().split(" ")[0]


if __name__ == "__main__":
    sys.exit(main())
