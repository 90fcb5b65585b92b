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

import contextlib
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, ClassVar

from pydantic import AfterValidator


class Role(StrEnum):
    """A part one kind plays in what the faces compare; at most one registered kind plays each
    (`KindSpec.role`), so a face asks for the role, never for a kind by name."""

    BASELINE = "baseline"
    """The vocabulary every other trained one is compared with (BPE on every language): the
    parity, algorithm and allocation comparisons, the split-rule chart."""
    OWN = "own"
    """A language's own counterpart of the baseline: what a language would cost on a vocabulary
    of its own (the allocation and cross-language views)."""
    PARITY = "parity"
    """Trained to even the languages' costs out: compared with the baseline at each size."""

    @property
    def kind(self) -> VocabKind:
        """The registered kind that plays this role (a built-in kind plays each, and built-in
        kinds are never unregistered).

        >>> Role.OWN.kind
        <VocabKind.LANGUAGE: 'language'>
        """
        return next(kind for kind in VocabKind if kind.spec.role == self)


class Algorithm(StrEnum):
    """How a vocabulary is trained: BPE by the analyzer's own engine, Unigram and WordPiece by
    Hugging Face `tokenizers` (`analyzer.external.library_trained`).

    It is the form of a kind's records, which every face reads them by (BPE's merges, every
    size a prefix of the largest; the others' model per size), not who trained them: a
    plug-in's kind trained by its own builder that stores merges is BPE (the how-to's,
    `docs/how-to/plugin/`). So the list is closed: a new algorithm is a new form to read."""

    BPE = "bpe"
    UNIGRAM = "unigram"
    WORDPIECE = "wordpiece"


TRANSITION_MARK = "@"
LANGUAGE_MARK = ":"
"""How a scope writes SuperBPE's transition, and a language's own or a tokenizer's name after
a kind's word (`KindSpec`)."""
RESERVED = ":@"
"""Characters a name of the user's (imported counts) may not hold: the scopes above use them."""
BASE_PRETOKENIZER = "base"
"""An extension's stored pre-tokenizer: its base's own (its pattern is stored beside it)."""


@dataclass(frozen=True)
class KindAbout:
    """What a reader is shown of a kind of vocabulary (the report, the pages, the terminal)."""

    label: str
    """The kind in words, for a legend or a heading."""
    color: str
    """Its colour in every chart that colours by kind."""
    shown_first: bool
    """Ticked at first where a reader picks vocabularies to compare (the playground)."""


@dataclass(frozen=True)
class KindSpec:
    """Everything the analyzer knows of a kind of vocabulary, in one place: how it is trained,
    what it is trained on, how its scope is written, and how readers see it. Registering one
    (`VocabKind.register`) is what makes a kind; its builder (`analyzer.runs.builders`) builds
    it.

    A scope is written from the spec: the kind's `word` (if any); `@T` for a transition; then
    `:NAME` or `:LANG` (with no word, the name or the language alone). So SuperBPE's word
    `superbpe` gives `superbpe@700:kor_Hang`, and a language's own BPE (no word) `kor_Hang`.
    """

    name: str
    """What the store keeps and every document shows (`language-superbpe`)."""
    about: KindAbout
    algorithm: Algorithm | None
    """How it is trained (its records' form: BPE stores merges, the others a model per size);
    None for what is measured, not trained."""
    word: str | None = None
    """The word its scope starts with (`shared`, `superbpe`, `extend`)."""
    one_language: bool = False
    """A language's own: trained on one language (its scope names it)."""
    every_language: bool = False
    """Trained on all the run's languages together."""
    two_stages: bool = False
    """SuperBPE's: past its transition it splits with SuperBPE's stage-2 pre-tokenizer."""
    named: bool = False
    """Named by a tokenizer: the one it extends or measures."""
    extends: bool = False
    """Continues a production tokenizer (its base, which names it) with merges of its own: cut
    by its base's pre-tokenizer, its size the base's plus what it added."""
    imported: bool = False
    """Measured elsewhere and imported as counts: no library, no size, nothing to load."""
    role: Role | None = None
    """The part it plays where faces compare kinds (`Role`); None for most."""
    plain: bool = False
    """Its algorithm's plain kind: what `--algorithms` trains on every language (or, one
    language's, with `--per-language`), with no design option on top; one per (algorithm, one
    language or every one)."""

    def __post_init__(self) -> None:
        if self.extends and not (self.named and self.algorithm is not None):
            raise ValueError(f"kind {self.name}: an extension is trained and named by its base")
        if self.imported and not (self.named and self.algorithm is None):
            raise ValueError(f"kind {self.name}: imported counts are measured and named")
        if self.plain and (self.algorithm is None or self.two_stages or self.role == Role.PARITY
                           or not (self.one_language or self.every_language)):
            raise ValueError(f"kind {self.name}: a plain kind is trained on one language or "
                             "every one, in one stage, by its algorithm alone")
        if self.named and (self.one_language or self.two_stages):
            raise ValueError(f"kind {self.name}: a named kind has no language or transition")
        if self.one_language and self.every_language:
            raise ValueError(f"kind {self.name}: trained on one language or on every one")
        if not self.word and not (self.named or self.one_language):
            raise ValueError(f"kind {self.name}: its scope needs a word")
        if not _NAME.match(self.name):
            raise ValueError(f"kind {self.name!r}: a kind's name is lower-case letters, digits "
                             "and hyphens, starting with a letter (e.g. pivot-only)")
        if self.word is not None and not _NAME.match(self.word):
            raise ValueError(f"kind {self.name}: its scope's word {self.word!r} must be "
                             "lower-case letters, digits and hyphens (so it is never a language "
                             f"code, and holds none of {RESERVED!r})")
        if not _COLOR.match(self.about.color):
            raise ValueError(f"kind {self.name}: its colour {self.about.color!r} is not #rrggbb")


