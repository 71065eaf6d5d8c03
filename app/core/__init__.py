"""Domain shared by the web and scheduler processes; imports no Reflex, API or scheduler code."""
