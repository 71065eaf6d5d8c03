"""The admin CLI's exports and the schedules import (SPEC §21), beside ``app.manage``:
``export-chat``, ``export-schedules`` and ``import-schedules``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from app.core import auth
from app.core.context import Core
from app.core.errors import InvalidInput
from app.core.wake import DatabaseWaker
from app.projects.exports import FORMATS, export_chat
from app.schedules import transfer
from app.schedules.service import TaskService

COMMANDS = ("export-chat", "export-schedules", "import-schedules")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export-chat", help="write a chat's whole transcript as Markdown or JSON")
    p.add_argument("--chat", required=True, type=_id("--chat"))
    p.add_argument("--format", choices=FORMATS, default="md")
    p.add_argument("--to", type=Path, help="a file to write (default: standard output)")
    p = sub.add_parser("export-schedules", help="write a project's schedule definitions as JSON (import-schedules)")
    p.add_argument("--project", required=True, type=_id("--project"))
    p.add_argument("--to", type=Path, help="a file to write (default: standard output)")
    p = sub.add_parser("import-schedules", help="create a document's schedules as drafts in a chat, for a user to arm")
    p.add_argument("--project", required=True, type=_id("--project"))
    p.add_argument("--chat", required=True, type=_id("--chat"), help="a chat of the project")
    p.add_argument("--owner", required=True, help="the email of the user whose drafts they are (a member)")
    p.add_argument("--from", dest="source", required=True, type=Path, help="an export-schedules document")


def _id(flag: str) -> Callable[[str], int]:
    def convert(text: str) -> int:
        if not text.isdigit() or not 1 <= int(text) <= transfer.MAX_ID:
            raise argparse.ArgumentTypeError(f"{flag} must be an id (a whole number from 1)")
        return int(text)

    return convert


def _write(text: str, to: Path | None) -> str | None:
    if to is None:
        sys.stdout.write(text)
        return None
    to.write_text(text, encoding="utf-8")
    return f"wrote {to}"


def execute(args: argparse.Namespace, core: Core) -> None:
    tasks = TaskService(core.db, core.clock, core.settings, DatabaseWaker(core.db))
    if args.command == "export-chat":
        _, text = export_chat(core.db, core.clock, None, args.chat, args.format)
        said = _write(text, args.to)
    elif args.command == "export-schedules":
        said = _write(json.dumps(transfer.export_project(tasks, None, args.project), indent=1) + "\n", args.to)
    else:
        try:
            body = json.loads(args.source.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidInput("--from", f"{args.source} is not a readable JSON document ({exc})") from None
        if isinstance(body, dict):
            body = {**body, "chat_id": args.chat}
        owner = auth.find_user(core.db, args.owner)
        done = transfer.import_drafts(tasks, owner, args.project, body)
        said = (f"created {len(done.task_ids)} draft(s) in chat {done.chat_id} for {owner.email}; "
                "they fire once a user arms them")
    if said:
        print(said)
