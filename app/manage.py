"""Admin CLI: ``python -m app.manage <command>`` (SPEC §1).

Exit codes: 0 done, 1 refused (the reason on stderr), 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from app.agents import sandbox
from app.agents.cli import presets
from app.agents.providers.registry import checked_settings
from app.core import accounts, auth, chats, projects
from app.core.config import PROVIDERS, ConfigError
from app.core.context import Core
from app.core.db import StoreError, first_line
from app.core.errors import AlreadyExists, ChatcronError, InvalidInput, NotFound
from app.core.migrate import upgrade
from app.schedules.service import forget_chats
from app.wiring import build_core

MAX_ID = 2_147_483_647  # ids are 32-bit integers in both databases
DEMO_EMAIL = "demo@example.com"
DEMO_PASSWORD = "demo-password"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app.manage", description="chatcron administration")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="create or upgrade the database schema")
    p = sub.add_parser("create-user", help="register a user")
    p.add_argument("--email", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--admin", action="store_true")
    p = sub.add_parser("create-project", help="create a project; prints its id")
    p.add_argument("--name", required=True)
    p.add_argument("--owner", required=True, help="owner's email")
    p = sub.add_parser("grant-access", help="make a user a member of a project")
    p.add_argument("--email", required=True)
    p.add_argument("--project", required=True, type=int)
    p = sub.add_parser("create-token", help="print a new personal API token")
    p.add_argument("--email", required=True)
    p.add_argument("--name", default="cli")
    p.add_argument("--days", type=int, default=0, help="expire after this many days (default: until revoked)")
    p = sub.add_parser("revoke-tokens", help="revoke every personal API token of a user")
    p.add_argument("--email", required=True)
    p = sub.add_parser("delete-user", help="delete a user and what only they used (docs/SECURITY.md)")
    p.add_argument("--email", required=True)
    p = sub.add_parser("revoke-access", help="remove a user's membership of a project")
    p.add_argument("--email", required=True)
    p.add_argument("--project", required=True, type=int)
    p = sub.add_parser("end-sessions", help="end every browser session of a user (API tokens: revoke-tokens)")
    p.add_argument("--email", required=True)
    sub.add_parser("seed-demo", help="demo user, project and chat; prints the login")
    p = sub.add_parser("set-provider", help="choose a project's agent provider and its settings")
    p.add_argument("--project", required=True, type=int)
    p.add_argument("--provider", required=True, choices=PROVIDERS)
    p.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                   help="provider setting, e.g. command='my-agent --print' or model=gpt-4o (repeatable)")
    p = sub.add_parser("install-agent", help="install an agent preset (pinned npm packages) into the data dir")
    p.add_argument("name", choices=sorted(presets.PRESETS))
    sub.add_parser("list-agents", help="show the installed agent presets and their versions")
    return parser


def install_agent(core: Core, name: str) -> str:
    preset = presets.PRESETS[name]
    target, ran = presets.install(preset, core.settings.agents_dir)
    versions = ", ".join(f"{pkg}@{ver}" for pkg, ver in preset.packages.items())
    return f"{'installed' if ran else 'already installed'}: {name} ({versions}) in {target}"


def list_agents(core: Core) -> str:
    lines = []
    for name, preset in sorted(presets.PRESETS.items()):
        target = core.settings.agents_dir.resolve() / name
        if presets.missing_packages(preset, target):
            continue
        lines.append(f"{name} {preset.version(target)} ({', '.join(f'{p}@{v}' for p, v in preset.packages.items())})")
    if not lines:
        lines.append(f"no agent installed in {core.settings.agents_dir} (install-agent NAME)")
    return "\n".join([*lines, sandbox.describe_network(core.settings)])


def seed_demo(core: Core) -> str:
    """Create the demo user, project and chat once; returns what to print."""
    try:
        user = auth.create_user(core.db, core.clock, DEMO_EMAIL, DEMO_PASSWORD)
    except AlreadyExists:
        return f"demo already seeded; log in as {DEMO_EMAIL} / {DEMO_PASSWORD}"
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "Demo project", user,
                                      max_projects=core.settings.max_projects_per_user)
    chats.create_chat(core.db, core.clock, user, project.id, "Demo chat")
    return f"demo seeded; log in as {DEMO_EMAIL} / {DEMO_PASSWORD}"


def run(argv: Sequence[str], core: Core) -> int:
    args = _parser().parse_args(argv)
    if getattr(args, "project", None) is not None and not 1 <= args.project <= MAX_ID:
        raise NotFound(f"no project with id {args.project}")  # as the API: out of range is unknown
    if args.command == "migrate":
        upgrade(core.db)
        print("database is up to date")
    elif args.command == "create-user":
        user = auth.create_user(core.db, core.clock, args.email, args.password, args.admin)
        print(f"created user {user.email}" + (" (admin)" if user.is_admin else ""))
    elif args.command == "create-project":
        owner = auth.find_user(core.db, args.owner)
        print(projects.create_project(core.db, core.clock, core.settings.workspaces_dir, args.name, owner,
                                      max_projects=core.settings.max_projects_per_user).id)
    elif args.command == "grant-access":
        user = auth.find_user(core.db, args.email)
        projects.grant_access(core.db, core.clock, user, args.project)
        print(f"{user.email} can now use project {args.project}")
    elif args.command == "create-token":
        if args.days < 0:
            raise InvalidInput("--days", "must be 0 (no expiry) or more")
        user = auth.find_user(core.db, args.email)
        print(auth.create_api_token(core.db, core.clock, user.id, args.name, args.days * 86400 or None))
    elif args.command == "revoke-tokens":
        count = auth.revoke_tokens(core.db, core.clock, auth.find_user(core.db, args.email).id)
        print(f"revoked {count} token(s) of {args.email}")
    elif args.command in ("delete-user", "revoke-access", "end-sessions"):
        print(_take_away(args, core))
    elif args.command == "seed-demo":
        print(seed_demo(core))
    elif args.command == "set-provider":
        values = checked_settings(args.provider, dict(_setting(item) for item in args.setting))
        projects.set_provider(core.db, args.project, args.provider, values)
        print(f"project {args.project} now uses the {args.provider} provider")
    elif args.command == "install-agent":
        print(install_agent(core, args.name))
    elif args.command == "list-agents":
        print(list_agents(core))
    return 0


def _take_away(args: argparse.Namespace, core: Core) -> str:
    """delete-user, revoke-access, end-sessions (SPEC §17): what happened, in one sentence."""
    if args.command == "delete-user":
        return accounts.delete_user(core.db, args.email, core.settings.workspaces_dir, forget_chats).sentence()
    if args.command == "revoke-access":
        return accounts.revoke_access(core.db, core.clock, args.email, args.project).sentence()
    email, count = accounts.end_sessions(core.db, args.email)
    return f"ended {count} browser session(s) of {email}"


def _setting(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise InvalidInput("--setting", f"{item!r} is not KEY=VALUE")
    return key.strip(), value


def main(argv: Sequence[str] | None = None) -> int:
    try:
        core = build_core()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    try:
        return run(sys.argv[1:] if argv is None else argv, core)
    except (ChatcronError, NotFound) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except IntegrityError as exc:  # another process wrote a row that refers to what this one changed
        reason = first_line(exc.orig or exc)
        print(f"error: the data changed meanwhile ({reason}); nothing was changed, try again", file=sys.stderr)
        return 1
    except (StoreError, OperationalError, ProgrammingError) as exc:
        reason = first_line(getattr(exc, "orig", None) or exc)
        print(f"error: the database is not ready ({reason}); run `python -m app.manage migrate` first",
              file=sys.stderr)
        return 1
    finally:
        core.db.dispose()


if __name__ == "__main__":
    sys.exit(main())
