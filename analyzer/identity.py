"""What a vocabulary of a run is, as a type: its kind, and what else tells it apart (the language
it is trained on, SuperBPE's transition, the name of the tokenizer it measures or extends).

Every layer passes a `VocabularyId`; its `scope` is the one place the name a run gives the
vocabulary (what the database stores, what `--vocab` takes and every table shows) is written,
and `VocabularyId.parse` the one place it is read back.

>>> VocabularyId.superbpe(26214, "hin_Deva").scope
'superbpe@26214:hin_Deva'
>>> VocabularyId.parse("extend:o200k_base", "extension").name
'o200k_base'
>>> VocabKind.PRODUCTION.trained
False
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Algorithm(StrEnum):
    """How a vocabulary is trained: BPE by the analyzer's own engine, Unigram and WordPiece by
    Hugging Face `tokenizers` (`analyzer.external.library_trained`)."""

    BPE = "bpe"
    UNIGRAM = "unigram"
    WORDPIECE = "wordpiece"


class VocabKind(StrEnum):
    """What a vocabulary of a run is.

    A shared vocabulary is trained on every run language (its scope is `shared`), a language's
    own on that language alone (its scope is the language code), a parity-aware one on every
    language with parity-aware merges (scope `parity`), a SuperBPE one on every language in two
    stages (scope `superbpe@T`, T the size where the second stage starts), a language's own
    SuperBPE one on that language in two stages (scope `superbpe@T:LANG`); an extension is a
    production tokenizer continued with merges over its ids (scope `extend:NAME`); Unigram and
    WordPiece vocabularies are `unigram` and `wordpiece` (`unigram:LANG` a language's own); a
    production tokenizer is measured, not trained (its scope is its name), and so are counts
    imported from elsewhere.
    """

    SHARED = "shared"
    LANGUAGE = "language"
    PARITY = "parity"
    SUPERBPE = "superbpe"
    LANGUAGE_SUPERBPE = "language-superbpe"
    EXTENSION = "extension"
    UNIGRAM = "unigram"
    LANGUAGE_UNIGRAM = "language-unigram"
    WORDPIECE = "wordpiece"
    LANGUAGE_WORDPIECE = "language-wordpiece"
    PRODUCTION = "production"
    IMPORTED = "imported"

    @property
    def trained(self) -> bool:
        return not self.measured

    @property
    def measured(self) -> bool:
        """A real tokenizer's counts, not trained here: counted by its library in the run
        (production), or counted elsewhere and imported.

        >>> VocabKind.IMPORTED.measured, VocabKind.SHARED.measured
        (True, False)
        """
        return self in (VocabKind.PRODUCTION, VocabKind.IMPORTED)

    @property
    def trained_on_every_language(self) -> bool:
        """Trained on all the run's languages together (so it counts every language too)."""
        return self in (VocabKind.SHARED, VocabKind.PARITY, VocabKind.SUPERBPE,
                        VocabKind.UNIGRAM, VocabKind.WORDPIECE)

    @property
    def trained_on_one_language(self) -> bool:
        """A language's own (it counts that language and the pivot, or every one with cross)."""
        return self in (VocabKind.LANGUAGE, VocabKind.LANGUAGE_SUPERBPE,
                        VocabKind.LANGUAGE_UNIGRAM, VocabKind.LANGUAGE_WORDPIECE)

    @property
    def counts_every_language(self) -> bool:
        """Every language of the run is counted under one vocabulary of this kind, so its
        premiums are summarised (a Gini, a cost) across them: every kind but a language's own.

        >>> VocabKind.PRODUCTION.counts_every_language, VocabKind.LANGUAGE.counts_every_language
        (True, False)
        """
        return not self.trained_on_one_language

    @property
    def about(self) -> KindAbout:
        """How readers see this kind: its name in words, colour, whether it is shown at first
        (`KINDS`)."""
        return KINDS[self]

    @property
    def two_stages(self) -> bool:
        """SuperBPE's: past its transition it splits with SuperBPE's stage-2 pre-tokenizer."""
        return self in (VocabKind.SUPERBPE, VocabKind.LANGUAGE_SUPERBPE)

    @property
    def algorithm(self) -> Algorithm | None:
        """How it was trained (None: a production tokenizer, measured as it is).

        >>> VocabKind.LANGUAGE_UNIGRAM.algorithm, VocabKind.EXTENSION.algorithm
        (<Algorithm.UNIGRAM: 'unigram'>, <Algorithm.BPE: 'bpe'>)
        """
        if self.measured:
            return None
        if self in (VocabKind.UNIGRAM, VocabKind.LANGUAGE_UNIGRAM):
            return Algorithm.UNIGRAM
        if self in (VocabKind.WORDPIECE, VocabKind.LANGUAGE_WORDPIECE):
            return Algorithm.WORDPIECE
        return Algorithm.BPE

    @property
    def has_merges(self) -> bool:
        """Trained by the analyzer's BPE: merges stored, every size a prefix of the largest
        (Unigram and WordPiece store a model per size instead)."""
        return self.algorithm == Algorithm.BPE

    @staticmethod
    def trained_with(algorithm: Algorithm, one_language: bool) -> VocabKind:
        """The kind of a vocabulary of `algorithm` on every language or on one.

        >>> VocabKind.trained_with(Algorithm.WORDPIECE, one_language=True)
        <VocabKind.LANGUAGE_WORDPIECE: 'language-wordpiece'>
        """
        return {(Algorithm.BPE, False): VocabKind.SHARED, (Algorithm.BPE, True): VocabKind.LANGUAGE,
                (Algorithm.UNIGRAM, False): VocabKind.UNIGRAM,
                (Algorithm.UNIGRAM, True): VocabKind.LANGUAGE_UNIGRAM,
                (Algorithm.WORDPIECE, False): VocabKind.WORDPIECE,
                (Algorithm.WORDPIECE, True): VocabKind.LANGUAGE_WORDPIECE}[(algorithm, one_language)]


@dataclass(frozen=True)
class KindAbout:
    """What a reader is shown of a kind of vocabulary (the report, the pages, the terminal)."""

    label: str
    """The kind in words, for a legend or a heading."""
    color: str
    """Its colour in every chart that colours by kind."""
    shown_first: bool
    """Ticked at first where a reader picks vocabularies to compare (the playground)."""


NEUTRAL = "#bbbbbb"
"""The colour of what is measured, not trained (production tokenizers, imported counts)."""

KINDS: dict[VocabKind, KindAbout] = {
    VocabKind.SHARED: KindAbout("shared BPE", "#2b6cb0", shown_first=True),
    VocabKind.LANGUAGE: KindAbout("a language's own BPE", "#2f855a", shown_first=False),
    VocabKind.PARITY: KindAbout("parity-aware BPE", "#c05621", shown_first=True),
    VocabKind.SUPERBPE: KindAbout("SuperBPE", "#805ad5", shown_first=False),
    VocabKind.LANGUAGE_SUPERBPE: KindAbout("a language's own SuperBPE", "#6b46c1", shown_first=False),
    VocabKind.EXTENSION: KindAbout("extended production tokenizer", "#319795", shown_first=True),
    VocabKind.UNIGRAM: KindAbout("shared Unigram", "#d69e2e", shown_first=False),
    VocabKind.LANGUAGE_UNIGRAM: KindAbout("a language's own Unigram", "#b7791f", shown_first=False),
    VocabKind.WORDPIECE: KindAbout("shared WordPiece", "#38a169", shown_first=False),
    VocabKind.LANGUAGE_WORDPIECE: KindAbout("a language's own WordPiece", "#276749",
                                            shown_first=False),
    VocabKind.PRODUCTION: KindAbout("production tokenizer", NEUTRAL, shown_first=False),
    VocabKind.IMPORTED: KindAbout("imported counts", NEUTRAL, shown_first=False),
}
"""Every kind, as readers see it: one entry each (a test checks that every kind is here)."""

SUPERBPE_MARK = "superbpe@"
EXTENSION_MARK = "extend:"
LANGUAGE_MARK = ":"
"""How a scope writes SuperBPE's transition, an extension's base and a language's own."""
RESERVED = ":@"
"""Characters a name of the user's (imported counts) may not hold: the scopes above use them."""
BASE_PRETOKENIZER = "base"
"""An extension's stored pre-tokenizer: its base's own (its pattern is stored beside it)."""

SHARED_SCOPE = str(VocabKind.SHARED)
PARITY_SCOPE = str(VocabKind.PARITY)
"""The scopes of the shared and the parity-aware vocabulary (`VocabularyId.scope`), for
defaults and lookups: a scope is compared with a scope, never with a kind."""

_NAMED = (VocabKind.EXTENSION, VocabKind.PRODUCTION, VocabKind.IMPORTED)
_LIBRARY = {VocabKind.UNIGRAM: Algorithm.UNIGRAM, VocabKind.WORDPIECE: Algorithm.WORDPIECE,
            VocabKind.LANGUAGE_UNIGRAM: Algorithm.UNIGRAM,
            VocabKind.LANGUAGE_WORDPIECE: Algorithm.WORDPIECE}


@dataclass(frozen=True)
class VocabularyId:
    """A vocabulary of a run: its kind; the language a language's own is trained on; the size
    where a SuperBPE vocabulary's second stage starts; and the name of the tokenizer it extends
    (an extension) or measures (a production tokenizer, imported counts).

    >>> VocabularyId(VocabKind.LANGUAGE_UNIGRAM, language="hin_Deva").scope
    'unigram:hin_Deva'
    """

    kind: VocabKind
    language: str | None = None
    transition: int | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        kind = VocabKind(self.kind)
        object.__setattr__(self, "kind", kind)
        if kind.trained_on_one_language != (self.language is not None):
            raise ValueError(f"a {kind} vocabulary {'needs' if kind.trained_on_one_language else 'has no'} "
                             "language")
        if kind.two_stages != (self.transition is not None):
            raise ValueError(f"a {kind} vocabulary {'needs' if kind.two_stages else 'has no'} "
                             "transition")
        if (kind in _NAMED) != (self.name is not None):
            raise ValueError(f"a {kind} vocabulary {'needs' if kind in _NAMED else 'has no'} name")

    # The kinds, by what they are.

    @classmethod
    def shared(cls) -> VocabularyId:
        return cls(VocabKind.SHARED)

    @classmethod
    def parity(cls) -> VocabularyId:
        return cls(VocabKind.PARITY)

    @classmethod
    def own(cls, language: str) -> VocabularyId:
        """A language's own BPE vocabulary."""
        return cls(VocabKind.LANGUAGE, language=language)

    @classmethod
    def superbpe(cls, transition: int, language: str | None = None) -> VocabularyId:
        """SuperBPE on every language, or (`language`) a language's own."""
        kind = VocabKind.SUPERBPE if language is None else VocabKind.LANGUAGE_SUPERBPE
        return cls(kind, language=language, transition=transition)

    @classmethod
    def library(cls, algorithm: Algorithm, language: str | None = None) -> VocabularyId:
        """Unigram or WordPiece on every language, or (`language`) a language's own."""
        return cls(VocabKind.trained_with(algorithm, language is not None), language=language)

    @classmethod
    def extension(cls, base: str) -> VocabularyId:
        """A production tokenizer (`base`) extended with merges over its ids."""
        return cls(VocabKind.EXTENSION, name=base)

    @classmethod
    def production(cls, name: str) -> VocabularyId:
        return cls(VocabKind.PRODUCTION, name=name)

    @classmethod
    def imported(cls, name: str) -> VocabularyId:
        return cls(VocabKind.IMPORTED, name=name)

    @property
    def algorithm(self) -> Algorithm | None:
        return self.kind.algorithm

    @property
    def scope(self) -> str:
        """The vocabulary's name in its run (see `VocabKind`)."""
        kind = self.kind
        if kind in (VocabKind.SHARED, VocabKind.PARITY):
            return str(kind)
        if kind == VocabKind.LANGUAGE:
            assert self.language is not None
            return self.language
        if kind.two_stages:
            return f"{SUPERBPE_MARK}{self.transition}" + self._language_part()
        if kind in _LIBRARY:
            return str(_LIBRARY[kind]) + self._language_part()
        assert self.name is not None
        return f"{EXTENSION_MARK}{self.name}" if kind == VocabKind.EXTENSION else self.name

    def _language_part(self) -> str:
        return f"{LANGUAGE_MARK}{self.language}" if self.language is not None else ""

    @classmethod
    def parse(cls, scope: str, kind: VocabKind | str) -> VocabularyId:
        """The vocabulary a stored scope names, given its stored kind; ValueError when the
        scope is not one that kind writes.

        >>> found = VocabularyId.parse("superbpe@700:kor_Hang", "language-superbpe")
        >>> found.kind, found.language, found.transition
        (<VocabKind.LANGUAGE_SUPERBPE: 'language-superbpe'>, 'kor_Hang', 700)
        """
        kind = VocabKind(kind)
        found: VocabularyId | None = None
        if kind in (VocabKind.SHARED, VocabKind.PARITY):
            found = cls(kind)
        elif kind == VocabKind.LANGUAGE:
            found = cls(kind, language=scope)
        elif kind.two_stages and scope.startswith(SUPERBPE_MARK):
            transition, _, language = scope[len(SUPERBPE_MARK):].partition(LANGUAGE_MARK)
            if transition.isdigit() and bool(language) == (kind == VocabKind.LANGUAGE_SUPERBPE):
                found = cls(kind, language=language or None, transition=int(transition))
        elif kind in _LIBRARY:
            algorithm, _, language = scope.partition(LANGUAGE_MARK)
            if algorithm == _LIBRARY[kind]:
                found = cls(kind, language=language or None) if bool(language) == \
                    kind.trained_on_one_language else None
        elif kind == VocabKind.EXTENSION and scope.startswith(EXTENSION_MARK):
            found = cls(kind, name=scope[len(EXTENSION_MARK):])
        elif kind in (VocabKind.PRODUCTION, VocabKind.IMPORTED):
            found = cls(kind, name=scope)
        if found is None or found.scope != scope:
            raise ValueError(f"{scope!r} is not the scope of a {kind} vocabulary")
        return found


def reserved_scopes(languages: list[str] | tuple[str, ...]) -> set[str]:
    """The scopes a run's trained vocabularies may take, whatever it asks: a name of the user's
    (a tokenizer's file, imported counts) may be none of them.

    >>> sorted(reserved_scopes(["eng_Latn"]))
    ['eng_Latn', 'parity', 'shared', 'unigram', 'wordpiece']
    """
    return {SHARED_SCOPE, PARITY_SCOPE, *(VocabularyId.library(a).scope for a in Algorithm
                                          if a != Algorithm.BPE), *languages}

