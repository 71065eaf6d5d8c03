"""Admin CLI: ``python -m app.manage <command>`` (SPEC §1).

Exit codes: 0 done, 1 refused (the reason on stderr), 2 usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import shlex
import sys
from collections.abc import Callable, Iterator, Sequence

from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError
from sqlmodel import Session

from app import manage_exports
from app.agents import sandbox
from app.agents.cli import presets
from app.agents.providers.registry import checked_settings
from app.backup import cli as backup_cli
from app.core import accounts, auth, chats, projects
from app.core.config import PROVIDERS, ConfigError
from app.core.context import Core
from app.core.db import StoreError, first_line
from app.core.errors import AlreadyExists, ChatcronError, InvalidInput, NotFound
from app.core.migrate import upgrade
from app.core.models import Project, Role
from app.core.ports import ProviderError
from app.core.redact import HIDDEN, SECRET_NAME, hide_setting_values
from app.core.spend import tokens_value, usd_value
from app.core.wake import DatabaseWaker
from app.projects import audit, members
from app.schedules.budgets import UNCHANGED, set_budget
from app.schedules.service import forget_chats
from app.wiring import build_core

MAX_ID = 2_147_483_647  # ids are 32-bit integers in both databases
DEMO_EMAIL = "demo@example.com"
DEMO_PASSWORD = "demo-password"
# The commands that install or check agents: only they repeat the sandbox's start-up warning (agents
# unfenced, on the server's uid or on the host's network); to the others (users, projects, settings,
# migrations, `--help`) it says nothing, and the web and scheduler processes log it when they start.
AGENT_COMMANDS = frozenset({"install-agent", "list-agents"})


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
    p = sub.add_parser("grant-access", help="make a user a member (or an owner) of a project, or change their role")
    p.add_argument("--email", required=True)
    p.add_argument("--project", required=True, type=int)
    p.add_argument("--role", choices=[r.value for r in Role], help="owner or member (default for a new member: "
                                                                   "member; an existing member's role is kept)")
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
    p = sub.add_parser("set-provider", help="choose a project's agent provider and its settings, or change some",
                       description="--provider P --setting KEY=VALUE... replaces the provider and every setting; "
                                   "--set KEY=VALUE / --unset KEY change those settings of the project's current "
                                   "provider and keep the rest (--provider, if given, must name that provider).")
    p.add_argument("--project", required=True, type=int)
    p.add_argument("--provider", choices=PROVIDERS, help="required unless --set/--unset are given")
    p.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                   help="provider setting, e.g. command='my-agent --print' or model=gpt-4o (repeatable); "
                        "the settings not given are removed")
    p.add_argument("--set", dest="assign", action="append", default=[], metavar="KEY=VALUE",
                   help="change one setting, keep the others (repeatable)")
    p.add_argument("--unset", dest="remove", action="append", default=[], metavar="KEY",
                   help="remove one setting, keep the others (repeatable)")
    p.set_defaults(usage_error=p.error)
    p = sub.add_parser("set-budget", help="set, clear or show a project's daily budget (UTC day, SPEC §15)",
                       description="With no limit given, shows the budget and today's spend. A limit of 'none' "
                                   "clears it. When a project's fires have spent the budget, its due fires wait "
                                   "(deferred) until 00:00 UTC; people's turns are never blocked.")
    p.add_argument("--project", required=True, type=int)
    p.add_argument("--daily-tokens", type=_limit(tokens_value, "--daily-tokens"), default=UNCHANGED,
                   metavar="N|none", help="tokens (input + output) the project may spend per UTC day")
    p.add_argument("--daily-cost-usd", type=_limit(usd_value, "--daily-cost-usd"), default=UNCHANGED,
                   metavar="X|none", help="US dollars the project may spend per UTC day")
    backup_cli.add_parsers(sub)
    p = sub.add_parser("install-agent", help="install an agent preset (pinned npm packages) into the data dir")
    p.add_argument("name", choices=sorted(presets.PRESETS))
    sub.add_parser("list-agents", help="show the installed agent presets and their versions")
    manage_exports.add_parsers(sub)
    return parser


def _limit(check, flag: str):
    """An argparse type: ``none`` clears the limit, else the value ``check`` accepts; anything else
    is a usage error (exit 2) naming the flag."""
    def convert(text: str) -> object:
        if text.strip().lower() == "none":
            return None
        try:
            number = int(text) if check is tokens_value else float(text)
            return check(number, flag)
        except (ValueError, InvalidInput) as exc:
            reason = str(exc).removeprefix(f"{flag}: ").replace("(null:", "(none:") if isinstance(exc, InvalidInput) \
                else "must be a number or none"
            raise argparse.ArgumentTypeError(f"{reason}, not {text!r}") from None
    return convert


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


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The command line, checked; exits 2 with the usage on a usage error, 0 after ``--help``."""
    args = _parser().parse_args(argv)
    if args.command == "set-provider":
        partial = bool(args.assign or args.remove)
        if partial and args.setting:
            args.usage_error("--setting replaces every setting; --set and --unset change some and keep the rest: "
                             "use one or the other")
        if not partial and args.provider is None:
            args.usage_error("--provider is required (only --set/--unset, which change the settings of the "
                             "project's current provider, may leave it out)")
    return args


