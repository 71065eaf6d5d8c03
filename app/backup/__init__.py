"""Backup and restore of a whole chatcron store (SPEC §21, docs/BACKUP.md).

``backup`` writes one ``.tar.gz``: a consistent snapshot of the database, the data dir's workspaces
and agent homes (caches left out) and ``manifest.json`` with a sha256 for every member. ``restore``
puts one into an empty database and data dir after checking every checksum, migrates an older
schema and records the fires that were running at the snapshot ``abandoned``.

Pure rules (``manifest``, ``files.excluded``) and thin shells around them: the archive (``archive``),
each database's snapshot and load (``sqlite``, ``postgres``), the two commands (``backup``,
``restore``, ``settle``) and their command line (``cli``, used by ``app.manage``).
"""
