"""Reusable UI pieces: functions returning ``rx.Component``."""
