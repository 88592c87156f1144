"""Caption release: when stable text goes out for display and translation (pure)."""

from heard.release.policy import (
    DE_ESCALATE_BOUNDARIES,
    ESCALATE_AFTER_MS,
    LIVE_DWELL_MS,
    MIN_UNIT_WORDS,
    PAUSE_MS,
    ends_clause,
)
from heard.release.tracker import (
    RELEASE_MODES,
    ReleaseConfig,
    ReleaseMode,
    ReleaseReason,
    ReleaseTracker,
    ReleaseUnit,
)
from heard.release.translation import (
    ArgosTranslator,
    IdentityTranslator,
    LLMTranslator,
    TranslatedUnit,
    TranslationQueue,
    Translator,
)

__all__ = [
    "DE_ESCALATE_BOUNDARIES",
    "ESCALATE_AFTER_MS",
    "LIVE_DWELL_MS",
    "MIN_UNIT_WORDS",
    "PAUSE_MS",
    "RELEASE_MODES",
    "ArgosTranslator",
    "IdentityTranslator",
    "LLMTranslator",
    "ReleaseConfig",
    "ReleaseMode",
    "ReleaseReason",
    "ReleaseTracker",
    "ReleaseUnit",
    "TranslatedUnit",
    "TranslationQueue",
    "Translator",
    "ends_clause",
]
