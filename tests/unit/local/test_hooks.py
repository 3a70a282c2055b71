"""The --settings overlay, the hook channel and hook payload parsing (plus one run of the real Claude)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from happy_launcher.errors import InputFileError, UsageError
from happy_launcher.local import permission_hook
from happy_launcher.local.hooks import (
    HOOK_TIMEOUT_S,
    PERMISSION_HOOK_TIMEOUT_S,
    HookChannel,
    HookEvent,
    build_settings_overlay,
    hook_command,
    parse_hook_line,
    permission_hook_command,
)

CMD = "our-hook"
OURS = {"hooks": [{"type": "command", "command": CMD, "timeout": HOOK_TIMEOUT_S}]}


def overlay(user: str | None, cwd: Path, **kw: Any) -> dict[str, Any]:
    data = json.loads(build_settings_overlay(user, CMD, cwd=cwd, **kw))
    assert isinstance(data, dict)
    return data


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- overlay ----------------------------------------------------------------------------------------


def test_overlay_without_user_settings(tmp_path: Path) -> None:
    # UserPromptSubmit confirms inject mode's prompts (local/injector.py).
    assert overlay(None, tmp_path) == {"hooks": {"SessionStart": [OURS], "UserPromptSubmit": [OURS]}}


def test_overlay_keeps_user_hooks_and_settings(tmp_path: Path) -> None:
    user_start = {"matcher": "startup", "hooks": [{"type": "command", "command": "u1"}]}
    user_stop = {"hooks": [{"type": "command", "command": "u2"}]}
    user = {
        "model": "m",
        "env": {"A": "1"},
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {"SessionStart": [user_start], "Stop": [user_stop]},
    }
    assert overlay(json.dumps(user), tmp_path) == {
        "model": "m",
        "env": {"A": "1"},
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {"SessionStart": [user_start, OURS], "Stop": [user_stop], "UserPromptSubmit": [OURS]},
    }


def test_overlay_reads_a_path_relative_to_cwd(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "s.json").write_text('{"model": "rel"}')
    assert overlay("conf/s.json", tmp_path)["model"] == "rel"
    assert overlay(str(tmp_path / "conf" / "s.json"), Path("/"))["model"] == "rel"


def test_overlay_leaves_disable_all_hooks_to_the_user_unless_asked(tmp_path: Path) -> None:
    assert "disableAllHooks" not in overlay(None, tmp_path)
    assert overlay('{"disableAllHooks": true}', tmp_path)["disableAllHooks"] is True
    assert overlay('{"disableAllHooks": true}', tmp_path, enable_all_hooks=True)["disableAllHooks"] is False
    assert overlay(None, tmp_path, enable_all_hooks=True)["disableAllHooks"] is False


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ("missing.json", "can't be read"),
        ("{not json", "not valid JSON"),
        ("bad.json", "not valid JSON"),
        ("list.json", "must be a JSON object"),
        ('{"hooks": []}', '"hooks" must be an object'),
        ('{"hooks": {"SessionStart": {}}}', "hooks.SessionStart"),
    ],
)
def test_invalid_user_settings_are_a_usage_error(tmp_path: Path, user: str, message: str) -> None:
    (tmp_path / "bad.json").write_text("{,}")
    (tmp_path / "list.json").write_text("[1]")
    with pytest.raises(UsageError, match=message) as info:
        build_settings_overlay(user, CMD, cwd=tmp_path)
    assert "\n" not in str(info.value)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=str(tmp_path / "nope.json")):
        build_settings_overlay("nope.json", CMD, cwd=tmp_path)


# -- channel ----------------------------------------------------------------------------------------


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A permissive umask, so the modes checked below are our doing."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("open_umask")
def test_channel_files_are_private(tmp_path: Path) -> None:
    with HookChannel(tmp_path / "run") as channel:
        assert channel.dir.parent == tmp_path / "run"
        assert channel.dir.name.startswith(f"{os.getpid()}-")
        assert mode(channel.dir) == 0o700
        assert mode(channel.events_path) == 0o600
        assert channel.events_path.read_bytes() == b""
        settings = channel.write_settings('{"model": "m"}', cwd=tmp_path)
        assert settings.parent == channel.dir
        assert mode(settings) == 0o600
        data = json.loads(settings.read_text())
        assert data["model"] == "m"
        assert data["hooks"]["SessionStart"][0]["hooks"][0]["command"] == channel.command


def test_channel_is_removed_on_close_and_close_is_idempotent(tmp_path: Path) -> None:
    channel = HookChannel(tmp_path)
    channel.write_settings(None, cwd=tmp_path)
    channel.close()
    assert not channel.dir.exists()
    channel.close()
    assert list(tmp_path.iterdir()) == []


def test_channel_is_removed_on_exception(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), HookChannel(tmp_path) as channel:
        channel.events_path.write_text("x\n")
        raise RuntimeError("boom")
    assert not channel.dir.exists()


def test_bad_user_settings_leave_no_overlay(tmp_path: Path) -> None:
    with HookChannel(tmp_path / "run") as channel:
        with pytest.raises(UsageError):
            channel.write_settings("{oops", cwd=tmp_path)
        assert not (channel.dir / HookChannel.SETTINGS_NAME).exists()


def test_two_channels_do_not_collide(tmp_path: Path) -> None:
    with HookChannel(tmp_path) as a, HookChannel(tmp_path) as b:
        assert a.dir != b.dir


# -- the hook command, run by a real shell -----------------------------------------------------------


def run_hook(command: str, payload: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["/bin/sh", "-c", command], input=payload, capture_output=True, timeout=10)


def test_hook_command_appends_one_payload_per_line(tmp_path: Path) -> None:
    events = tmp_path / "dir with 'quotes' and $x" / "events.jsonl"
    events.parent.mkdir()
    events.write_bytes(b'{"partial')  # a run killed mid-write must not swallow the next payload
    command = hook_command(events)
    payloads = [
        b'{"session_id":"a","hook_event_name":"SessionStart"}\n',
        b'{"session_id":"b","hook_event_name":"X"}',
    ]
    for p in payloads:
        done = run_hook(command, p)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    parsed = [parse_hook_line(line) for line in events.read_bytes().splitlines()]
    assert [e.session_id for e in parsed if e is not None] == ["a", "b"]


def test_hook_command_never_fails_when_the_launcher_is_gone(tmp_path: Path) -> None:
    command = hook_command(tmp_path / "gone" / "events.jsonl")
    done = run_hook(command, b'{"session_id":"a"}\n' * 10_000)  # more than a pipe buffer: stdin is drained
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not (tmp_path / "gone").exists()


# -- parsing ---------------------------------------------------------------------------------------


def test_parse_hook_line() -> None:
    raw = {
        "session_id": "s1",
        "transcript_path": "/p/s1.jsonl",
        "cwd": "/p",
        "hook_event_name": "SessionStart",
        "source": "clear",
        "extra": [1],
    }
    event = parse_hook_line(json.dumps(raw).encode() + b"\r\n")
    assert event == HookEvent("SessionStart", "s1", Path("/p/s1.jsonl"), "clear", "/p")


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"   \n",
        b"{",
        b"[]",
        b"42",
        b'{"hook_event_name": "X"}',
        b'{"session_id": "s"}',
        b'{"session_id": 1, "hook_event_name": "X"}',
        b"\xff\xfe",
    ],
)
def test_parse_hook_line_is_tolerant(line: bytes) -> None:
    assert parse_hook_line(line) is None


def test_parse_hook_line_ignores_ill_typed_optional_fields() -> None:
    event = parse_hook_line(
        b'{"session_id": "s", "hook_event_name": "Stop", "transcript_path": 3, "source": null}'
    )
    assert event == HookEvent("Stop", "s")


def test_the_permission_hook_is_added_with_a_long_timeout_and_a_private_copy(tmp_path: Path) -> None:
    sock = tmp_path / "home" / "control" / "4242.sock"
    with HookChannel(tmp_path / "run") as channel:
        settings = channel.write_settings(
            '{"hooks": {"PermissionRequest": [{"hooks": []}]}}', cwd=tmp_path, control_socket=sock
        )
        data = json.loads(settings.read_text())
        script = channel.dir / HookChannel.PERMISSION_HOOK_NAME
        assert script.read_bytes() == Path(permission_hook.__file__).read_bytes() and mode(script) == 0o600
        theirs, ours = data["hooks"]["PermissionRequest"]  # the user's hooks are kept, ours last
        assert theirs == {"hooks": []}
        assert ours == {
            "hooks": [
                {
                    "type": "command",
                    "command": permission_hook_command(script, sock),
                    "timeout": PERMISSION_HOOK_TIMEOUT_S,
                }
            ]
        }
        assert PERMISSION_HOOK_TIMEOUT_S >= 3600  # Claude's default (600 s) would cut a remote answer short
    assert "PermissionRequest" not in overlay(None, tmp_path)["hooks"]  # only when a socket is served


# -- the kept overlay (Claude's resume hint names it: issue 16 §6) ---------------------------------


def test_a_kept_overlay_stays_after_the_run_as_the_users_settings_alone(tmp_path: Path) -> None:
    kept, sock = tmp_path / "settings", tmp_path / "control" / "4242.sock"
    with HookChannel(tmp_path / "run", kept_dir=kept) as channel:
        settings = channel.write_settings('{"model": "m"}', cwd=tmp_path, control_socket=sock)
        assert settings == kept / f"{channel.dir.name}.json" and mode(settings) == 0o600
        during = json.loads(settings.read_text())
        assert set(during["hooks"]) == {"SessionStart", "UserPromptSubmit", "PermissionRequest"}
    assert not channel.dir.exists()
    assert json.loads(settings.read_text()) == {"model": "m"} and mode(settings) == 0o600
    assert mode(kept) == 0o700


def test_every_hook_of_an_overlay_left_by_a_dead_happy_exits_0_and_does_nothing(tmp_path: Path) -> None:
    kept, sock = tmp_path / "settings", tmp_path / "control" / "4242.sock"
    channel = HookChannel(tmp_path / "run", kept_dir=kept)
    settings = channel.write_settings(None, cwd=tmp_path, control_socket=sock)
    shutil.rmtree(channel.dir)  # killed: nothing rewrote the overlay, the sweep took its files
    hooks = json.loads(settings.read_text())["hooks"]
    payload = b'{"session_id":"s","hook_event_name":"PermissionRequest","tool_name":"Bash"}\n'
    for event, entries in hooks.items():
        for entry in entries:
            for hook in entry["hooks"]:
                done = run_hook(hook["command"], payload)
                assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), event
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "settings"]
    assert list((tmp_path / "run").iterdir()) == []
