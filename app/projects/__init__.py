"""A project's settings and people (SPEC §18): roles, members, the agent, network and budget
settings, and the audit record of every change. One service call per change, shared by the
browser, the HTTP API and the admin CLI, so each is validated the same way."""
