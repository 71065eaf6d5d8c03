"""A new chat takes its title from its first message unless renamed (SPEC §16), on both databases."""

from __future__ import annotations

from app.core import auth, chats, projects
from app.core.context import Core
from app.core.models import RunSource, RunStatus


def _setup(core: Core):
    user = auth.create_user(core.db, core.clock, "titles@example.com", "password-1")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "P", user)
    return user, project


def _turn(core: Core, chat_id: int, text: str, **kw) -> None:
    result = core.prompts.start(chat_id, text, **kw).wait(10)
    assert result is not None and result.status == RunStatus.SUCCEEDED


def test_the_first_message_names_a_new_chat_and_later_ones_do_not(core: Core) -> None:
    user, project = _setup(core)
    chat = chats.create_chat(core.db, core.clock, user, project.id)
    assert chat.title == "New chat" and chat.auto_title
    _turn(core, chat.id, "  Weekly report\nwith details")
    _turn(core, chat.id, "something else")
    after = chats.get_chat(core.db, user, chat.id)
    assert after.title == "Weekly report" and not after.auto_title


def test_a_renamed_chat_keeps_its_name(core: Core) -> None:
    user, project = _setup(core)
    chat = chats.create_chat(core.db, core.clock, user, project.id)
    chats.update_chat(core.db, core.clock, user, chat.id, title="Mine")
    _turn(core, chat.id, "first message")
    assert chats.get_chat(core.db, user, chat.id).title == "Mine"


def test_a_chat_created_with_a_title_keeps_it(core: Core) -> None:
    user, project = _setup(core)
    chat = chats.create_chat(core.db, core.clock, user, project.id, "Named")
    _turn(core, chat.id, "first message")
    assert chats.get_chat(core.db, user, chat.id).title == "Named"


def test_a_fire_does_not_name_the_chat_but_the_next_user_message_does(core: Core) -> None:
    user, project = _setup(core)
    chat = chats.create_chat(core.db, core.clock, user, project.id)
    _turn(core, chat.id, "standing prompt of a task", source=RunSource.SCHEDULE)
    assert chats.get_chat(core.db, user, chat.id).title == "New chat"
    _turn(core, chat.id, "what happened?")
    assert chats.get_chat(core.db, user, chat.id).title == "what happened?"
