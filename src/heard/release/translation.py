"""Translating release units in order: the ``Translator`` seam and the queue.

``TranslationQueue`` translates units concurrently (a slow call does not hold up
the ones after it from starting) but publishes strictly in submission order, so
captions never reorder; a failed call is retried with exponential backoff, and a
unit whose every attempt failed is still published, with its error, so the
archive stays 1:1 with the units.

Translators: ``LLMTranslator`` (any ``heard.llm.Provider``: OpenAI, Anthropic, an
OpenAI-compatible local server), ``ArgosTranslator`` (offline, when
``argostranslate`` and the language pair are installed) and ``IdentityTranslator``
(no translator configured: the text itself, and it says so).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from heard.errors import MissingDependencyError, ProviderError
from heard.llm.provider import Provider, ToolSpec
from heard.release.tracker import ReleaseUnit

__all__ = [
    "ArgosTranslator",
    "IdentityTranslator",
    "LLMTranslator",
    "TranslatedUnit",
    "TranslationQueue",
    "Translator",
]


@runtime_checkable
class Translator(Protocol):
    name: str
    is_identity: bool
    """True when the "translation" is the text itself (no translator configured)."""

    async def translate(self, text: str, source: str, target: str) -> str: ...


class IdentityTranslator:
    """The fallback: returns the text unchanged and says so in its name."""

    name = "identity (no translator configured)"
    is_identity = True

    async def translate(self, text: str, source: str, target: str) -> str:
        return text


class ArgosTranslator:
    """Offline translation with argostranslate; needs the package and the language pair."""

    is_identity = False

    def __init__(self, source: str, target: str) -> None:
        try:
            from argostranslate import translate as argos
        except ImportError as e:
            raise MissingDependencyError(
                "argostranslate is not installed (pip install argostranslate)"
            ) from e
        languages = {lang.code: lang for lang in argos.get_installed_languages()}
        if source not in languages or target not in languages:
            raise MissingDependencyError(
                f"argostranslate has no {source}->{target} package installed"
            )
        self._translation: Any = languages[source].get_translation(languages[target])
        if self._translation is None:
            raise MissingDependencyError(f"argostranslate cannot translate {source}->{target}")
        self.name = f"argostranslate {source}->{target}"

    async def translate(self, text: str, source: str, target: str) -> str:
        return str(await asyncio.to_thread(self._translation.translate, text))


_TRANSLATION_TOOL_PARAMETERS = {
    "type": "object",
    "properties": {"translation": {"type": "string", "description": "The translated text."}},
    "required": ["translation"],
}


class LLMTranslator:
    """Translation by any LLM ``Provider``, as one forced ``emit_translation`` tool call."""

    is_identity = False

    def __init__(self, provider: Provider, *, timeout_s: float = 20.0) -> None:
        self.provider = provider
        self.timeout_s = timeout_s
        self.name = f"llm {provider.name}"

    async def translate(self, text: str, source: str, target: str) -> str:
        tool = ToolSpec(
            "emit_translation", f"Return the {target} translation.", _TRANSLATION_TOOL_PARAMETERS
        )
        system = (
            f"You translate live captions from {source} to {target}. Translate the caption "
            "faithfully, keep names as they are, add nothing, and call emit_translation."
        )
        call = await asyncio.to_thread(
            self.provider.call_tool, system=system, prompt=text, tool=tool, timeout_s=self.timeout_s
        )
        translation = call.arguments.get("translation")
        if not isinstance(translation, str):
            raise ProviderError(
                f"{self.provider.name}: emit_translation without a translation string"
            )
        return translation


@dataclass(frozen=True, slots=True)
class TranslatedUnit:
    unit: ReleaseUnit
    translation: str | None
    """None when every attempt failed (see ``error``)."""
    translator: str
    attempts: int
    error: str | None = None


class TranslationQueue:
    """Translate units in parallel, publish them in order, keep a 1:1 archive."""

    def __init__(
        self,
        translator: Translator,
        *,
        source: str = "en",
        target: str,
        max_attempts: int = 4,
        backoff_s: float = 0.25,
        max_in_flight: int = 4,
        on_translated: Callable[[TranslatedUnit], None] | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        if max_attempts < 1 or max_in_flight < 1:
            raise ValueError("max_attempts and max_in_flight must be >= 1")
        self.translator = translator
        self.source, self.target = source, target
        self.max_attempts, self.backoff_s = max_attempts, backoff_s
        self.on_translated = on_translated
        self._sleep = sleep
        self._slots = asyncio.Semaphore(max_in_flight)
        self._pending: list[asyncio.Task[TranslatedUnit]] = []
        self._publisher: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._closed = False
        self.archive: list[TranslatedUnit] = []
        """Every submitted unit with its translation, in submission order."""

    def submit(self, unit: ReleaseUnit) -> None:
        """Queue ``unit``; call from inside the running event loop."""
        if self._closed:
            raise RuntimeError("the translation queue is closed")
        self._pending.append(asyncio.create_task(self._translate(unit)))
        self._ready.set()
        if self._publisher is None:
            self._publisher = asyncio.create_task(self._publish())

    async def _translate(self, unit: ReleaseUnit) -> TranslatedUnit:
        error = None
        async with self._slots:
            for attempt in range(1, self.max_attempts + 1):
                try:
                    text = await self.translator.translate(unit.text, self.source, self.target)
                    return TranslatedUnit(unit, text, self.translator.name, attempt)
                except Exception as e:  # noqa: BLE001 - any provider failure is retried
                    error = f"{type(e).__name__}: {e}"
                    if attempt < self.max_attempts:
                        await self._sleep(self.backoff_s * 2 ** (attempt - 1))
        return TranslatedUnit(unit, None, self.translator.name, self.max_attempts, error)

    async def _publish(self) -> None:
        published = 0
        while True:
            while published < len(self._pending):
                done = await self._pending[published]
                published += 1
                self.archive.append(done)
                if self.on_translated is not None:
                    self.on_translated(done)
            if self._closed:
                return
            self._ready.clear()
            await self._ready.wait()

    async def close(self) -> list[TranslatedUnit]:
        """Wait for every submitted unit to be published; returns the archive."""
        self._closed = True
        self._ready.set()
        if self._publisher is not None:
            await self._publisher
        return self.archive
