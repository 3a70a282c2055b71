"""access.key and settings.json as Happy's TypeScript CLI writes and reads them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from happy_launcher.bridge.keys.credentials import (
    Credentials,
    new_machine_id,
    read_credentials,
    read_machine_id,
    remove_credentials,
    write_credentials,
)
from happy_launcher.errors import CredentialsError

# What JSON.stringify(…, null, 2) writes for each variant (persistence.ts).
TS_LEGACY = '{\n  "secret": "AAECAw==",\n  "token": "tok"\n}'
TS_DATAKEY = (
    '{\n  "encryption": {\n    "publicKey": "BAU=",\n    "machineKey": "Bgc="\n  },\n  "token": "tok"\n}'
)
LEGACY = Credentials(token="tok", variant="legacy", secret=bytes([0, 1, 2, 3]))
DATAKEY = Credentials(token="tok", variant="dataKey", content_public=bytes([4, 5]), machine_key=bytes([6, 7]))


@pytest.mark.parametrize(("credentials", "text"), [(LEGACY, TS_LEGACY), (DATAKEY, TS_DATAKEY)])
def test_both_variants_round_trip_in_the_typescript_format(
    tmp_path: Path, credentials: Credentials, text: str
) -> None:
    write_credentials(tmp_path, credentials)
    key = tmp_path / "access.key"
    assert key.read_text() == text
    assert key.stat().st_mode & 0o777 == 0o600
    assert read_credentials(tmp_path) == credentials
    assert "tok" not in repr(credentials)
    assert [p.name for p in tmp_path.iterdir()] == ["access.key"]  # no temporary file left


def test_an_existing_file_is_replaced_and_kept_private(tmp_path: Path) -> None:
    key = tmp_path / "access.key"
    key.write_text("old")
    os.chmod(key, 0o644)
    write_credentials(tmp_path, LEGACY)
    assert key.stat().st_mode & 0o777 == 0o600
    assert read_credentials(tmp_path) == LEGACY


def test_no_file_is_not_logged_in_and_a_bad_one_says_what_to_do(tmp_path: Path) -> None:
    assert read_credentials(tmp_path) is None
    assert remove_credentials(tmp_path) is False
    for bad in ("not json", "{}", '{"token": 1, "secret": "AA=="}', '{"token": "t", "secret": "!!"}'):
        (tmp_path / "access.key").write_text(bad)
        with pytest.raises(CredentialsError, match="happy auth logout"):
            read_credentials(tmp_path)
    assert remove_credentials(tmp_path) is True
    assert not (tmp_path / "access.key").exists()


def test_a_new_machine_id_keeps_the_other_settings(tmp_path: Path) -> None:
    assert read_machine_id(tmp_path) is None
    (tmp_path / "settings.json").write_text(json.dumps({"schemaVersion": 2, "onboardingCompleted": True}))
    first = new_machine_id(tmp_path)
    assert read_machine_id(tmp_path) == first
    settings = json.loads((tmp_path / "settings.json").read_text())
    assert settings == {"schemaVersion": 2, "onboardingCompleted": True, "machineId": first}
    assert new_machine_id(tmp_path) != first
    (tmp_path / "settings.json").write_text("[]")
    with pytest.raises(CredentialsError):
        read_machine_id(tmp_path)
