"""Project workspaces ``<data-dir>/workspaces/<project-id>/`` and agent homes
``<data-dir>/agent-homes/<project-id>/``, never outside those folders."""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import os
import shutil
import stat
from pathlib import Path

from app.agents.sandbox import hand_over
from app.core.config import Settings


def workspace_path(root: Path, project_id: int) -> Path:
    """The folder of a project under ``root`` (its workspace, its agent home); refuses ids that could
    name another folder."""
    if not isinstance(project_id, int) or isinstance(project_id, bool) or project_id <= 0:
        raise ValueError(f"project id {project_id!r} is not a positive integer")
    base = root.resolve()
    path = (base / str(project_id)).resolve()
    if path.parent != base:
        raise ValueError("workspace path escapes the workspaces folder")
    return path


def agent_home(settings: Settings, project_id: int) -> Path:
    """``<data-dir>/agent-homes/<project-id>/``: the HOME of every agent of the project (agent CLIs
    keep their sessions and credentials there); created absolute, since an agent resolves a
    relative HOME against its session's working directory, and owned by the agent uid when
    sandboxed."""
    path = workspace_path(settings.agent_homes_dir, project_id)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    hand_over(settings, path)
    return path


def ensure_workspace(root: Path, project_id: int) -> Path:
    """Create the project's workspace folder if missing and return it."""
    path = workspace_path(root, project_id)
    path.mkdir(parents=True, exist_ok=True)
    return path


def loose_agent_dirs(settings: Settings, chat_id: int) -> tuple[Path, Path]:
    """(home, working directory) of an agent in a loose chat, which has no project workspace;
    owned by the agent uid when sandboxed."""
    base = workspace_path(settings.agent_homes_dir / "loose", chat_id)
    home, work = base / "home", base / "work"
    for folder in (home, work):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        hand_over(settings, folder)
    return home, work


def agent_token_file(settings: Settings, chat_id: int) -> Path:
    """Where a warm agent of the chat finds its turn's schedule token (SCHEDULE_API_TOKEN_FILE):
    outside every agent home, one folder per chat (created here, the agent uid's when sandboxed:
    the sandbox binds it read-only), the file present only during a turn."""
    path = workspace_path(settings.agent_tokens_dir, chat_id)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    hand_over(settings, path)
    return path / "token"


ASSETS_DIR = Path(__file__).resolve().parent / "agent_assets"
# source file in app/agents/agent_assets → (path inside the workspace, file mode)
ASSETS = {
    "remote-schedule": ("scripts/remote-schedule", 0o755),
    "SKILL.md": (".agents/skills/scheduled-tasks/SKILL.md", 0o644),
}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def publish_assets(workspace: Path) -> list[str]:
    """Make the workspace's copies of the CLI and SKILL.md byte-identical to ours (by sha256).

    Returns the workspace paths that were missing or changed and have been rewritten. The agent
    owns its workspace and may race this: every path is walked from the workspace's own folder
    by file descriptor with ``O_NOFOLLOW``, so a link (or a file, a FIFO) planted on the way is
    removed and replaced, never followed — the server neither reads nor writes outside. A copy
    is ours when it is a regular file with our bytes and mode; it is owned by the server (folders
    belong to the workspace's owner, the agent uid when sandboxed), so the agent cannot edit it in
    place.
    """
    rewritten = []
    root = os.open(workspace, _DIR_FLAGS)
    try:
        owner = os.fstat(root)
        for name, (relative, mode) in ASSETS.items():
            source = _asset(name)
            *folders, leaf = Path(relative).parts
            parent = _real_folders(root, folders, owner)
            try:
                if not _is_ours(parent, leaf, source, mode):
                    _write(parent, leaf, source, mode)
                    rewritten.append(relative)
            finally:
                os.close(parent)
    finally:
        os.close(root)
    return rewritten


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LINK_ERRORS = (errno.ELOOP, errno.ENOTDIR)


@functools.cache
def _asset(name: str) -> bytes:
    return (ASSETS_DIR / name).read_bytes()


def _remove(dir_fd: int, name: str) -> None:
    """Remove whatever ``name`` is in that folder (a link itself, never its target)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def _real_folders(root: int, folders: list[str], owner: os.stat_result) -> int:
    """An fd of the folder ``root/folders...``, each step a real folder: links and files in the way
    are removed, missing folders made (owned like the workspace). The caller closes it."""
    current = os.dup(root)
    for part in folders:
        try:
            for _ in range(5):  # a racing agent may recreate what was just removed
                try:
                    step = os.open(part, _DIR_FLAGS, dir_fd=current)
                    break
                except FileNotFoundError:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=current)
                        if os.geteuid() == 0:
                            os.chown(part, owner.st_uid, owner.st_gid, dir_fd=current, follow_symlinks=False)
                except OSError as exc:
                    if exc.errno not in _LINK_ERRORS:
                        raise
                    _remove(current, part)
            else:
                raise OSError(f"{part} keeps changing in the workspace")
        finally:
            os.close(current)
        current = step
    return current


def _is_ours(dir_fd: int, leaf: str, source: bytes, mode: int) -> bool:
    try:  # O_NONBLOCK: a FIFO planted here must not hang the server
        fd = os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) != mode or st.st_size != len(source):
            return False
        if _sha256(os.read(fd, len(source) + 1)) != _sha256(source):
            return False
        if os.geteuid() == 0 and st.st_uid != 0:
            os.fchown(fd, 0, 0)  # our bytes, but handed over with the workspace: ours again
        return True
    finally:
        os.close(fd)


def _write(dir_fd: int, leaf: str, source: bytes, mode: int) -> None:
    tmp = f".{leaf}.tmp"
    _remove(dir_fd, tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    try:
        view = memoryview(source)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    st = None
    with contextlib.suppress(FileNotFoundError):
        st = os.stat(leaf, dir_fd=dir_fd, follow_symlinks=False)
    if st is not None and stat.S_ISDIR(st.st_mode):
        shutil.rmtree(leaf, dir_fd=dir_fd)  # a rename does not replace a folder
    os.replace(tmp, leaf, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # replaces a link itself, not its target


@functools.cache
def skill_text() -> str:
    """SKILL.md, force-appended to a scheduled fire's prompt (a packaged file: read once)."""
    return (ASSETS_DIR / "SKILL.md").read_text(encoding="utf-8")
