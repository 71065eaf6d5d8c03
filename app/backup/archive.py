"""The ``.tar.gz`` itself: written member by member with each member's sha256 taken from the very
bytes written, and read back — once to check every member against the manifest, once to extract.

Writing: a file that may change while it is read (an agent works in its workspace) is first copied
into a spool (memory up to 8 MiB, then a temporary file beside the archive) while hashed, so the
size in the member's header, its bytes and its checksum are one version of it. Reading: the gzip
stream is read to its end, so its CRC and length are checked too; a member is written only below
the folders the caller names, links are created last and never followed.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import io
import os
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from app.backup.errors import BackupError
from app.backup.files import open_below, parent_below
from app.backup.manifest import EMPTY_SHA256, MANIFEST, Entry, Kind, Manifest, name_problem, parse
from app.core.db import first_line

CHUNK = 1 << 20
SPOOL_MEMORY = 8 << 20
MANIFEST_MAX = 256 << 20
COMPRESSLEVEL = 6  # zlib's default: most of level 9's size at a third of its time
_DAMAGED = (tarfile.TarError, EOFError, zlib.error, OSError)


class _Hashing:
    """A reader that hashes what is read through it."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw, self.hash, self.size = raw, hashlib.sha256(), 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.hash.update(data)
        self.size += len(data)
        return data


class Writer:
    """A ``.tar.gz`` being written at ``path``; ``members`` are the entries of the manifest."""

    def __init__(self, path: Path, spool_dir: Path) -> None:
        self.spool_dir = spool_dir
        self.members: dict[str, Entry] = {}
        self._tar = tarfile.open(path, "w:gz", compresslevel=COMPRESSLEVEL, format=tarfile.PAX_FORMAT)

    def add_file(self, name: str, path: Path, *, stable: bool = False, base: Path | None = None) -> bool:
        """Add a regular file (False: it vanished or is no longer a regular file). ``stable``: nothing
        writes it meanwhile (the database snapshot), so it is streamed without a spool. ``base``: the
        data dir the member name is below, opened link-free part by part (:func:`open_below`)."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = open_below(base, name, flags) if base is not None else os.open(path, flags)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):  # removed, or a link, since the walk
                return False
            raise  # PermissionError: the caller notes it as skipped
        with os.fdopen(fd, "rb") as raw:
            st = os.fstat(raw.fileno())
            if not stat.S_ISREG(st.st_mode):
                return False
            info = self._info(name, tarfile.REGTYPE, st)
            if stable:
                info.size = st.st_size
                reader = _Hashing(raw)
                self._tar.addfile(info, reader)
                self.members[name] = Entry(Kind.FILE, reader.size, reader.hash.hexdigest())
                return True
            with tempfile.SpooledTemporaryFile(SPOOL_MEMORY, dir=self.spool_dir) as spool:
                digest, size = hashlib.sha256(), 0
                while chunk := raw.read(CHUNK):
                    digest.update(chunk)
                    spool.write(chunk)
                    size += len(chunk)
                spool.seek(0)
                info.size = size
                self._tar.addfile(info, spool)
        self.members[name] = Entry(Kind.FILE, size, digest.hexdigest())
        return True

    def add_dir(self, name: str, path: Path, base: Path | None = None) -> bool:
        """Add a folder (its mode and time; what it holds is added on its own). False: it vanished."""
        try:
            if base is None:
                st = path.stat()
            else:
                fd = open_below(base, name, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    st = os.fstat(fd)
                finally:
                    os.close(fd)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                return False
            raise
        self._tar.addfile(self._info(name, tarfile.DIRTYPE, st))
        self.members[name] = Entry(Kind.DIR, 0, EMPTY_SHA256)
        return True

    def add_symlink(self, name: str, path: Path, base: Path | None = None) -> bool:
        """Add a link as a link (its target as written, never followed). False: it vanished."""
        try:
            if base is None:
                target, st = os.readlink(path), path.lstat()
            else:
                folder, last = parent_below(base, name)
                try:
                    target = os.readlink(last, dir_fd=folder)
                    st = os.stat(last, dir_fd=folder, follow_symlinks=False)
                finally:
                    os.close(folder)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EINVAL, errno.ELOOP):  # removed, or no longer a link
                return False
            raise
        info = self._info(name, tarfile.SYMTYPE, st)
        info.linkname = target
        self._tar.addfile(info)
        self.members[name] = Entry(Kind.SYMLINK, 0, hashlib.sha256(os.fsencode(target)).hexdigest())
        return True

    def add_manifest(self, manifest: Manifest, mtime: float) -> None:
        data = manifest.to_json()
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mode, info.mtime = len(data), 0o600, mtime
        self._tar.addfile(info, io.BytesIO(data))

    def close(self) -> None:
        self._tar.close()

    @staticmethod
    def _info(name: str, kind: bytes, st: os.stat_result) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.type, info.mode, info.mtime = kind, stat.S_IMODE(st.st_mode) & 0o777, int(st.st_mtime)
        return info  # no owner: a restore's files are the restoring user's


@contextlib.contextmanager
def _damage(path: Path) -> Iterator[None]:
    """Reading the archive failed: it is damaged (or truncated), never the caller's own writes."""
    try:
        yield
    except _DAMAGED as exc:
        raise BackupError(f"the archive {path} is damaged or truncated ({first_line(exc)}); nothing was restored") \
            from None


