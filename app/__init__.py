"""chatcron: the web application and the rooms both processes share (docs/ARCHITECTURE.md)."""