_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")
_COLOR = re.compile(r"#[0-9a-fA-F]{6}\Z")


class _Registry(type):
    """VocabKind's metaclass: the class iterates over the registered kinds, as an enum does."""

    def __iter__(cls) -> Iterator[VocabKind]:
        return iter(list(_SPECS_BY_KIND))

    def __len__(cls) -> int:
        return len(_SPECS_BY_KIND)


class VocabKind(str, metaclass=_Registry):
    """What a vocabulary of a run is: a registered kind (`register`), equal to its name.

    A shared vocabulary is trained on every run language (its scope is `shared`), a language's
    own on that language alone (its scope is the language code), a parity-aware one on every
    language with parity-aware merges (scope `parity`), a SuperBPE one on every language in two
    stages (scope `superbpe@T`, T the size where the second stage starts), a language's own
    SuperBPE one on that language in two stages (scope `superbpe@T:LANG`); an extension is a
    production tokenizer continued with merges over its ids (scope `extend:NAME`); Unigram and
    WordPiece vocabularies are `unigram` and `wordpiece` (`unigram:LANG` a language's own); a
    production tokenizer is measured, not trained (its scope is its name), and so are counts
    imported from elsewhere. A plug-in registers a kind of its own (`register`) beside them.

    >>> VocabKind("parity") is VocabKind.PARITY, VocabKind.PARITY == "parity"
    (True, True)
    """

    __slots__ = ()

    SHARED: ClassVar[VocabKind]
    LANGUAGE: ClassVar[VocabKind]
    PARITY: ClassVar[VocabKind]
    SUPERBPE: ClassVar[VocabKind]
    LANGUAGE_SUPERBPE: ClassVar[VocabKind]
    EXTENSION: ClassVar[VocabKind]
    UNIGRAM: ClassVar[VocabKind]
    LANGUAGE_UNIGRAM: ClassVar[VocabKind]
    WORDPIECE: ClassVar[VocabKind]
    LANGUAGE_WORDPIECE: ClassVar[VocabKind]
    PRODUCTION: ClassVar[VocabKind]
    IMPORTED: ClassVar[VocabKind]

    def __new__(cls, value: str) -> VocabKind:
        """The registered kind named `value`; ValueError when no kind is."""
        found = _KIND_BY_NAME.get(str(value))
        if found is None and load_plugins():  # a stored kind of a plug-in not yet imported
            found = _KIND_BY_NAME.get(str(value))
        if found is None:
            broken = "".join(f"; {error}" for error in PLUGIN_ERRORS)
            raise ValueError(f"{value!r} is not a kind of vocabulary (the kinds: "
                             f"{', '.join(_KIND_BY_NAME)}){broken}")
        return found

    @classmethod
    def register(cls, spec: KindSpec) -> VocabKind:
        """Make `spec` a kind: returned, found by `VocabKind(name)` and in `for kind in
        VocabKind` from now on. A name or a scope word already taken is refused; registering
        the same spec again returns its kind (a plug-in imported twice)."""
        existing = _KIND_BY_NAME.get(spec.name)
        if existing is not None:
            if existing.spec == spec:
                return existing
            raise ValueError(f"a kind named {spec.name!r} is already registered")
        if not spec.word and _BUILT_IN_DONE:
            raise ValueError(f"kind {spec.name}: a plug-in's kind needs a word of its own to "
                             "start its scopes (only the built-in kinds have none: a language's "
                             "own is named by its language, a tokenizer by its name)")
        # A scope is the word, then @T for a transition, then :NAME or :LANG: two kinds may
        # share a word only where that shape tells them apart.
        shape = (spec.word, spec.two_stages, spec.one_language or spec.named)
        if spec.word and any((s.word, s.two_stages, s.one_language or s.named) == shape
                             for s in _SPECS_BY_KIND.values()):
            raise ValueError(f"kind {spec.name}: its scopes would be another kind's "
                             f"(word {spec.word!r})")
        plain = spec.plain and next(
            (k for k, s in _SPECS_BY_KIND.items() if s.plain and s.algorithm == spec.algorithm
             and s.one_language == spec.one_language), None)
        if plain:
            raise ValueError(f"kind {spec.name}: {plain} is {spec.algorithm}'s plain kind already")
        holder = spec.role and next((k for k, s in _SPECS_BY_KIND.items() if s.role == spec.role),
                                    None)
        if holder:
            raise ValueError(f"kind {spec.name}: the {spec.role} role is {holder}'s already")
        kind = str.__new__(cls, spec.name)
        _KIND_BY_NAME[spec.name] = kind
        _SPECS_BY_KIND[kind] = spec
        return kind

    def unregister(self) -> None:
        """Forget a kind a plug-in (or a test) registered; the built-in kinds stay."""
        if self in _BUILT_IN:
            raise ValueError(f"{self} is built in")
        del _KIND_BY_NAME[str(self)], _SPECS_BY_KIND[self]

    def __reduce__(self):
        # Sent to another process by name: it is the kind registered there under that name.
        return (VocabKind, (str(self),))

    def __repr__(self) -> str:
        return f"<VocabKind.{self.replace('-', '_').upper()}: {str(self)!r}>"

    def __str__(self) -> str:
        return str.__str__(self)

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        """A read model's `kind` field: a string, read back as its registered kind."""
        return handler.generate_schema(Annotated[str, AfterValidator(cls)])

    @property
    def spec(self) -> KindSpec:
        return _SPECS_BY_KIND[self]

    @property
    def value(self) -> str:
        return str(self)

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
        return self.spec.algorithm is None

    @property
    def extends(self) -> bool:
        """Continues a production tokenizer with merges of its own (`KindSpec.extends`).

        >>> VocabKind.EXTENSION.extends, VocabKind.PRODUCTION.extends
        (True, False)
        """
        return self.spec.extends

    @property
    def imported(self) -> bool:
        """Counts measured elsewhere and imported (`KindSpec.imported`)."""
        return self.spec.imported

    @property
    def production(self) -> bool:
        """A real tokenizer counted by its own library in the run: measured, not imported.

        >>> VocabKind.PRODUCTION.production, VocabKind.IMPORTED.production
        (True, False)
        """
        return self.measured and not self.imported

    @property
    def named(self) -> bool:
        """Named by a tokenizer (the one it measures or extends), not by a size: shown by its
        name alone."""
        return self.spec.named

    @property
    def role(self) -> Role | None:
        """The part it plays where faces compare kinds (`Role`)."""
        return self.spec.role

    @property
    def trained_on_every_language(self) -> bool:
        """Trained on all the run's languages together (so it counts every language too)."""
        return self.spec.every_language

    @property
    def trained_on_one_language(self) -> bool:
        """A language's own (it counts that language and the pivot, or every one with cross)."""
        return self.spec.one_language

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
        """How readers see this kind: its name in words, colour, whether it is shown at first."""
        return self.spec.about

    @property
    def two_stages(self) -> bool:
        """SuperBPE's: past its transition it splits with SuperBPE's stage-2 pre-tokenizer."""
        return self.spec.two_stages

    @property
    def algorithm(self) -> Algorithm | None:
        """How it was trained (None: a production tokenizer, measured as it is).

        >>> VocabKind.LANGUAGE_UNIGRAM.algorithm, VocabKind.EXTENSION.algorithm
        (<Algorithm.UNIGRAM: 'unigram'>, <Algorithm.BPE: 'bpe'>)
        """
        return self.spec.algorithm

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
        return next(kind for kind in VocabKind if kind.spec.plain and kind.algorithm == algorithm
                    and kind.spec.one_language == one_language)


