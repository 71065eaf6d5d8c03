"""The agents' room: everything that starts, fences and speaks to an agent process.

- ``providers``: the provider protocol's implementations (demo, command, openai, acp with its
  client, pool and events) and the factory that picks one per project.
- ``cli``: the agent CLI presets (claude, codex, gemini, opencode) and ``install-agent``.
- ``sandbox``: bubblewrap fencing, the data dir's modes, the agent uid.
- ``workspace``: a project's agent workspace and the assets published into it
  (``agent_assets``: ``remote-schedule`` and SKILL.md).
- ``side``: the one object the composition roots hand to the core (``app.core.ports.AgentSide``).

Imports ``app.core`` only (docs/ARCHITECTURE.md).
"""