def _members(path: Path) -> Iterator[tuple[tarfile.TarInfo, tarfile.TarFile]]:
    """The archive's members in order, read as one stream, then the gzip stream to its end (its CRC
    and length are checked there); a damaged archive raises BackupError."""
    with _damage(path):
        raw = gzip.open(path, "rb")
        tar = tarfile.open(fileobj=raw, mode="r|")
    with raw, tar:
        members = iter(tar)
        while True:
            with _damage(path):
                member = next(members, None)
            if member is None:
                break
            yield member, tar
        with _damage(path):
            while raw.read(CHUNK):
                pass


def _kind(member: tarfile.TarInfo) -> Kind:
    if member.isreg():
        return Kind.FILE
    if member.isdir():
        return Kind.DIR
    if member.issym():
        return Kind.SYMLINK
    raise BackupError(f"the archive's member {member.name!r} is not a file, folder or link; nothing was restored")


def _read(path: Path, member: tarfile.TarInfo, tar: tarfile.TarFile, sink: Callable[[bytes], None]) -> Entry:
    kind = _kind(member)
    if kind == Kind.DIR:
        return Entry(kind, 0, EMPTY_SHA256)
    if kind == Kind.SYMLINK:
        return Entry(kind, 0, hashlib.sha256(os.fsencode(member.linkname)).hexdigest())
    digest, size = hashlib.sha256(), 0
    source = tar.extractfile(member)
    while True:
        with _damage(path):
            chunk = source.read(CHUNK)
        if not chunk:
            return Entry(kind, size, digest.hexdigest())
        digest.update(chunk)
        sink(chunk)
        size += len(chunk)


def scan(path: Path) -> tuple[Manifest, dict[str, Entry]]:
    """Read the whole archive: its manifest and what each other member really is (type, size,
    sha256). Raises BackupError for a damaged archive, a missing or bad manifest, a member named twice
    or outside the data dir's folders."""
    seen: dict[str, Entry] = {}
    manifest: bytes | None = None
    for member, tar in _members(path):
        if member.name == MANIFEST and member.isreg():
            if member.size > MANIFEST_MAX or manifest is not None:
                raise BackupError("the archive has an oversized or second manifest.json; nothing was restored")
            with _damage(path):
                manifest = tar.extractfile(member).read()
            continue
        problem = name_problem(member.name)
        if problem:
            raise BackupError(f"the archive's member {member.name!r} {problem}; nothing was restored")
        if member.name in seen:
            raise BackupError(f"the archive holds {member.name!r} twice; nothing was restored")
        seen[member.name] = _read(path, member, tar, _ignore)
    if manifest is None:
        raise BackupError(f"{path} has no manifest.json: it is not a chatcron backup (or it is truncated)")
    return parse(manifest), seen


def extract(path: Path, manifest: Manifest, place: Callable[[str], Path]) -> None:
    """Write every member but the manifest at ``place(name)`` (a path below a folder the caller made
    for this restore), checking each against the manifest again as it is written. Links are made
    last; folders get their modes at the end (always with the owner's rwx, so the server can still
    write and clean up what it restored)."""
    folders: list[tuple[Path, int, float]] = []
    links: list[tuple[Path, str, float]] = []
    for member, tar in _members(path):
        if member.name == MANIFEST:
            continue
        target = place(member.name)
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
            folders.append((target, member.mode & 0o777, member.mtime))
        elif member.issym():
            links.append((target, member.linkname, member.mtime))
        entry = _write(path, member, tar, target) if member.isreg() else _read(path, member, tar, _ignore)
        if manifest.members.get(member.name) != entry:
            raise BackupError(f"the archive changed while it was restored ({member.name}); nothing was restored")
    for target, linkname, mtime in links:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(linkname, target)
        os.utime(target, (mtime, mtime), follow_symlinks=False)
    for target, mode, mtime in reversed(folders):  # deepest first
        os.chmod(target, mode | 0o700)
        os.utime(target, (mtime, mtime))


def _write(path: Path, member: tarfile.TarInfo, tar: tarfile.TarFile, target: Path) -> Entry:
    """A regular file written anew (never through a link, never over anything) with its mode and mtime."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        entry = _read(path, member, tar, out.write)
    os.chmod(target, member.mode & 0o777)
    os.utime(target, (member.mtime, member.mtime))
    return entry


def _ignore(chunk: bytes) -> None:
    pass
