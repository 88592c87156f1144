"""Recall's words in the language they were said in: stopwords and a stemmer per language.

English keeps heard's light suffix stripping (``bm25.light_stem``: tuned on LoCoMo). Other
languages with a Snowball stemmer (PyStemmer: Spanish, Russian, French, German and 30 more)
stem with it, and those below drop their own function words too. A text's language is the
one heard was told or detected from the audio (``Evidence.language``); when there is none,
``guess`` reads it from the text: the script (Cyrillic, Greek...) and, in the Latin script,
which language's function words it uses most. A text too short to tell is left to its
caller's fallback (the conversation's or the memory's language).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from functools import cache

from heard.memory.bm25 import light_stem
from heard.transcript.tokenize import ENGLISH_STOPWORDS, tokenize

__all__ = ["STOPWORDS", "analyze", "guess", "primary", "stemmer_for"]

_STOPWORD_TEXT = {
    "es": """
        a al algo algunos ante antes como con contra cual cuando de del desde donde durante
        e el ella ellas ellos en entre era es esa ese eso esta estaba estamos estan estar
        este esto estos fue fui ha había han hasta hay la las le les lo los me mi mis muy
        más nada ni no nos nosotros o os otra otro para pero poco por porque que quien qué
        se ser si sin sobre son su sus sí también te tengo tiene tu tú un una uno unos y ya
        yo él ese eso cómo dónde cuándo está están estoy fue sido sea soy eres
    """,
    "ru": """
        а без бы был была были было быть в вам вас весь во вот все всё вы где да даже для до
        его ее её если есть еще ещё же за и из или им их к как когда кто ли либо мне меня мы
        на над не него нее неё нет ни них но ну о об однако он она они оно от очень по под
        при с со так также такой там те тебя тем то того тоже той только том ты у уже хотя
        чего чей чем что чтобы чье чья эта эти это я мой моя мои твой наш ваш был это вот
    """,
    "fr": """
        au aux avec ce ces dans de des du elle en et eux il ils je la le les leur lui ma mais
        me même mes moi mon ne nos notre nous on ou par pas pour qu que qui sa se ses son sur
        ta te tes toi ton tu un une vos votre vous c d j l m n s t y été est suis es sont
        était ai as avons avez ont
    """,
    "de": """
        aber als am an auch auf aus bei bin bis bist da dann das dass dein deine dem den der
        des dich die dir doch du ein eine einem einen einer er es für hat hatte ich ihr im
        in ist ja kein mein mich mir mit nach nicht noch nur oder sehr sein sich sie sind so
        und uns unter vom von vor war waren was wie wir zu zum zur wo ob haben habe
    """,
    "it": """
        a ad al alla alle anche che chi ci come con da dal dalla dei del della delle di e
        ed era gli ha hai ho i il in io la le lei lo loro lui ma mi mia mio ne nei nel nella
        noi non o per perché più quando questa questo se si sono su sua suo ti tu un una
        uno voi è sei siamo
    """,
    "pt": """
        a ao aos as até com como da das de dela dele do dos e ela ele eles em entre era essa
        esse esta este eu foi há isso isto já lhe mais mas me meu minha muito na nas nem no
        nos não o os ou para pela pelo por que se sem seu sua são também te tem tu um uma
        você é está estou sou
    """,
}
STOPWORDS: dict[str, frozenset[str]] = {"en": ENGLISH_STOPWORDS} | {
    language: frozenset(text.split()) for language, text in _STOPWORD_TEXT.items()
}
"""Function words dropped from recall, per language (ISO 639-1)."""

_SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech",
    "da": "danish", "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian",
    "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian",
    "ne": "nepali", "no": "norwegian", "nn": "norwegian", "fa": "persian", "pl": "polish",
    "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish",
    "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip
"""ISO 639-1 codes of the languages PyStemmer has a Snowball stemmer for."""

_SCRIPTS = (
    (re.compile(r"[\u0400-\u04ff]"), "ru"),
    (re.compile(r"[\u0370-\u03ff]"), "el"),
    (re.compile(r"[\u0590-\u05ff]"), "he"),
    (re.compile(r"[\u0600-\u06ff]"), "ar"),
    (re.compile(r"[\u0900-\u097f]"), "hi"),
    (re.compile(r"[\u3040-\u30ff]"), "ja"),
    (re.compile(r"[\uac00-\ud7af]"), "ko"),
    (re.compile(r"[\u4e00-\u9fff]"), "zh"),
)
_LETTERS = (
    # letters one language of a script has and its neighbours lack
    ("ru", re.compile(r"[іїєґ]"), "uk"),
    ("ru", re.compile(r"[ђјљњћџ]"), "sr"),
    ("ar", re.compile(r"[پچژگ]"), "fa"),
    ("", re.compile(r"[ñ¿¡]"), "es"),
    ("", re.compile(r"[ãõ]"), "pt"),
    ("", re.compile(r"[ß]"), "de"),
)
_LATIN = ("en", "es", "fr", "de", "it", "pt")
_FUNCTION_WORDS: dict[str, tuple[str, ...]] = {}
for _language in _LATIN:
    for _word in STOPWORDS[_language]:
        _FUNCTION_WORDS[_word] = (*_FUNCTION_WORDS.get(_word, ()), _language)
MIN_FUNCTION_WORDS = 2
"""A Latin-script text is guessed only from at least this many function words."""


def guess(text: str) -> str:
    """The language ``text`` is in, as an ISO 639-1 code, or "" when it is too short to tell.

    >>> guess("¿Dónde trabaja Ana ahora que vive en Madrid?")
    'es'
    >>> guess("Где работает Анна?")
    'ru'
    >>> guess("Where does Ana work now?")
    'en'
    >>> guess("Hola")
    ''
    """
    if not text.isascii():
        letters = sum(ch.isalpha() for ch in text)
        if not letters:
            return ""
        folded = text.casefold()
        script = next(
            (
                language
                for pattern, language in _SCRIPTS
                if len(pattern.findall(text)) * 2 > letters
            ),
            "",
        )
        for within, pattern, language in _LETTERS:
            if within == script and pattern.search(folded):
                return language
        if script:
            return script
    found = [langs for word in tokenize(text) if (langs := _FUNCTION_WORDS.get(word))]
    if not found:
        return ""
    counts = Counter(language for langs in found for language in langs)
    (best, hits), *rest = [*counts.most_common(2), ("", 0)]
    if hits < MIN_FUNCTION_WORDS or hits == rest[0][1]:
        return ""
    return best


@cache
def stemmer_for(language: str) -> Callable[[str], str] | None:
    """The stemmer of ``language`` (English: heard's light stemmer), None without one."""
    if language == "en":
        return light_stem
    algorithm = _SNOWBALL.get(language)
    if algorithm is None:
        return None
    try:
        import Stemmer

        stem: Callable[[str], str] = Stemmer.Stemmer(algorithm).stemWord
    except (ImportError, KeyError):  # a broken or old PyStemmer only loses stemming
        return None
    return stem


def analyze(text: str, language: str) -> list[str]:
    """``text``'s recall tokens: without ``language``'s stopwords, stemmed in it. An unknown
    language ("", or one without a stemmer) is read as English was before languages counted:
    English stopwords, light stemming."""
    stem = stemmer_for(language)
    if stem is None:
        language, stem = "en", light_stem
    tokens = tokenize(text, stopwords=STOPWORDS.get(language, ()))
    return [stem(token) for token in tokens]


def primary(tag: str | None) -> str:
    """The language of a tag as heard is told it: "en-US" -> "en", "ES" -> "es", None -> ""."""
    return (tag or "").strip().lower().replace("_", "-").split("-")[0]