def run(argv: Sequence[str], core: Core) -> int:
    return execute(parse(argv), core)


def execute(args: argparse.Namespace, core: Core) -> int:
    if getattr(args, "project", None) is not None and not 1 <= args.project <= MAX_ID:
        raise NotFound(f"no project with id {args.project}")  # as the API: out of range is unknown
    if args.command in backup_cli.COMMANDS:
        return backup_cli.execute(args, core)
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
        print(members.grant(core.db, core.clock, audit.CLI, args.email, args.project,
                            Role(args.role) if args.role else None))
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
        print(set_provider(core, args))
        audit.record_apart(core.db, core.clock, args.project, audit.CLI, audit.SETTINGS,
                           {"keys": _changed_keys(args)})
    elif args.command == "set-budget":
        print(set_budget(core.db, core.clock, DatabaseWaker(core.db), args.project, args.daily_tokens,
                         args.daily_cost_usd, also=_budget_audit(core, args)).sentence())
    elif args.command == "install-agent":
        print(install_agent(core, args.name))
    elif args.command == "list-agents":
        print(list_agents(core))
    elif args.command in manage_exports.COMMANDS:
        manage_exports.execute(args, core)
    return 0


def _changed_keys(args: argparse.Namespace) -> list[str]:
    """What a set-provider changed, as the audit names keys (never a value)."""
    if args.assign or args.remove:
        return sorted({_setting("--set", item)[0] for item in args.assign} | {_key(item) for item in args.remove})
    return ["agent.provider", "all settings"]


def _budget_audit(core: Core, args: argparse.Namespace) -> Callable[[Session], None]:
    keys = [name for name, value in (("budget.daily_tokens", args.daily_tokens),
                                     ("budget.daily_cost_usd", args.daily_cost_usd)) if value is not UNCHANGED]
    return lambda s: audit.record(s, core.clock.now(), args.project, audit.CLI, audit.SETTINGS, {"keys": keys})


def _take_away(args: argparse.Namespace, core: Core) -> str:
    """delete-user, revoke-access, end-sessions (SPEC §17): what happened, in one sentence."""
    if args.command == "delete-user":
        return accounts.delete_user(core.db, args.email, core.settings.workspaces_dir, forget_chats).sentence()
    if args.command == "revoke-access":
        done = accounts.revoke_access(core.db, core.clock, args.email, args.project)
        audit.record_apart(core.db, core.clock, args.project, audit.CLI, audit.MEMBER_REMOVE, {"email": done.email})
        return done.sentence()
    email, count = accounts.end_sessions(core.db, args.email)
    return f"ended {count} browser session(s) of {email}"


def set_provider(core: Core, args: argparse.Namespace) -> str:
    """set-provider: every setting (``--setting``) or some (``--set``/``--unset``); what to print."""
    if args.assign or args.remove:
        assign = dict(_setting("--set", item) for item in args.assign)
        return change_settings(core, args.project, args.provider, assign, [_key(item) for item in args.remove])
    values = checked_settings(args.provider, dict(_setting("--setting", item) for item in args.setting))
    projects.set_provider(core.db, args.project, args.provider, values)
    return f"project {args.project} now uses the {args.provider} provider"