_KIND_BY_NAME: dict[str, VocabKind] = {}
_SPECS_BY_KIND: dict[VocabKind, KindSpec] = {}
_PLUGINS_LOADED: list[bool] = []
_BUILT_IN_DONE = False
PLUGIN_ERRORS: list[str] = []
"""The plug-ins that could not be loaded, each with why (a kind they register is then unknown,
and said so where it is asked for)."""


PLUGIN_GROUP = "analyzer.kinds"
"""The entry point group under which an installed package declares a kind of vocabulary: the
module it names registers the kind (`VocabKind.register`) and its builder
(`analyzer.runs.registry.register`) when it is imported."""


def load_plugins() -> bool:
    """Import the installed plug-ins (`PLUGIN_GROUP`), once per process; whether this call
    loaded them. Called when a run starts (`analyzer.runs.execute_run`), where a face lists a
    run's sections or its views of them (`analyzer.metrics.Registered`), and where a kind is
    looked up by a name no kind has yet (a stored run of a plug-in's kind, a Dask worker given
    its job). Never while the analyzer's own modules are being imported: a plug-in imports the
    layers it registers into (a report view imports the report)."""
    if _PLUGINS_LOADED:
        return False
    _PLUGINS_LOADED.append(True)
    from importlib.metadata import entry_points

    for entry in entry_points(group=PLUGIN_GROUP):
        try:
            entry.load()
        except Exception as error:  # one broken plug-in leaves the analyzer and the others working
            PLUGIN_ERRORS.append(f"the plug-in {entry.name} ({entry.value}) could not be "
                                 f"loaded: {type(error).__name__}: {error}")
            warnings.warn(PLUGIN_ERRORS[-1], PluginWarning, stacklevel=2)
    return True


