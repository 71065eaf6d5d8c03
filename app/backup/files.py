"""What of the data dir a backup takes: its workspaces and agent homes, caches left out.

The rule (:func:`excluded`) is pure: a folder is a cache when its path ends with one of
``CACHES`` — things a tool downloads or rebuilds by itself (npm and node packages, pip and
language-server caches, Python bytecode). Everything else below the roots is kept: files, folders
(empty ones too) and symbolic links (as links, never followed). Sockets, FIFOs and devices are not
data and are skipped; so is what cannot be read (named in the manifest's ``skipped``).

Not taken at all: ``agents/`` (the installed agent CLIs: ``install-agent`` puts them back),
``agent-tokens/`` (a turn's short-lived schedule token), ``tmp/`` and ``egress/`` (a running
turn's scratch and proxy sockets) and the SQLite file itself (the snapshot stands for it).
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from app.backup.manifest import ROOTS, Kind

# Folder paths (their last parts) that are caches wherever they are below a root.
CACHES: tuple[tuple[str, ...], ...] = (
    ("node_modules",), (".npm",), (".cache",), (".pnpm-store",), (".yarn", "cache"), (".bun", "install", "cache"),
    ("__pycache__",), (".pytest_cache",), (".mypy_cache",), (".ruff_cache",),
)


def excluded(parts: tuple[str, ...]) -> bool:
    """Whether the folder at ``parts`` (its path below the data dir, e.g. ``("workspaces", "3",
    "node_modules")``) is a cache a backup leaves out. A root itself never is."""
    return len(parts) > 1 and any(len(parts) > len(cache) and parts[-len(cache):] == cache for cache in CACHES)


@dataclasses.dataclass(frozen=True)
class Found:
    """One thing to put in the archive: its member name and where it is on disk."""

    name: str  # e.g. "workspaces/3/notes.md"
    path: Path
    kind: Kind


@dataclasses.dataclass
class Walk:
    """The walk of a data dir's roots: what it found, in a stable order, and what it skipped (why)."""

    data_dir: Path
    skipped: list[str] = dataclasses.field(default_factory=list)

    def __iter__(self) -> Iterator[Found]:
        for root in ROOTS:
            path = self.data_dir / root
            if path.is_dir():  # a root that is a link (a mounted volume) is followed: nothing below is
                yield Found(root, path, Kind.DIR)
                yield from self._below(path, (root,))

    def _below(self, folder: Path, parts: tuple[str, ...]) -> Iterator[Found]:
        try:  # listed through a handle opened link-free from the root: an agent that swaps a folder
            fd = open_below(self.data_dir, "/".join(parts), os.O_RDONLY | os.O_DIRECTORY)  # for a link
        except FileNotFoundError:  # removed while we walked (a turn's scratch): nothing to take
            return
        except OSError as exc:  # ELOOP/ENOTDIR: replaced by a link since it was seen; never followed
            self.skipped.append(f"{'/'.join(parts)}/ (cannot be listed: {exc.strerror})")
            return
        try:
            with os.scandir(fd) as found:
                entries = sorted(found, key=lambda e: e.name)
            kinds = {}
            for entry in entries:
                try:
                    kinds[entry.name] = entry.stat(follow_symlinks=False).st_mode
                except FileNotFoundError:
                    continue
        finally:
            os.close(fd)
        for entry in entries:
            here = (*parts, entry.name)
            name = "/".join(here)
            mode = kinds.get(entry.name)
            if mode is None:
                continue
            path = folder / entry.name
            if stat.S_ISLNK(mode):
                yield Found(name, path, Kind.SYMLINK)
            elif stat.S_ISDIR(mode):
                if not excluded(here):
                    yield Found(name, path, Kind.DIR)
                    yield from self._below(path, here)
            elif stat.S_ISREG(mode):
                yield Found(name, path, Kind.FILE)
            else:
                self.skipped.append(f"{name} (not a regular file, folder or link)")


def open_below(base: Path, name: str, flags: int) -> int:
    """A descriptor of ``base/name`` (a member name: ``workspaces/3/notes.md``) opened one part at
    a time, each part below the root with ``O_NOFOLLOW`` relative to its parent's descriptor: no
    link anywhere below the root is ever followed, even one put in place of a folder meanwhile
    (ELOOP/ENOTDIR then). The root itself may be a link (a mounted volume)."""
    parts = name.split("/")
    fd = os.open(base / parts[0], os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[1:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        if len(parts) == 1:
            found, fd = fd, -1
            return found
        return os.open(parts[-1], flags | os.O_NOFOLLOW, dir_fd=fd)
    finally:
        if fd >= 0:
            os.close(fd)


def parent_below(base: Path, name: str) -> tuple[int, str]:
    """(a descriptor of the folder holding ``name``, opened as :func:`open_below` does; its last part)."""
    folder, _, last = name.rpartition("/")
    return open_below(base, folder, os.O_RDONLY | os.O_DIRECTORY), last


def sync_folder(folder: Path) -> None:
    """fsync a folder: a rename into it is on disk once this returns."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
