"""Who may use `happy web`: one-time pairing secrets (traded for a device token), a limit on
pairing attempts, and the Host and Origin checks that keep other sites and DNS rebinding out.
Pure: the clock comes in."""

from __future__ import annotations

import hmac
import secrets
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

PAIR_TTL = 600.0  # seconds a secret minted from a paired page stays valid
PAIR_ATTEMPTS = 10  # pairing attempts allowed per window to one client address
PAIR_WINDOW = 60.0


@dataclass(slots=True)
class _Secret:
    value: str
    expires: float | None  # None: until used (the one `happy web` prints)


class Pairing:
    """Outstanding one-time secrets; each pairs one device."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._secrets: list[_Secret] = []
        self._attempts: dict[str, deque[float]] = {}  # per client address

    def mint(self, *, ttl: float | None = PAIR_TTL) -> str:
        value = secrets.token_urlsafe(24)
        self._secrets.append(_Secret(value, None if ttl is None else self._clock() + ttl))
        return value

    def allow_attempt(self, client: str) -> bool:
        """False when this client made too many attempts lately (the caller answers 429). Per
        client: a flood from one address must not lock out a pairing from another."""
        now = self._clock()
        for address in list(self._attempts):  # forget the clients whose window has passed
            times = self._attempts[address]
            while times and now - times[0] >= PAIR_WINDOW:
                times.popleft()
            if not times:
                del self._attempts[address]
        times = self._attempts.setdefault(client, deque())
        if len(times) >= PAIR_ATTEMPTS:
            return False
        times.append(now)
        return True

    def consume(self, offered: str) -> bool:
        """True, once, for an outstanding secret that has not expired."""
        now = self._clock()
        self._secrets = [s for s in self._secrets if s.expires is None or s.expires > now]
        for secret in self._secrets:
            if hmac.compare_digest(secret.value.encode(), offered.encode()):
                self._secrets.remove(secret)
                return True
        return False


def allowed_hosts(names: Iterable[str], port: int) -> frozenset[str]:
    """Host header values the server answers to: each name with its port (DNS rebinding: a
    foreign name resolving to us is refused)."""
    hosts = set()
    for name in names:
        bracketed = f"[{name}]" if ":" in name and not name.startswith("[") else name
        hosts.add(f"{bracketed}:{port}".lower())
    return frozenset(hosts)


def origin_ok(origin: str | None, host: str) -> bool:
    """A state-changing request or a stream must come from the page itself: its Origin is this
    server's (Host has been checked against the allow-list already)."""
    return origin is not None and origin.lower() == f"http://{host}".lower()


def bearer(authorization: str | None) -> str | None:
    if authorization is None:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None
