"""`happy web`: bind, print the pairing URL (first line of stdout), who can reach it (second
line) and its QR code, serve until interrupted."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

import anyio

from happy_launcher.errors import UsageError
from happy_launcher.spawn.spawner import spawner_for
from happy_launcher.web.auth import Pairing, allowed_hosts
from happy_launcher.web.commands import Commands
from happy_launcher.web.devices import DeviceStore
from happy_launcher.web.hidden import HiddenSessions
from happy_launcher.web.server import WebState, clock_ms, make_app

WILDCARDS = {"0.0.0.0", "::", ""}
LOOPBACKS = ("127.", "::1", "localhost")
# Any address outside this machine: a UDP socket "connected" to it (nothing is sent) takes the
# address of the interface that routes there, the LAN's.
_ROUTED = ("192.0.2.1", 9)  # TEST-NET-1 (RFC 5737)


def routed_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(_ROUTED)
        address: str = probe.getsockname()[0]
        return address


def lan_address(lookup: Callable[[], str] = routed_address) -> str:
    """This machine's address on its local network (`--lan`)."""
    try:
        address = lookup()
    except OSError as exc:
        raise UsageError(
            f"no local network address found ({exc.strerror or exc}): give one with --host"
        ) from None
    if address.startswith(LOOPBACKS) or address in WILDCARDS:
        raise UsageError("no local network address found (no network is up): give one with --host")
    return address


def reach(host: str, lan: bool) -> str:
    """The line saying who can reach the page."""
    if lan:
        return f"Reachable from your local network at {host} (--lan); pairing still needs the link above."
    if host.startswith(LOOPBACKS):
        return "Reachable only from this machine: `happy web --lan` opens it to your local network."
    return f"Listening on {host}: reachable from other machines (a device still needs the link above)."


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): pick another --port"
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def page_host(host: str, extra: Sequence[str]) -> str:
    """The name the printed URL uses: the bound address, or for a wildcard the first
    --allow-host (else this machine's name)."""
    if host not in WILDCARDS:
        return f"[{host}]" if ":" in host else host
    return extra[0] if extra else socket.gethostname()


async def serve(
    home: Path,
    host: str,
    port: int,
    out: TextIO,
    env: Mapping[str, str],
    *,
    allow: Sequence[str] = (),
    lan: bool = False,
) -> None:
    """`env`: the environment of the sessions started from the page (New session, Resume)."""
    import segno
    import uvicorn

    sock = bind(host, port)
    port = sock.getsockname()[1]
    shown = page_host(host, allow)
    pairing = Pairing(time.monotonic)
    spawner = spawner_for(home, env)
    state = WebState(
        home=home,
        devices=DeviceStore(home, clock_ms=clock_ms),
        pairing=pairing,
        hosts=allowed_hosts({host, shown.strip("[]"), "localhost", "127.0.0.1", "::1", *allow}, port),
        pair_url=lambda secret: f"http://{shown}:{port}/#k={secret}",
        commands=Commands(home / "web" / "commands.json"),
        hidden=HiddenSessions(home / "web" / "hidden.json"),
        starter=spawner,
        user_home=Path(env.get("HOME") or Path.home()),
    )
    url = state.pair_url(pairing.mint(ttl=None))
    out.write(url + "\n")
    out.write(reach(host, lan) + "\n")
    segno.make(url, error="m").terminal(out=out, compact=True)
    out.write(f"Open the URL above (or scan the code) to pair a device. Sessions under {home}.\n")
    out.flush()
    config = uvicorn.Config(
        make_app(state), log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(spawner.run)
        await uvicorn.Server(config).serve(sockets=[sock])
        tg.cancel_scope.cancel()
