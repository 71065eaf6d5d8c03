"""Reflex states: one per page beside a shared session state."""
