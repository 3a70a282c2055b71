"""happy's PermissionRequest hook in the TUI (issue 10 §1): `python -S -I permission_hook.py <socket>`.

Claude runs it when it would show a permission dialog, with the request's payload on stdin. It asks
the running happy over its control socket (a `permission` request, docs/control-protocol.md) and
waits for the decision, while the TUI shows its dialog as usual:
- allowed / denied: printed as the hook's decision, so the dialog closes (or never draws);
- withdrawn (the user answered in the TUI, the turn ended): nothing printed, the dialog decides;
- happy gone (no socket, refused, closed, any error): exit at once, nothing printed. Claude is
  never blocked on happy, and never gets a deny happy did not decide.
It also leaves when Claude stops reading its answer (stdout's pipe closed).

Stdlib only, and no `site` (`-S -I`): it starts in ~20 ms. It must never import happy_launcher.
"""

from __future__ import annotations

import _socket  # not `socket`: its enums cost ~5 ms of start-up
import os
import select
import sys

TYPE_CHECKING = False  # `typing` costs ~20 ms of start-up: for the type checker only
if TYPE_CHECKING:
    from typing import Any

MAX_LINE = 1 << 20  # the control socket's request limit (control_link.MAX_REQUEST_LINE)
_CUT = 4096  # characters of a long string kept when a request would be over the limit


def main(argv: list[str]) -> int:
    try:
        line = request_line(sys.stdin.buffer.read())
        if line is None or len(argv) != 2:
            return 0
        reply = ask(argv[1], line)
        output = None if reply is None else hook_output(reply)
        if output is not None:
            sys.stdout.write(output)
    except Exception:  # whatever went wrong, the TUI's dialog decides
        pass
    return 0


def request_line(payload: bytes) -> bytes | None:
    """The `permission` request carrying Claude's payload as is (JSON is parsed by happy, not here:
    importing `json` costs ~15 ms); None if it is not a JSON object."""
    payload = payload.strip()
    if not payload.startswith(b"{"):
        return None
    # A newline can only be whitespace between JSON tokens (strings escape theirs): one line.
    line = b'{"type":"permission","id":"hook","payload":%s}' % payload.replace(b"\n", b" ").replace(
        b"\r", b" "
    )
    if len(line) > MAX_LINE:  # a huge Write: clients see the start of each long value
        import json

        data = json.loads(payload)
        cut = {key: data.get(key) for key in ("tool_name", "tool_input")}
        line = b'{"type":"permission","id":"hook","payload":%s}' % json.dumps(_cut(cut)).encode()
    return line + b"\n"


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _CUT:
        return value[:_CUT] + f"… [{len(value) - _CUT} more characters]"
    if isinstance(value, dict):
        return {key: _cut(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_cut(item) for item in value]
    return value


def ask(path: str, line: bytes) -> bytes | None:
    """Send `line` to the socket at `path` and wait for the reply line; None on EOF (happy gone) or
    when Claude stopped listening to us."""
    directory, name = os.path.split(path)
    if directory:
        os.chdir(directory)  # a relative name: a socket path is limited to 107 bytes
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(name)
        sock.sendall(line)
        poll = select.poll()
        poll.register(sock.fileno(), select.POLLIN)
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
    finally:
        sock.close()
    return received.split(b"\n", 1)[0]


def hook_output(reply: bytes) -> str | None:
    """Claude's hook output for a `decision` reply; None to leave it to the TUI's dialog."""
    if b'"outcome":"allowed"' not in reply and b'"outcome":"denied"' not in reply:
        return None  # withdrawn, or an error: cheaply (a message's own quotes are escaped)
    import json  # only for a client's decision

    data = json.loads(reply)
    if not isinstance(data, dict) or data.get("type") != "decision":
        return None
    if data.get("outcome") not in ("allowed", "denied"):
        return None
    decision: dict[str, Any] = {"behavior": "allow"}
    if data["outcome"] == "denied":
        decision = {"behavior": "deny", "message": str(data.get("message") or "Denied by happy")}
        if data.get("interrupt") is True:
            decision["interrupt"] = True
    output = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}
    return json.dumps(output)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
