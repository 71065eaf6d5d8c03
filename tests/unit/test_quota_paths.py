"""Every way the product creates a project passes the per-user limit, and the UI shows the refusal.

Schedules need no such check here: every creation path (user API, agent API, the drawer's form)
goes through ``TaskService.create``, which counts both schedule limits itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import app
from app.core.errors import QuotaExceeded
from app.ui.state.nav import _project_message

APP = Path(app.__file__).resolve().parent


def _calls_of(name: str) -> list[tuple[str, ast.Call]]:
    found = []
    for path in sorted(APP.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called == name:
                    found.append((f"{path.relative_to(APP.parent)}:{node.lineno}", node))
                elif called == "to_thread" and node.args and getattr(node.args[0], "attr", "") == name:
                    found.append((f"{path.relative_to(APP.parent)}:{node.lineno}", node))
    return found


def test_every_project_creation_in_the_product_passes_the_per_user_limit() -> None:
    calls = _calls_of("create_project")
    places = {where.split(":")[0] for where, _ in calls}
    # the user API, the sidebar's dialog, the admin CLI (create-project, seed-demo)
    assert {"app/api/user.py", "app/ui/state/nav.py", "app/manage.py"} <= places, places
    for where, call in calls:
        passed = {k.arg: ast.unparse(k.value) for k in call.keywords}
        assert passed.get("max_projects", "").endswith("settings.max_projects_per_user"), (where, passed)


def test_the_new_project_dialog_shows_the_limit_in_words() -> None:
    message = "the owner already has 20 projects (limit 20, CHATCRON_MAX_PROJECTS_PER_USER); ask"
    assert _project_message(QuotaExceeded(message)) == message
