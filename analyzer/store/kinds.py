"""The words the store keeps in its columns, one definition each.

>>> RunStatus.COMPLETE == "complete"
True
>>> VocabKind.PRODUCTION.trained
False
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """Where a run is: recorded as running first, then exactly one of the three ends."""

    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


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
    production tokenizer continued with merges over its ids (scope `extend:NAME`); a production
    tokenizer is measured, not trained (its scope is its name).
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


IMPORTED_SIZE = 0
"""The size an imported vocabulary is stored at: its real size is not known (a count-tokens
endpoint says how many tokens, not how many ids the tokenizer has)."""


class ReplacementTexts(StrEnum):
    """Which texts a vocabulary's per-merge replacement counts were taken on."""

    TRAINED = "trained"
    """The training texts, as each merge was learned (weights applied): who got the merge."""
    MEASURED = "measured"
    """The measured units, replayed: each language's token count after every merge."""
