"""happy's PermissionRequest hook in the TUI (issue 10 §1): `python -S -I permission_hook.py <socket>`.

Claude runs it when it would show a permission dialog, with the request's payload on stdin. It asks
the running happy over its control socket (a `permission` request, docs/control-protocol.md) and
waits for the decision, while the TUI shows its dialog as usual:
- allowed / denied: printed as the hook's decision, so the dialog closes (or never draws);
- withdrawn (the user answered in the TUI, the turn ended): nothing printed, the dialog decides;
- happy gone (no socket, refused, closed, any error): exit at once, nothing printed. Claude is
  never blocked on happy, and never gets a deny happy did not decide.
It also leaves when Claude stops reading its answer (stdout's pipe closed).

Stdlib only, and no `site` (`-S -I`): it starts in ~10 ms. It must never import happy_launcher.
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys
from typing import Any

MAX_LINE = 1 << 20  # the control socket's request limit (control_link.MAX_REQUEST_LINE)
_CUT = 4096  # characters of a long string kept when a request would be over the limit


def main(argv: list[str]) -> int:
    try:
        payload = json.load(sys.stdin)
        line = request_line(payload)
        if line is None or len(argv) != 2:
            return 0
        reply = ask(argv[1], line)
        output = None if reply is None else hook_output(reply)
        if output is not None:
            sys.stdout.write(json.dumps(output))
    except Exception:  # whatever went wrong, the TUI's dialog decides
        pass
    return 0


def request_line(payload: Any) -> bytes | None:
    """The `permission` request for Claude's hook payload; None if it is not one."""
    if not isinstance(payload, dict):
        return None
    tool, tool_input = payload.get("tool_name"), payload.get("tool_input")
    if not isinstance(tool, str) or not tool or not isinstance(tool_input, dict):
        return None
    request = {"type": "permission", "id": "hook", "tool_name": tool, "tool_input": tool_input}
    line = json.dumps(request, ensure_ascii=False).encode()
    if len(line) > MAX_LINE:  # a huge Write: clients see the start of each long value
        request["tool_input"] = _cut(tool_input)
        line = json.dumps(request, ensure_ascii=False).encode()
    return line + b"\n"


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _CUT:
        return value[:_CUT] + f"… [{len(value) - _CUT} more characters]"
    if isinstance(value, dict):
        return {key: _cut(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_cut(item) for item in value]
    return value


def ask(path: str, line: bytes) -> dict[str, Any] | None:
    """Send `line` to the socket at `path` and wait for the reply; None on EOF (happy gone) or
    when Claude stopped listening to us."""
    directory, name = os.path.split(path)
    if directory:
        os.chdir(directory)  # a relative name: a socket path is limited to 107 bytes
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(name)
        sock.sendall(line)
        poll = select.poll()
        poll.register(sock, select.POLLIN)
        poll.register(sys.stdout.fileno(), 0)  # POLLERR / POLLHUP: Claude closed its end
        received = b""
        while b"\n" not in received:
            for fd, _ in poll.poll():
                if fd != sock.fileno():
                    return None
            data = sock.recv(65536)
            if not data or len(received) > MAX_LINE:
                return None
            received += data
    reply = json.loads(received.split(b"\n", 1)[0])
    return reply if isinstance(reply, dict) else None


def hook_output(reply: dict[str, Any]) -> dict[str, Any] | None:
    """Claude's hook output for a `decision` reply; None to leave it to the TUI's dialog."""
    if reply.get("type") != "decision" or reply.get("outcome") not in ("allowed", "denied"):
        return None
    decision: dict[str, Any] = {"behavior": "allow"}
    if reply["outcome"] == "denied":
        decision = {"behavior": "deny", "message": str(reply.get("message") or "Denied by happy")}
        if reply.get("interrupt") is True:
            decision["interrupt"] = True
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
