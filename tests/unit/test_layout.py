"""The layout rules of docs/ARCHITECTURE.md, checked on the source: dependencies point one way,
the import graph has no cycle, and no module outgrows what one reader holds in mind."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "scheduler")
MAX_LINES = 400


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            found[_module_name(path)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every project module ``name`` imports, at any depth of its code (late imports included)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        out.update(t for t in targets if t in MODULES and t != name)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _closure(start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        for dep in GRAPH[stack.pop()]:
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen


def test_the_graph_sees_the_packages() -> None:
    assert "app.schedules.service" in GRAPH and "scheduler.loop" in GRAPH
    assert "app.schedules.plan" in GRAPH["app.schedules.preview"]


def test_the_import_graph_has_no_cycle() -> None:
    cycles = sorted(name for name in GRAPH if name in _closure(name))
    assert cycles == [], f"modules on an import cycle: {cycles}"


@pytest.mark.parametrize("root", ["app.app", "app.api", "app.ui", "app.schedules", "app.core", "app.agents",
                                  "app.attention", "app.projects", "app.backup", "app.manage"])
def test_nothing_the_web_process_loads_imports_the_scheduler_process(root: str) -> None:
    reached = {root} | _closure(root)
    for name in [m for m in MODULES if m.startswith(root + ".")]:
        reached |= {name} | _closure(name)
    assert sorted(m for m in reached if m.split(".")[0] == "scheduler") == []


# Each room and what it may not import (docs/ARCHITECTURE.md "Rooms"): the arrows run one way,
# agents → core, attention → core and schedules, schedules → core, scheduler → core and schedules,
# projects → core, agents and schedules, backup → core, agents and schedules,
# api / ui → all of them; only the composition roots reach ``app.wiring``.
FORBIDDEN = {
    "app.core": ("app.agents", "app.attention", "app.schedules", "app.api", "app.ui", "app.wiring",
                 "app.manage", "app.app", "scheduler"),
    "app.agents": ("app.attention", "app.schedules", "app.api", "app.ui", "app.wiring", "app.manage",
                   "app.app", "scheduler"),
    "app.attention": ("app.agents", "app.api", "app.ui", "app.wiring", "app.manage", "app.app", "scheduler"),
    "app.attention.notify": ("app.schedules",),  # both processes run a deliverer: the core is enough
    "app.schedules": ("app.agents", "app.attention", "app.api", "app.ui", "app.wiring", "app.manage",
                      "app.app", "scheduler"),
    "app.projects": ("app.attention", "app.api", "app.ui", "app.wiring", "app.manage", "app.app", "scheduler"),
    "app.backup": ("app.attention", "app.projects", "app.api", "app.ui", "app.wiring", "app.manage", "app.app",
                   "scheduler"),
    "app.api": ("app.wiring", "app.manage", "app.app", "scheduler"),
    "app.ui": ("app.wiring", "app.manage", "app.app", "scheduler"),
    "scheduler": ("app.agents", "app.attention", "app.api", "app.ui", "app.wiring", "app.manage", "app.app"),
}
COMPOSITION_ROOTS = {"app.app", "app.manage", "scheduler.__main__"}


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.mark.parametrize("room", sorted(FORBIDDEN))
def test_each_room_imports_only_what_its_arrows_allow(room: str) -> None:
    bad = sorted(
        f"{name} → {dep}"
        for name, deps in GRAPH.items()
        if _in(name, room) and name not in COMPOSITION_ROOTS
        for dep in deps
        if any(_in(dep, forbidden) for forbidden in FORBIDDEN[room])
    )
    assert bad == []


def test_only_the_admin_cli_reaches_backup_and_restore() -> None:
    """``app/backup`` is a room of its own below nothing but ``app.manage``: no process imports it."""
    users = sorted(name for name, deps in GRAPH.items()
                   if not _in(name, "app.backup") and any(_in(dep, "app.backup") for dep in deps))
    assert users == ["app.manage"]


def test_every_composition_root_wires_the_ports() -> None:
    assert sorted(root for root in COMPOSITION_ROOTS if "app.wiring" not in GRAPH[root]) == []
    assert sorted(name for name, deps in GRAPH.items() if "app.wiring" in deps) == sorted(COMPOSITION_ROOTS)


def test_the_core_holds_a_quarter_of_the_product_at_most() -> None:
    def lines(prefix: tuple[str, ...]) -> int:
        return sum(len(path.read_text().splitlines()) for name, path in MODULES.items() if name.startswith(prefix))
    assert lines(("app.core",)) <= lines(("app.", "scheduler")) / 4


def test_no_module_is_over_the_size_limit() -> None:
    long = sorted(
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in [*MODULES.values()]
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    )
    assert long == []


def test_no_suppression_for_a_rule_family_ruff_does_not_run() -> None:
    marker = "noqa: " + "ANN"  # spelled apart so this file does not match itself
    noisy = sorted(str(path.relative_to(ROOT)) for pkg in ("app", "scheduler", "tests")
                   for path in (ROOT / pkg).rglob("*.py") if marker in path.read_text())
    assert noisy == []


def test_no_test_runs_a_coroutine_on_the_main_thread() -> None:
    """The browser tests' Playwright keeps an event loop marked running on the main thread for the
    rest of the session, so ``asyncio.run`` or ``run_until_complete`` in a test (or a helper it
    calls on that thread) fails whenever the browser tests ran first; tests use
    ``tests.conftest.run_async``, which runs the coroutine on a thread of its own."""
    allowed = {ROOT / "tests" / "conftest.py",  # run_async itself
               ROOT / "tests" / "integration" / "apiserver.py"}  # its loop lives on its own thread
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path in allowed or path == Path(__file__):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "asyncio.run(" in line or "run_until_complete(" in line:
                found.append(f"{path.relative_to(ROOT)}:{number}")
    assert found == [], f"use tests.conftest.run_async instead: {found}"
