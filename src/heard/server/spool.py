"""Files an upload is kept in while one request transcribes it (OpenAI's and Deepgram's
routes): in the uploads volume's ``.transcriptions`` folder, never ``$TMPDIR``, and removed
when the request ends.

A process killed mid-request cannot remove its file, and each may be as large as the upload
limit. The names say which machine and process made them (``heard.leftovers``, the rule the
meetings' partial uploads follow too), so a server starting removes the leftovers of
processes that are gone, and never the file of one still running beside it on the same
volume.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from heard.leftovers import maker_prefix, remove_left_behind

__all__ = ["FOLDER", "clear_leftovers", "spool_file"]

FOLDER = ".transcriptions"


def spool_file(uploads: Path) -> tuple[int, Path]:
    """A new, empty file for one request's upload: its descriptor and path."""
    folder = uploads / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=folder, prefix=maker_prefix(), suffix=".audio")
    return handle, Path(name)


def clear_leftovers(uploads: Path) -> int:
    """Remove the upload files of processes that are gone; how many were removed."""
    folder = uploads / FOLDER
    if not folder.is_dir():
        return 0
    return remove_left_behind(folder.iterdir())
