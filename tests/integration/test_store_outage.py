"""A database that cannot be opened is a 503 with a message, never a 500, and the API recovers
by itself when the store is back (SQLite: the file's path stops being a database file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core import auth
from app.core.config import Settings
from app.core.db import Database, StoreError, first_line
from tests.conftest import make_core
from tests.integration.apiclient import add_user, bearer, client_for


def test_an_unreachable_store_answers_503_and_recovers(tmp_path: Path) -> None:
    db_file = tmp_path / "store.db"
    core = make_core(Settings(data_dir=tmp_path / "data", database_url=f"sqlite:///{db_file}"))
    try:
        alice = add_user(core, "alice@example.com")
        token = auth.create_api_token(core.db, core.clock, alice.id)
        client = client_for(core, raise_server_exceptions=False)
        assert client.get("/api/projects", headers=bearer(token)).status_code == 200

        core.db.dispose()
        moved = db_file.rename(tmp_path / "elsewhere.db")
        db_file.mkdir()  # the path is a folder now: SQLite cannot open it
        answer = client.get("/api/projects", headers=bearer(token))
        assert answer.status_code == 503
        assert answer.json()["error"]["code"] == "unavailable"
        assert answer.json()["error"]["message"].startswith("the database is unavailable: unable to open database")

        core.db.dispose()
        db_file.rmdir()
        moved.rename(db_file)
        assert client.get("/api/projects", headers=bearer(token)).status_code == 200
    finally:
        core.prompts.shutdown(2.0)
        core.db.dispose()


def test_a_refused_connection_is_a_store_error_with_the_drivers_first_line() -> None:
    db = Database("postgresql://postgres@127.0.0.1:1/none?connect_timeout=2")
    try:
        with pytest.raises(StoreError) as caught, db.read() as s:
            s.connection()  # opening the connection fails
        assert "connection" in str(caught.value).lower() and "\n" not in str(caught.value)
        assert caught.value.__cause__ is not None
    finally:
        db.dispose()


@pytest.mark.parametrize(("message", "line"), [
    ("first\nsecond", "first"), ("", "ValueError"), ("  padded  \nx", "padded"), ("x" * 300, "x" * 200)])
def test_first_line_of_an_error(message: str, line: str) -> None:
    assert first_line(ValueError(message)) == line
