"""One final utterance kept as evidence: the record, and the one shape it comes in as.

``Evidence`` is what memory indexes, the store keeps and recall returns; it is built by
keyword only, so no caller can swap two of its strings. ``UtteranceIn`` is how an utterance
arrives from outside (a line of ``heard memory ingest``'s JSONL, an item of
``POST /v1/memory/evidence``), validated the same way wherever it comes from: only finals,
text a store can keep, a time with its zone. The live socket makes its evidence from finals
it validated as transcript events.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field

from heard.storable import MAX_NAME_CHARS, readable, storable, storable_time

__all__ = ["MAX_UTTERANCE_CHARS", "Evidence", "UtteranceIn"]

MAX_UTTERANCE_CHARS = 20_000
"""An utterance's text: a few minutes of speech, many times over."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """A final utterance: who said what, in which conversation and sitting, when."""

    id: str
    speaker: str
    text: str
    conversation: str = ""
    session: str = ""
    """The sitting it was said in, within its conversation ("": none)."""
    t: datetime | None = None
    language: str = ""
    """ISO 639-1, as heard was told or detected it ("": read from the text)."""


def _iso_text(value: object) -> object:
    if not isinstance(value, str):
        raise ValueError("expected an ISO 8601 date-time string with a time zone")
    return value


def _primary(value: object) -> object:
    """A language tag's primary subtag, lower case ("en-US", "ES" -> "en", "es")."""
    if not isinstance(value, str):
        return value
    return value.strip().lower().replace("_", "-").split("-")[0]


_Text = Annotated[str, AfterValidator(storable)]
_Name = Annotated[str, AfterValidator(readable), Field(min_length=1, max_length=MAX_NAME_CHARS)]
_Label = Annotated[str, AfterValidator(readable), Field(max_length=MAX_NAME_CHARS)]
Timestamp = Annotated[AwareDatetime, BeforeValidator(_iso_text), AfterValidator(storable_time)]
"""A date-time as JSON carries it: a string (a bare number is not taken as Unix time); kept
in UTC."""


class UtteranceIn(BaseModel):
    """An utterance as a file line or a request carries it (docs/formats.md)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    id: _Name
    speaker: _Name
    text: Annotated[_Text, Field(min_length=1, max_length=MAX_UTTERANCE_CHARS)]
    session: _Label = ""
    conversation: _Label = ""
    """Its conversation; its session when none is given."""
    t: Timestamp | None = None
    language: Annotated[str, BeforeValidator(_primary), Field(pattern=r"^([a-z]{2,3})?$")] = ""
    """ISO 639-1 (or -2), or a tag that starts with one: "en-US" is kept as "en"."""
    type: Literal["final"] = "final"
    """Only finals are evidence (an event log's line may say so)."""

    def evidence(self) -> Evidence:
        return Evidence(
            id=self.id,
            speaker=self.speaker,
            text=self.text,
            conversation=self.conversation or self.session,
            session=self.session,
            t=self.t,
            language=self.language,
        )
