"""The store and the turn: config, database, accounts, projects, chats, runs, the prompt service
and its ports (``ports``). Shared by the web and scheduler processes; imports no other room."""
