"""Reflex configuration: the web process (UI and both APIs on one port)."""

import os

import reflex as rx

from app.core.config import load_settings
from app.core.origins import allowed_origins

# Tab state lives in memory (nothing under .states/, which would hold transcripts on disk) unless
# REFLEX_REDIS_URL points the web workers at a shared Redis (docs/DEPLOY.md, docs/SECURITY.md).
_state = {} if os.environ.get("REFLEX_REDIS_URL") else {"state_manager_mode": rx.constants.StateManagerMode.MEMORY}

config = rx.Config(
    app_name="app",
    telemetry_enabled=False,
    show_built_with_reflex=False,
    plugins=[rx.plugins.RadixThemesPlugin()],
    disable_plugins=[rx.plugins.SitemapPlugin],
    **_state,
)
# Only these origins get CORS headers and a socket.io connection (SPEC §17); app/app.py refuses
# the others outright. deploy_url is final here: Reflex has applied REFLEX_* and --frontend-port.
config.cors_allowed_origins = allowed_origins(load_settings().allowed_origins, config.deploy_url)
