"""Keeping uploaded audio: each user's folder, their storage counted as bytes arrive, an
upload checked (decodable, within the limits) before its track points at it, and nothing of
a refused or broken upload left behind.

The server's track uploads go through ``Uploads.keep``; any other front end that takes audio
for a stored meeting can do the same. Errors are heard's own (``TooLargeError``: 413,
``NoRoomError``: 507, ``AudioError``: 422 at the server's edge).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from heard.asr.audio import check_duration, measure_audio
from heard.errors import AudioError, InputError, NoRoomError, ServiceError, TooLargeError
from heard.leftovers import maker_prefix, remove_left_behind
from heard.limits import MAX_TRACK_S, MAX_UPLOAD_BYTES, USER_STORAGE_BYTES
from heard.store.database import Database
from heard.store.tracks import track_of, upload_track
from heard.work import FairPool

__all__ = ["LOCAL_FOLDER", "StorageLedger", "Uploads", "audio_type", "open_upload"]

log = logging.getLogger("heard.meetings")

LOCAL_FOLDER = "local"
"""The folder of the local user (``--local``; owner "") among the users' (named by their ids)."""


class StorageLedger:
    """The bytes each user keeps in uploads, against ``limit`` (0: none), with the uploads in
    flight counted as their bytes arrive: parallel uploads cannot each see the same room.

    A user's count is read from disk (``on_disk``) when an upload begins and none of theirs is
    in flight, so whatever changed the files meanwhile is taken in; while some are in flight,
    it moves only by what they add and what is removed through ``release``."""

    def __init__(self, limit: int, on_disk: Callable[[str], int]) -> None:
        self.limit = limit
        self.on_disk = on_disk
        self._bytes: dict[str, int] = {}
        self._uploads: dict[str, int] = {}
        self._lock = threading.Lock()

    def begin(self, owner: str) -> int | None:
        """An upload of ``owner``'s begins; the bytes left them (None: no limit)."""
        with self._lock:
            if not self._uploads.get(owner):
                self._bytes[owner] = self.on_disk(owner)
            self._uploads[owner] = self._uploads.get(owner, 0) + 1
            return None if self.limit <= 0 else self.limit - self._bytes[owner]

    def add(self, owner: str, n: int) -> bool:
        """Count ``n`` more bytes of an upload in flight; False (nothing counted) past the
        limit."""
        with self._lock:
            if 0 < self.limit < self._bytes[owner] + n:
                return False
            self._bytes[owner] += n
            return True

    def release(self, owner: str, n: int) -> None:
        """``n`` bytes of ``owner``'s are gone (a failed upload's, a replaced file's)."""
        with self._lock:
            if owner in self._bytes:
                self._bytes[owner] = max(0, self._bytes[owner] - n)

    def end(self, owner: str) -> None:
        """An upload of ``owner``'s is over (kept or not: ``release`` what was not)."""
        with self._lock:
            self._uploads[owner] -= 1


def open_upload(path: Path) -> BinaryIO:
    """Where an upload's bytes go (a test puts a full disk here)."""
    return path.open("wb")


def _cannot_keep(error: OSError) -> ServiceError:
    """An upload there was no room (507) or no way (503) to keep: one line for the client,
    without the folders; the operator's log says what the system said."""
    log.error("uploads: cannot write (%s)", error)
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return NoRoomError("the server has no room for this upload now; nothing was kept")
    return ServiceError("the server cannot keep uploads now; nothing was kept")


