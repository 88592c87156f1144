"""Caption release: when stable text goes out for display and translation."""

from heard.release.captions import TICK_MS, Captions
from heard.release.policy import (
    BARE_FINAL_WORDS,
    COMMA_UNIT_WORDS,
    DE_ESCALATE_MARKS,
    ESCALATE_AFTER_WORDS,
    ESCALATED_DWELL_MS,
    LIVE_DWELL_MS,
    MIN_UNIT_WORDS,
    PAUSE_MS,
    ends_clause,
    punctuated,
)
from heard.release.tracker import (
    RELEASE_MODES,
    SELECTABLE_MODES,
    ModeChange,
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
    "BARE_FINAL_WORDS",
    "COMMA_UNIT_WORDS",
    "DE_ESCALATE_MARKS",
    "ESCALATED_DWELL_MS",
    "ESCALATE_AFTER_WORDS",
    "LIVE_DWELL_MS",
    "MIN_UNIT_WORDS",
    "PAUSE_MS",
    "RELEASE_MODES",
    "SELECTABLE_MODES",
    "TICK_MS",
    "ArgosTranslator",
    "Captions",
    "IdentityTranslator",
    "LLMTranslator",
    "ModeChange",
    "ReleaseConfig",
    "ReleaseMode",
    "ReleaseReason",
    "ReleaseTracker",
    "ReleaseUnit",
    "TranslatedUnit",
    "TranslationQueue",
    "Translator",
    "ends_clause",
    "punctuated",
]
