"""The claude preset's session reader (what the ACP meter measures a Claude turn from): Claude
Code's transcript, each model response counted once (its last line), whole lines only, read on
from where it stopped."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from app.agents.cli import claude
from app.agents.cli.presets import PRESETS

SESSION = "6af1cf0d-9099-42dd-adbe-866d4745d9a0"


def path_of(home: Path, session: str = SESSION, folder: str = "-tmp-data-workspaces-1") -> Path:
    path = home / ".claude" / "projects" / folder / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def assistant(message_id: str, input_tokens: int, output_tokens: int, cached: int = 0) -> str:
    return json.dumps({"type": "assistant", "sessionId": SESSION, "uuid": str(uuid.uuid4()), "message": {
        "id": message_id, "role": "assistant", "content": [{"type": "text", "text": "hi"}],
        "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 7,
                  "cache_read_input_tokens": cached, "output_tokens": output_tokens}}}) + "\n"


def other(kind: str) -> str:  # lines without a model response's usage, one mentioning "usage"
    return json.dumps({"type": kind, "message": {"role": "user", "content": "what is my usage?"},
                       "toolUseResult": {"usage": {"input_tokens": 10_000}}}) + "\n"


def test_the_preset_reads_its_sessions() -> None:
    assert PRESETS["claude"].session_usage is claude.session_usage


def test_each_response_counts_once_with_its_last_usage(tmp_path: Path) -> None:
    path_of(tmp_path).write_text(
        other("user") + assistant("msg_1", 120, 1, 30) + assistant("msg_1", 120, 25, 30) + other("attachment")
        + assistant("msg_2", 200, 40, 50) + other("user"))
    assert claude.session_usage(tmp_path, SESSION) == {"input_tokens": 320, "output_tokens": 65,
                                                       "cached_tokens": 80}


def test_a_half_written_last_line_waits_for_its_end(tmp_path: Path) -> None:
    path = path_of(tmp_path)
    line = assistant("msg_2", 200, 40)
    path.write_text(assistant("msg_1", 100, 10) + line[:50])
    assert claude.session_usage(tmp_path, SESSION) == {"input_tokens": 100, "output_tokens": 10, "cached_tokens": 0}
    with path.open("a") as f:
        f.write(line[50:])
    assert claude.session_usage(tmp_path, SESSION)["input_tokens"] == 300


def test_reads_go_on_from_where_they_stopped_and_a_replaced_file_is_read_anew(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claude, "CHUNK", 64)  # lines longer than a chunk: carried over
    path = path_of(tmp_path)
    path.write_text("".join(assistant(f"msg_{i}", 10, 1) for i in range(20)))
    assert claude.session_usage(tmp_path, SESSION)["input_tokens"] == 200
    with path.open("a") as f:
        f.write(assistant("msg_19", 10, 5) + assistant("msg_20", 10, 1))  # a response's later line, a new one
    assert claude.session_usage(tmp_path, SESSION) == {"input_tokens": 210, "output_tokens": 25, "cached_tokens": 0}
    replacement = path.with_name("new.jsonl")
    replacement.write_text(assistant("msg_a", 1, 1))
    os.replace(replacement, path)
    assert claude.session_usage(tmp_path, SESSION)["input_tokens"] == 1


def test_a_missing_transcript_or_a_strange_session_id_is_nothing_known(tmp_path: Path) -> None:
    assert claude.session_usage(tmp_path, SESSION) is None
    path_of(tmp_path).write_text(assistant("msg_1", 1, 1))
    assert claude.session_usage(tmp_path, "../../etc") is None
    assert claude.session_usage(tmp_path, "*") is None
    assert claude.session_usage(tmp_path, str(uuid.uuid4())) is None


def test_the_transcript_is_found_whatever_folder_the_working_directory_became(tmp_path: Path) -> None:
    path_of(tmp_path, folder="-srv-chatcron-data-workspaces-12").write_text(assistant("msg_1", 5, 2))
    assert claude.session_usage(tmp_path, SESSION) == {"input_tokens": 5, "output_tokens": 2, "cached_tokens": 0}