@dataclass
class Uploads:
    """The audio users upload for their meetings' tracks, one folder per user under ``root``,
    at most ``user_bytes`` each (0: no limit)."""

    db: Database
    root: Path
    max_track_s: float = MAX_TRACK_S
    user_bytes: int = USER_STORAGE_BYTES
    work: FairPool = field(default_factory=lambda: FairPool(4, per_owner=1, name="heard-uploads"))
    """Where the blocking steps run (the database, counting the audio's length), a few of
    one user's at once: one user's dozen long uploads cannot hold every thread."""
    ledger: StorageLedger = field(init=False)

    def __post_init__(self) -> None:
        self.ledger = StorageLedger(self.user_bytes, self.stored_bytes)

    def folder(self, owner: str) -> Path:
        """Where ``owner``'s uploads are kept."""
        return self.root / (owner or LOCAL_FOLDER)

    def stored_bytes(self, owner: str) -> int:
        """The bytes of the uploads ``owner`` keeps (uploads in flight not counted)."""
        used = 0
        for path in self.folder(owner).rglob("*.audio"):
            with contextlib.suppress(OSError):
                used += path.stat().st_size
        return used

    def clear_leftovers(self) -> int:
        """Remove the partial files of uploads that a process gone (killed, crashed) cut short,
        never those a server beside this one on the same folder is receiving now: each is
        named after the process writing it (``heard.leftovers``). How many were removed."""
        return remove_left_behind(self.root.glob("*/*/.*.part"))

    @contextlib.asynccontextmanager
    async def counted(self, owner: str) -> AsyncIterator[Callable[[int], None]]:
        """Bytes ``owner`` keeps on the uploads disk only while a request runs (a file to
        transcribe): a counter to call before writing each piece, which counts it in the
        user's storage (past the room left: the ``NoRoomError`` an upload gets); all given
        back when the block ends."""
        await self.work.run(owner, self.ledger.begin, owner)
        counted = 0

        def count(n: int) -> None:
            nonlocal counted
            if not self.ledger.add(owner, n):
                raise self._over_quota()
            counted += n

        try:
            yield count
        finally:
            self.ledger.release(owner, counted)
            self.ledger.end(owner)

    def _over_quota(self) -> NoRoomError:
        gib = self.user_bytes / 2**30
        return NoRoomError(
            f"this upload would take your stored audio past your limit of {gib:.3g} GiB "
            "($HEARD_USER_STORAGE_MB on the server); nothing was kept"
        )

    async def keep(
        self,
        owner: str,
        meeting_id: uuid.UUID,
        participant: str,
        chunks: AsyncIterator[bytes],
        announced: int | None = None,
    ) -> None:
        """Keep ``chunks`` as ``participant``'s track of the meeting: counted in the user's
        storage as they arrive (and given back if they are not kept), checked, and given to
        the track in place of the upload before it. ``announced``: the size the client said
        it would send (refused at once past the room left)."""
        track_id = await self.work.run(owner, track_of, self.db, meeting_id, participant, owner)
        room = await self.work.run(owner, self.ledger.begin, owner)
        try:
            await self._keep(owner, meeting_id, track_id, participant, chunks, announced, room)
        finally:
            self.ledger.end(owner)

    async def _keep(
        self,
        owner: str,
        meeting_id: uuid.UUID,
        track_id: uuid.UUID,
        participant: str,
        chunks: AsyncIterator[bytes],
        announced: int | None,
        room: int | None,
    ) -> None:
        ledger = self.ledger
        folder = self.folder(owner) / str(meeting_id)
        # every upload writes files of its own: racing uploads of one track never mix, and
        # the track points at exactly one complete upload that decoded (the last to finish);
        # the partial file is named after this process, so a server starting on the same
        # folder leaves it be while this process lives (heard.leftovers)
        upload_id = uuid.uuid4().hex
        path = folder / f"{track_id}.{upload_id}.audio"
        partial = folder / f".{maker_prefix()}{track_id}.{upload_id}.part"
        size = 0
        if room is not None and (room <= 0 or (announced is not None and announced > room)):
            raise self._over_quota()  # nothing read
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with open_upload(partial) as f:
                async for chunk in chunks:
                    if size + len(chunk) > MAX_UPLOAD_BYTES:
                        raise TooLargeError(f"audio larger than {MAX_UPLOAD_BYTES} bytes")
                    if not ledger.add(owner, len(chunk)):
                        raise self._over_quota()
                    size += len(chunk)
                    f.write(chunk)
        except OSError as e:
            partial.unlink(missing_ok=True)
            ledger.release(owner, size)
            raise _cannot_keep(e) from None
        except BaseException:
            partial.unlink(missing_ok=True)  # too big, or the client went away mid-upload
            ledger.release(owner, size)
            raise
        try:
            before = await self._checked(owner, track_id, participant, partial, path, size)
        except BaseException:
            ledger.release(owner, size)
            raise
        if before and before != str(path) and Path(before).parent == folder:
            with contextlib.suppress(OSError):
                ledger.release(owner, Path(before).stat().st_size)
            Path(before).unlink(missing_ok=True)  # the upload this one replaced

    async def _checked(
        self,
        owner: str,
        track_id: uuid.UUID,
        participant: str,
        partial: Path,
        path: Path,
        size: int,
    ) -> str | None:
        """The kept upload checked (decodable, within the limit) and given to its track; the
        upload it replaced. Refused, nothing of it stays."""
        if size == 0:
            partial.unlink(missing_ok=True)
            raise AudioError("the request body (the audio) is empty")
        try:
            info = await self.work.run(owner, measure_audio, partial, self.max_track_s)
        except InputError as e:
            partial.unlink(missing_ok=True)
            reason = str(e).replace(str(partial), "the upload")  # no server folders in replies
            raise AudioError(f"{participant}: not decodable audio ({reason})") from e
        try:
            check_duration(info, self.max_track_s)
        except InputError as e:
            partial.unlink(missing_ok=True)
            raise TooLargeError(str(e).replace(str(partial), f"{participant}'s upload")) from e
        partial.replace(path)
        try:
            before: str | None = await self.work.run(owner, upload_track, self.db, track_id,
                                                     str(path))  # fmt: skip
        except BaseException:  # being transcribed, the meeting deleted meanwhile, the store down
            path.unlink(missing_ok=True)
            raise
        return before

    def discard(self, owner: str, meeting_id: uuid.UUID, locations: list[str]) -> None:
        """Remove the audio a deleted meeting's tracks kept here (only what was uploaded: a
        command line's files stay), and give its bytes back to the user's storage."""
        folder = self.folder(owner) / str(meeting_id)
        for location in locations:
            path = Path(location)
            if path.parent == folder:
                with contextlib.suppress(OSError):
                    self.ledger.release(owner, path.stat().st_size)
                    path.unlink()
        with contextlib.suppress(OSError):
            folder.rmdir()


AUDIO_TYPES = (
    (b"RIFF", "audio/wav"),
    (b"fLaC", "audio/flac"),
    (b"OggS", "audio/ogg"),
    (b"ID3", "audio/mpeg"),
    (b"\xff\xfb", "audio/mpeg"),
    (b"\xff\xf3", "audio/mpeg"),
    (b"\x1aE\xdf\xa3", "audio/webm"),
)


def audio_type(path: Path) -> str:
    """The media type of the audio at ``path``, read from its first bytes."""
    with path.open("rb") as f:
        head = f.read(12)
    if head[4:8] == b"ftyp":
        return "audio/mp4"
    for magic, media_type in AUDIO_TYPES:
        if head.startswith(magic):
            return media_type
    return "application/octet-stream"
