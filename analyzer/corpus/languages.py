"""Language codes: everything becomes ISO 639-3 + ISO 15924 script, as FLORES writes them.

>>> normalise_language("en")
'eng_Latn'
>>> normalise_language("zh-Hant")
'zho_Hant'
>>> language_name("rus_Cyrl")
'Russian'
"""

from __future__ import annotations

import re
from functools import cache

import langcodes
from langcodes import Language

from .errors import CorpusError
from .files import quoted

_FLORES_CODE = re.compile(r"^[a-z]{3}_[A-Z][a-z]{3}$")
# Scripts that CLDR does not call the default but that are what people write (FLORES too).
_ALSO_USUAL = {("kor", "Hang")}


NO_SPACE_SCRIPTS = {"Hans", "Hant", "Hani", "Jpan", "Thai", "Khmr", "Laoo", "Mymr", "Tibt", "Bopo"}
"""Scripts written without spaces between words: fertility per word, and words split by
tokens, are not applicable to them (fertility is then per character)."""


def separates_words(lang: str) -> bool:
    """Whether whitespace marks word boundaries in this language's script.

    >>> separates_words("rus_Cyrl"), separates_words("tha_Thai")
    (True, False)
    """
    return lang.rsplit("_", 1)[-1] not in NO_SPACE_SCRIPTS


@cache
def normalise_language(code: str) -> str:
    """`eng_Latn` for `en`, `eng`, `en-US`, `EN_us` or `eng_Latn`; CorpusError if unknown.

    The script is the one given, or the language's usual one; a region is dropped.
    """
    cleaned = code.strip()
    if _FLORES_CODE.match(cleaned) and _is_known(cleaned[:3]):
        _check_script(code, cleaned[4:])
        return cleaned  # already in form; langcodes would rewrite some (tgl_Latn -> fil_Latn)
    try:
        language = Language.get(cleaned.replace("_", "-"))
        alpha3 = language.to_alpha3() if language.language else None
    except (LookupError, ValueError):
        alpha3 = None
    if not alpha3 or not _is_known(alpha3):
        raise CorpusError(f"unknown language code {quoted(code)}{_suggestion(cleaned)}")
    if language.script:
        _check_script(code, language.script)
    script = language.script or language.maximize().script
    if not script:
        raise CorpusError(f"language code {code!r} has no known script; write it as "
                          f"{alpha3}_Xxxx with an ISO 15924 script code")
    return f"{alpha3}_{script}"


def _check_script(code: str, script: str) -> None:
    """CorpusError for a script that is not an ISO 15924 code (Qwer), as for unknown languages."""
    if Language.get(f"und-{script}").script_name().startswith("Unknown Script ["):
        raise CorpusError(f"unknown script {script!r} in language code {code!r}: not an ISO 15924 "
                          "script code (e.g. Latn, Cyrl, Arab, Hans, Deva)")


def _is_known(alpha3: str) -> bool:
    return not Language.get(alpha3).display_name().startswith("Unknown language")


def _suggestion(code: str) -> str:
    """', did you mean eng_Latn?' when the code looks like a language's name."""
    try:
        found = langcodes.find(code.replace("_", " "))
        return f"; did you mean {normalise_language(str(found))}?"
    except (LookupError, ValueError, CorpusError):
        return ""


@cache
def language_name(code: str) -> str:
    """A human name for a normalised code: 'Russian', 'Chinese (Traditional)'.

    The script is named only when it is not the language's usual one.
    """
    if not _FLORES_CODE.match(code):
        return code
    alpha3, script = code.split("_")
    base = Language.get(alpha3)
    usual = base.maximize().script == script or (alpha3, script) in _ALSO_USUAL
    tag = alpha3 if usual else f"{alpha3}-{script}"
    return Language.get(tag).display_name().replace(" (individual language)", "")


_SCRIPT_NAMES = {"Hans": "Han (Simplified)", "Hant": "Han (Traditional)",
                 "Jpan": "Japanese (Han and Kana)", "Kore": "Korean (Hangul and Han)"}


def script_of(code: str) -> str:
    """The ISO 15924 script of a normalised code: 'hin_Deva' -> 'Deva'."""
    return code.rsplit("_", 1)[-1] if _FLORES_CODE.match(code) else code


def script_name(code: str) -> str:
    """The name of a code's script: 'Devanagari', 'Latin', 'Han (Simplified)'.

    >>> script_name("hin_Deva"), script_name("zho_Hant")
    ('Devanagari', 'Han (Traditional)')
    """
    script = script_of(code)
    if script in _SCRIPT_NAMES:
        return _SCRIPT_NAMES[script]
    try:
        return Language.get(f"und-{script}").script_name() or script
    except ValueError:
        return script
