"""chatcron: the web application and the rooms both processes share (docs/ARCHITECTURE.md)."""

__version__ = "0.1.0"  # what a backup's manifest records as chatcron_version (docs/BACKUP.md)
