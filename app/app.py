"""The web process: ``rx.App``, its pages and the API mount — nothing else."""

from __future__ import annotations

import os

import reflex as rx

from app import wiring
from app.api import behind_proxies, create_api, only_from
from app.attention.notify import running as deliverer
from app.core import redact
from app.core.config import load_settings
from app.core.context import get_core
from app.core.origins import allowed_origins
from app.ui import guard, socket_guard
from app.ui.pages import admin, chat, inbox, index, login, not_found, notifications, project_settings, schedules
from app.ui.state.login import LoginState

redact.install()  # no cookie, token or password reaches this process's log (app/core/redact.py)
wiring.install()  # the core's ports: the agents' and the attention rooms (app/wiring.py)

_settings = load_settings()  # a bad CHATCRON_* value stops the web process here, naming the variable
# A websocket frame may carry the longest prompt (JSON may double it) and little else; a bigger one
# drops the socket before anything is parsed or stored (Reflex's default is 1 MB).
os.environ.setdefault("REFLEX_SOCKET_MAX_HTTP_BUFFER_SIZE", str(guard.frame_limit(_settings)))
# The same list rxconfig.py gives Reflex's CORS middleware and socket.io server.
_origins = allowed_origins(_settings.allowed_origins, rx.config.get_config().deploy_url)

app = rx.App(
    api_transformer=[create_api(get_core, _settings.request_max_bytes),
                     lambda asgi: behind_proxies(asgi, _settings.trusted_proxies),
                     lambda asgi: only_from(asgi, _origins)],
    theme=rx.theme(accent_color="indigo", radius="large"),
    stylesheets=["/chatcron.css"],  # assets/chatcron.css
    backend_exception_handler=guard.calm_exception_handler,
    head_components=[rx.el.link(rel="icon", href="/favicon.svg", type="image/svg+xml"),
                     rx.el.script(src="/transcript.js", defer=True),  # assets/transcript.js: pins the transcript
                     rx.el.script(src="/layout.js", defer=True),  # assets/layout.js: sidebar sheet, drawer focus
                     rx.el.script(src="/event_time.js", defer=True),  # assets/event_time.js: local times
                     rx.el.script(src="/notify.js", defer=True)],  # assets/notify.js: browser notifications
)
socket_guard.install(app.event_namespace)  # frames naming no registered event never reach Reflex
app.register_lifespan_task(deliverer.lifespan(get_core))  # the notification outbox's deliverer (SPEC §13)
app.add_middleware(guard.EventGuard())
app.add_page(login.login_page, route="/login", title="Log in · chatcron", on_load=LoginState.read_error)
app.add_page(index.index_page, route="/", title="chatcron", on_load=index.ON_LOAD)
app.add_page(chat.chat_page, route="/chat/[cid]", title="Chat · chatcron", on_load=chat.ON_LOAD)
app.add_page(schedules.schedules_page, route="/schedules", title="All schedules · chatcron", on_load=schedules.ON_LOAD)
app.add_page(notifications.notifications_page, route="/settings/notifications", title="Notifications · chatcron",
             on_load=notifications.ON_LOAD)
app.add_page(inbox.inbox_page, route=inbox.ROUTE, title="Inbox · chatcron", on_load=inbox.ON_LOAD)
app.add_page(project_settings.project_settings_page, route=project_settings.ROUTE, title="Project settings · chatcron",
             on_load=project_settings.ON_LOAD)
app.add_page(admin.admin_page, route=admin.ROUTE, title="Admin · chatcron", on_load=admin.ON_LOAD)
app.add_page(not_found.not_found_page, route="404", title=not_found.TITLE)  # Reflex's route for unknown URLs
