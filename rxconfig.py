"""Reflex configuration: the web process (UI and both APIs on one port)."""

import os

import reflex as rx

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
