"""The account's credentials in `HAPPY_HOME_DIR/access.key` and the machine id in `settings.json`,
in the formats Happy's TypeScript CLI reads and writes (its `persistence.ts`), so one login serves
both tools.

access.key is JSON, two-space indented, one of
  legacy:  {"secret": <base64 account secret>, "token": …}
  dataKey: {"encryption": {"publicKey": <base64 content public key>, "machineKey": <base64>}, "token": …}
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from happy_launcher.bridge.keys.crypto import b64, unb64
from happy_launcher.errors import CredentialsError
from happy_launcher.home.dirs import ACCESS_KEY
from happy_launcher.home.files import write_private

SETTINGS = "settings.json"
SETTINGS_SCHEMA = 2  # the TypeScript CLI's settings schema version it writes


@dataclass(frozen=True)
class Credentials:
    token: str
    variant: Literal["legacy", "dataKey"]
    secret: bytes = b""  # legacy: the account secret
    content_public: bytes = b""  # dataKey: the account's content public key
    machine_key: bytes = b""  # dataKey: this machine's own random key

    def __repr__(self) -> str:  # never a token or key in a log or a traceback
        return f"Credentials(variant={self.variant!r})"

    def to_json(self) -> bytes:
        body: dict[str, Any]
        if self.variant == "legacy":
            body = {"secret": b64(self.secret), "token": self.token}
        else:
            keys = {"publicKey": b64(self.content_public), "machineKey": b64(self.machine_key)}
            body = {"encryption": keys, "token": self.token}
        return json.dumps(body, indent=2).encode()


def parse_credentials(data: bytes) -> Credentials:
    """What access.key holds; a legacy `secret` wins over `encryption`, as the TypeScript CLI reads it."""
    try:
        body = json.loads(data)
        token = body["token"]
        if not isinstance(token, str):
            raise TypeError("token")  # noqa: TRY301 - one path for every malformed field
        if body.get("secret"):
            return Credentials(token=token, variant="legacy", secret=unb64(body["secret"]))
        keys = body["encryption"]
        return Credentials(
            token=token,
            variant="dataKey",
            content_public=unb64(keys["publicKey"]),
            machine_key=unb64(keys["machineKey"]),
        )
    except (ValueError, KeyError, TypeError):
        raise CredentialsError(
            f"{ACCESS_KEY} is not a Happy credentials file: run `happy auth logout`, then `happy auth login`"
        ) from None


def read_credentials(home: Path) -> Credentials | None:
    try:
        data = (home / ACCESS_KEY).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CredentialsError(f"cannot read {home / ACCESS_KEY}: {exc.strerror}") from None
    return parse_credentials(data)


def write_credentials(home: Path, credentials: Credentials) -> None:
    _write(home / ACCESS_KEY, credentials.to_json())


def remove_credentials(home: Path) -> bool:
    """Remove access.key; whether there was one."""
    try:
        (home / ACCESS_KEY).unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise CredentialsError(f"cannot remove {home / ACCESS_KEY}: {exc.strerror}") from None
    return True


def read_machine_id(home: Path) -> str | None:
    machine_id = _read_settings(home).get("machineId")
    return machine_id if isinstance(machine_id, str) and machine_id else None


def new_machine_id(home: Path) -> str:
    """A fresh machine id in settings.json (other settings kept), as a new login makes one."""
    settings = _read_settings(home)
    settings.setdefault("schemaVersion", SETTINGS_SCHEMA)
    settings["machineId"] = str(uuid.uuid4())
    _write(home / SETTINGS, json.dumps(settings, indent=2).encode())
    return str(settings["machineId"])


def _read_settings(home: Path) -> dict[str, Any]:
    try:
        settings = json.loads((home / SETTINGS).read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        raise CredentialsError(f"{home / SETTINGS} cannot be read as JSON: fix or remove it") from None
    if not isinstance(settings, dict):
        raise CredentialsError(f"{home / SETTINGS} is not a JSON object: fix or remove it")
    return settings


def _write(path: Path, data: bytes) -> None:
    try:
        write_private(path, data, durable=True)
    except OSError as exc:
        raise CredentialsError(f"cannot write {path}: {exc.strerror}") from None