class PluginWarning(UserWarning):
    """A plug-in of `PLUGIN_GROUP` that could not be loaded."""

NEUTRAL = "#bbbbbb"
"""The colour of what is measured, not trained (production tokenizers, imported counts)."""


def _built_in(member: str, spec: KindSpec) -> VocabKind:
    kind = VocabKind.register(spec)
    setattr(VocabKind, member, kind)
    return kind


_BPE, _UNIGRAM, _WORDPIECE = Algorithm.BPE, Algorithm.UNIGRAM, Algorithm.WORDPIECE
_BUILT_IN = (
    _built_in("SHARED", KindSpec("shared", KindAbout("shared BPE", "#2b6cb0", True), _BPE,
                                 word="shared", every_language=True, role=Role.BASELINE,
                                 plain=True)),
    _built_in("LANGUAGE", KindSpec("language", KindAbout("a language's own BPE", "#2f855a", False),
                                   _BPE, one_language=True, role=Role.OWN, plain=True)),
    _built_in("PARITY", KindSpec("parity", KindAbout("parity-aware BPE", "#c05621", True), _BPE,
                                 word="parity", every_language=True, role=Role.PARITY)),
    _built_in("SUPERBPE", KindSpec("superbpe", KindAbout("SuperBPE", "#805ad5", False), _BPE,
                                   word="superbpe", every_language=True, two_stages=True)),
    _built_in("LANGUAGE_SUPERBPE", KindSpec(
        "language-superbpe", KindAbout("a language's own SuperBPE", "#6b46c1", False), _BPE,
        word="superbpe", one_language=True, two_stages=True)),
    _built_in("EXTENSION", KindSpec(
        "extension", KindAbout("extended production tokenizer", "#319795", True), _BPE,
        word="extend", named=True, extends=True)),
    _built_in("UNIGRAM", KindSpec("unigram", KindAbout("shared Unigram", "#d69e2e", False),
                                  _UNIGRAM, word="unigram", every_language=True, plain=True)),
    _built_in("LANGUAGE_UNIGRAM", KindSpec(
        "language-unigram", KindAbout("a language's own Unigram", "#b7791f", False), _UNIGRAM,
        word="unigram", one_language=True, plain=True)),
    _built_in("WORDPIECE", KindSpec("wordpiece", KindAbout("shared WordPiece", "#38a169", False),
                                    _WORDPIECE, word="wordpiece", every_language=True,
                                    plain=True)),
    _built_in("LANGUAGE_WORDPIECE", KindSpec(
        "language-wordpiece", KindAbout("a language's own WordPiece", "#276749", False),
        _WORDPIECE, word="wordpiece", one_language=True, plain=True)),
    _built_in("PRODUCTION", KindSpec("production", KindAbout("production tokenizer", NEUTRAL,
                                                             False), None, named=True)),
    _built_in("IMPORTED", KindSpec("imported", KindAbout("imported counts", NEUTRAL, False), None,
                                   named=True, imported=True)),
)


