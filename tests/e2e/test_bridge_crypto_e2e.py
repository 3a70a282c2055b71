"""Our encryption and Happy's own client read each other: happy-agent creates a session and sends a
message, which we open with the content key derived from the account secret (dataKey unwrapped,
metadata and message decrypted); a message we encrypt and post, happy-agent's history shows."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import httpx

from happy_launcher.bridge.keys import crypto
from tests.support.happy_app import HappyApp
from tests.support.happy_server import HappyServer, agent


def test_happy_agent_and_we_read_each_others_payloads(
    happy_peer: Path, happy_server: HappyServer, tmp_path: Path
) -> None:
    app = HappyApp(happy_server.url)
    (tmp_path / "agent.key").write_text(json.dumps({"token": app.token, "secret": crypto.b64(app.secret)}))
    tag = f"t-{secrets.token_hex(4)}"

    def happy_agent(*args: str) -> str:
        return agent(happy_peer, happy_server, tmp_path, *args)

    sid = json.loads(happy_agent("create", "--tag", tag, "--path", "/w", "--json"))["id"]
    happy_agent("send", sid, "hello from the app")

    http = httpx.Client(base_url=happy_server.url, headers=HappyApp.auth(app.token), timeout=15)
    (record,) = [s for s in http.get("/v1/sessions").json()["sessions"] if s["id"] == sid]
    content = crypto.content_keypair(app.secret)
    data_key = crypto.unwrap_data_key(crypto.unb64(record["dataEncryptionKey"]), content.secret)
    metadata = crypto.decrypt_data_key(crypto.unb64(record["metadata"]), data_key)
    assert (metadata["tag"], metadata["path"]) == (tag, "/w")
    (message,) = http.get(f"/v3/sessions/{sid}/messages", params={"after_seq": 0}).json()["messages"]
    body = crypto.decrypt_data_key(crypto.unb64(message["content"]["c"]), data_key)
    assert (body["role"], body["content"]) == ("user", {"type": "text", "text": "hello from the app"})

    ours = {
        "role": "user",
        "content": {"type": "text", "text": "hello from python"},
        "meta": {"sentFrom": "cli"},
    }
    sealed = crypto.b64(crypto.encrypt_data_key(ours, data_key))
    posted = http.post(
        f"/v3/sessions/{sid}/messages", json={"messages": [{"content": sealed, "localId": "l1"}]}
    )
    assert posted.status_code == 200, posted.text
    history = json.loads(happy_agent("history", sid, "--json"))
    assert "hello from python" in json.dumps(history)
