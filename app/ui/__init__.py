"""Reflex pages, states and components; they call core services and hold no business rules."""
