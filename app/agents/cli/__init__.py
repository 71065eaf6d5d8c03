"""Agent presets: pinned ACP agents installed into the data dir (SPEC §11)."""