_BUILT_IN_DONE = True


class _Abouts(Mapping):
    """`KINDS`: every registered kind, as readers see it (`KindAbout`)."""

    def __getitem__(self, kind: str) -> KindAbout:
        return VocabKind(kind).about

    def __iter__(self) -> Iterator[VocabKind]:
        return iter(VocabKind)

    def __len__(self) -> int:
        return len(VocabKind)


KINDS: Mapping[VocabKind, KindAbout] = _Abouts()
"""Every kind, as readers see it: one entry each, the plug-ins' too."""

SHARED_SCOPE = str(VocabKind.SHARED)
PARITY_SCOPE = str(VocabKind.PARITY)
"""The scopes of the shared and the parity-aware vocabulary (`VocabularyId.scope`), for
defaults and lookups: a scope is compared with a scope, never with a kind."""

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
        spec = kind.spec
        for what, needed, value in (("language", spec.one_language, self.language),
                                    ("transition", spec.two_stages, self.transition),
                                    ("name", spec.named, self.name)):
            if needed != (value is not None):
                raise ValueError(f"a {kind} vocabulary {'needs' if needed else 'has no'} {what}")
        if self.transition is not None and (isinstance(self.transition, bool) or not
                                            isinstance(self.transition, int) or self.transition < 1):
            raise ValueError(f"a transition is a size, not {self.transition!r}")

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
        """The vocabulary's name in its run, written from its kind's spec (`KindSpec`)."""
        text = self.kind.spec.word or ""
        if self.transition is not None:
            text += f"{TRANSITION_MARK}{self.transition}"
        for part in (self.name, self.language):
            if part is not None:
                text = f"{text}{LANGUAGE_MARK}{part}" if text else part
        return text

    @classmethod
    def parse(cls, scope: str, kind: VocabKind | str) -> VocabularyId:
        """The vocabulary a stored scope names, given its stored kind; ValueError when the
        scope is not one that kind writes.

        >>> found = VocabularyId.parse("superbpe@700:kor_Hang", "language-superbpe")
        >>> found.kind, found.language, found.transition
        (<VocabKind.LANGUAGE_SUPERBPE: 'language-superbpe'>, 'kor_Hang', 700)
        """
        kind = VocabKind(kind)
        spec = kind.spec
        found: VocabularyId | None = None
        rest = scope
        if spec.word:
            word, rest = rest[:len(spec.word)], rest[len(spec.word):]
            rest = rest if word == spec.word else "\0"
        transition = None
        if spec.two_stages and rest.startswith(TRANSITION_MARK):
            digits, mark, after = rest[len(TRANSITION_MARK):].partition(LANGUAGE_MARK)
            transition = int(digits) if digits.isascii() and digits.isdigit() else None
            rest = mark + after
        if spec.word and (spec.named or spec.one_language):
            rest = rest[len(LANGUAGE_MARK):] if rest.startswith(LANGUAGE_MARK) else "\0"
        with contextlib.suppress(ValueError):
            found = cls(kind, language=rest if spec.one_language else None,
                        transition=transition, name=rest if spec.named else None)
        if found is None or found.scope != scope:
            raise ValueError(f"{scope!r} is not the scope of a {kind} vocabulary")
        return found


def reserved_scopes(languages: list[str] | tuple[str, ...]) -> set[str]:
    """The scopes a run's trained vocabularies may take, whatever it asks: a name of the user's
    (a tokenizer's file, imported counts) may be none of them.

    >>> sorted(reserved_scopes(["eng_Latn"]))
    ['eng_Latn', 'parity', 'shared', 'unigram', 'wordpiece']
    """
    return {VocabularyId(kind).scope for kind in VocabKind
            if not (kind.spec.one_language or kind.spec.two_stages or kind.spec.named)} \
        | set(languages)