def change_settings(core: Core, project_id: int, provider: str | None, assign: dict[str, str],
                    remove: list[str]) -> str:
    """``--set``/``--unset``: change those settings of the project's current provider and keep the rest,
    checked as a whole ``set-provider`` checks them, in one transaction (all or nothing); returns what
    changed, no secret's value. Raises InvalidInput naming the key (then nothing changed), NotFound."""
    both = sorted(assign.keys() & set(remove))
    if both:
        raise InvalidInput(f"--set {both[0]}", "is also given to --unset: set it or remove it")
    with core.db.write() as s:
        project = s.get(Project, project_id, with_for_update=True)  # no concurrent change is lost
        if project is None:
            raise NotFound(f"no project with id {project_id}")
        current = _current_provider(project, provider)
        stored = _stored(project)
        absent = [key for key in remove if key not in stored]
        if absent:
            raise InvalidInput(f"--unset {absent[0]}", f"project {project_id} has no such setting "
                                                       f"(it has: {', '.join(sorted(stored)) or 'none'})")
        merged = {key: str(value) for key, value in stored.items() if key not in remove} | assign
        values = _checked(current, merged)
        project.provider_settings = json.dumps(values, sort_keys=True)
        s.add(project)
    changed = [f"{key}={HIDDEN if SECRET_NAME.search(key) else shlex.quote(str(values[key]))}" for key in assign]
    kept = sorted(values.keys() - assign.keys())
    return "; ".join([f"project {project_id} keeps the {current} provider",
                      *([f"set {', '.join(changed)}"] if changed else []),
                      *([f"unset {', '.join(remove)}"] if remove else []),
                      f"unchanged: {', '.join(kept) or 'nothing'}"])


def _current_provider(project: Project, given: str | None) -> str:
    if project.provider is None:
        raise InvalidInput("--set/--unset", f"project {project.id} has no provider of its own (it uses the server's "
                                            "default): choose one with --provider NAME --setting KEY=VALUE ...")
    if given is not None and given != project.provider:
        raise InvalidInput("--provider", f"project {project.id} uses the {project.provider} provider, not {given}: "
                                         "--set/--unset change the current provider's settings; to switch, give "
                                         f"every setting: --provider {given} --setting KEY=VALUE ...")
    return project.provider


def _stored(project: Project) -> dict[str, object]:
    try:
        value = json.loads(project.provider_settings or "{}")
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise InvalidInput("--set/--unset", f"project {project.id}'s stored settings are not a JSON object: "
                                            "replace them all with --provider NAME --setting KEY=VALUE ...")
    return value


def _checked(provider: str, merged: dict[str, str]) -> dict[str, object]:
    """``checked_settings`` of the merged settings; its refusal names the option used, no secret's value."""
    try:
        return checked_settings(provider, merged)
    except (InvalidInput, ProviderError) as exc:
        field = getattr(exc, "field", "--set")
        message = hide_setting_values(str(exc).removeprefix(f"{field}: "), merged, HIDDEN)
        raise InvalidInput(field.replace("--setting", "--set", 1), message) from None


def _setting(option: str, item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        shown = "an item that names a secret" if SECRET_NAME.search(item) else repr(item)
        raise InvalidInput(option, f"{shown} is not KEY=VALUE")
    return key.strip(), value


def _key(item: str) -> str:
    key = item.strip()
    if not key or "=" in key:
        raise InvalidInput("--unset", "takes a setting's name (KEY), not KEY=VALUE")
    return key


@contextlib.contextmanager
def _sandbox_warning(shown: bool) -> Iterator[None]:
    """Building a core logs the sandbox's start-up warning (app.agents.sandbox.log_mode); let it
    through only when ``shown``: a sandbox error still passes."""
    def quiet(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR

    if not shown:
        sandbox.log.addFilter(quiet)
    try:
        yield
    finally:
        sandbox.log.removeFilter(quiet)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)  # --help and usage errors end here, before any set-up
    try:
        with _sandbox_warning(args.command in AGENT_COMMANDS):
            core = build_core()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    try:
        return execute(args, core)
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
