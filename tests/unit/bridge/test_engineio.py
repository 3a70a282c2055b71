"""The bridge's own Socket.IO (bridge/link/engineio.py), frame by frame as Happy's server sends them
(Socket.IO 5 over Engine.IO 4; the shapes seen on the wire against the real server)."""

from __future__ import annotations

import pytest

from happy_launcher.bridge.link import engineio
from happy_launcher.errors import HappyServerError


def test_frames_out() -> None:
    assert (
        engineio.connect({"token": "t", "clientType": "user-scoped"})
        == '40{"token":"t","clientType":"user-scoped"}'
    )
    assert engineio.event("rpc-register", {"method": "s:abort"}) == '42["rpc-register",{"method":"s:abort"}]'
    assert engineio.event("update-state", {"sid": "s"}, 7) == '427["update-state",{"sid":"s"}]'
    assert engineio.ack(12, "sealed") == '4312["sealed"]'
    assert engineio.ack(3, None) == "433[null]"
    assert engineio.PONG == "3"


def test_frames_in() -> None:
    opened = engineio.parse('0{"sid":"x","upgrades":[],"pingInterval":25000,"pingTimeout":20000}')
    assert opened == engineio.Open(25.0, 20.0)
    assert engineio.parse("2") == engineio.Ping()
    assert engineio.parse('40{"sid":"abc"}') == engineio.Connected()
    assert engineio.parse('44{"message":"Invalid authentication token"}') == engineio.ConnectRefused(
        "Invalid authentication token"
    )
    update = engineio.parse('42["update",{"body":{"t":"new-message"}}]')
    assert update == engineio.EventIn("update", {"body": {"t": "new-message"}}, None)
    request = engineio.parse('4215["rpc-request",{"method":"s:abort","params":"p"}]')
    assert request == engineio.EventIn("rpc-request", {"method": "s:abort", "params": "p"}, 15)
    assert engineio.parse('437[{"result":"success","version":2}]') == engineio.AckIn(
        7, {"result": "success", "version": 2}
    )
    assert engineio.parse("1") == engineio.Closed() == engineio.parse("41")
    for ours_not in ("3", "6", '43["no id"]', '42{"not":"a list"}', "45-binary", '42[1,"no name"]'):
        assert engineio.parse(ours_not) is None


def test_what_is_not_engine_io_is_one_error() -> None:
    for bad in ("x", "", '42["broken'):
        with pytest.raises(HappyServerError):
            engineio.parse(bad)
