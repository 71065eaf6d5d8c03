"""Answers an approval from another process, as a web worker does (the answer, then its wake hint).

``python -m tests.integration.answer_approval DATABASE_URL APPROVAL_ID OPTION_ID EMAIL [--no-hint]``
prints ``{"state": ..., "answered_at": <time.time() after the commit>}``. ``--no-hint`` leaves the
wake hint out (the waiting turn then finds the answer by its fallback re-read).
"""

from __future__ import annotations

import json
import sys
import time

from sqlmodel import select

from app.attention import approvals, hints
from app.core.clock import SystemClock
from app.core.db import Database
from app.core.models import User


def main(argv: list[str]) -> None:
    url, approval_id, option_id, email = argv[:4]
    db = Database(url)
    with db.read() as s:
        user = s.exec(select(User).where(User.email == email)).one()
    row = approvals.answer(db, SystemClock().now(), user, int(approval_id), option_id, hint=False)
    answered_at = time.time()
    if "--no-hint" not in argv:
        hints.notify(db)
    print(json.dumps({"state": row.state, "answered_at": answered_at}), flush=True)  # before the slow exit
    db.dispose()


if __name__ == "__main__":
    main(sys.argv[1:])
