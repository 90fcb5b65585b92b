"""A vocabulary's identity (`analyzer.identity`): every kind's scope is written and read back in
one place, and every kind has exactly one builder."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analyzer.identity import Algorithm, VocabKind, VocabularyId

LANGUAGES = st.sampled_from(["eng_Latn", "hin_Deva", "zho_Hans", "kor_Hang"])
NAMES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._+/-]{0,20}", fullmatch=True)
IDENTITIES = st.one_of(
    st.just(VocabularyId.shared()), st.just(VocabularyId.parity()),
    LANGUAGES.map(VocabularyId.own),
    st.builds(VocabularyId.superbpe, st.integers(256, 2**24), st.none() | LANGUAGES),
    st.builds(VocabularyId.library, st.sampled_from([Algorithm.UNIGRAM, Algorithm.WORDPIECE]),
              st.none() | LANGUAGES),
    NAMES.map(VocabularyId.extension), NAMES.map(VocabularyId.production),
    NAMES.map(VocabularyId.imported))


@given(IDENTITIES)
def test_a_scope_reads_back_as_the_identity_that_wrote_it(identity):
    assert VocabularyId.parse(identity.scope, identity.kind) == identity
    assert VocabularyId.parse(identity.scope, str(identity.kind)) == identity


def test_scopes_are_the_ones_stored_databases_hold():
    """The strings runs have always stored: existing databases read back unchanged."""
    assert [identity.scope for identity in (
        VocabularyId.shared(), VocabularyId.parity(), VocabularyId.own("hin_Deva"),
        VocabularyId.superbpe(26214), VocabularyId.superbpe(26214, "hin_Deva"),
        VocabularyId.library(Algorithm.UNIGRAM), VocabularyId.library(Algorithm.WORDPIECE, "hin_Deva"),
        VocabularyId.extension("o200k_base"), VocabularyId.production("cl100k_base"),
        VocabularyId.imported("claude-sonnet-4"))] == [
        "shared", "parity", "hin_Deva", "superbpe@26214", "superbpe@26214:hin_Deva", "unigram",
        "wordpiece:hin_Deva", "extend:o200k_base", "cl100k_base", "claude-sonnet-4"]


@pytest.mark.parametrize("scope, kind", [
    ("superbpe@x", "superbpe"), ("superbpe@700", "language-superbpe"), ("superbpe@700:eng_Latn", "superbpe"),
    ("unigram:eng_Latn", "unigram"), ("unigram", "language-unigram"), ("wordpiece", "unigram"),
    ("o200k_base", "extension"), ("parity", "shared"),
])
def test_a_scope_that_is_not_its_kind_s_is_refused(scope, kind):
    with pytest.raises(ValueError, match="is not the scope of"):
        VocabularyId.parse(scope, kind)


def test_an_identity_holds_what_its_kind_needs():
    with pytest.raises(ValueError, match="needs language"):
        VocabularyId(VocabKind.LANGUAGE)
    with pytest.raises(ValueError, match="has no transition"):
        VocabularyId(VocabKind.SHARED, transition=300)
    with pytest.raises(ValueError, match="needs name"):
        VocabularyId(VocabKind.EXTENSION)


def test_every_kind_has_one_builder():
    from analyzer.runs.registry import BUILDERS, kinds_built

    kinds = [kind for builder in BUILDERS for kind in builder.KINDS]
    assert sorted(kinds) == sorted(VocabKind) and kinds_built() == set(VocabKind)


def test_every_kind_is_known_to_readers():
    """Issue 53: one table says how readers see each kind; a kind left out of it would drop
    from a legend or a colour."""
    from analyzer.identity import KINDS, VocabKind

    assert set(KINDS) == set(VocabKind)
    assert len({about.label for about in KINDS.values()}) == len(KINDS)


def test_no_scope_is_taken_apart_or_compared_with_a_kind_outside_identity():
    """Issue 53: a scope is read by `VocabularyId.parse` only, and compared with scopes
    (SHARED_SCOPE, ...), never with a kind's value."""
    import re
    from pathlib import Path

    import analyzer

    root = Path(analyzer.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        if path.name == "identity.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"(scope|vocab)\w*\.(r?split|r?partition)\(|str\(VocabKind\.|"
                         r"VocabKind\.\w+\.value|(scope|vocab)\w* [!=]= VocabKind\.", line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_no_face_names_a_kind_outside_identity_and_the_builders():
    """Issue 70: a face asks a kind for a trait (`kind.extends`, `kind.production`,
    `Role.BASELINE.kind`, ...), never compares it with a kind it names, so a plug-in's kind with
    that trait is treated as the built-in one is. Only `identity.py` and the builders name kinds."""
    import re
    from pathlib import Path

    import analyzer

    root = Path(analyzer.__file__).parent
    found = [f"{path.relative_to(root)}:{number}: {line.strip()}"
             for path in root.rglob("*.py")
             if path.name != "identity.py" and "builders" not in path.parts
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"VocabKind\.[A-Z]", line)]
    assert not found, "\n".join(found)


def test_every_table_keyed_by_kind_or_algorithm_covers_every_registered_one():
    """Issue 70: the lists of kinds and algorithms are derived from the registry, each role is
    played by one kind, and every algorithm has its plain kind on every language and on one."""
    from analyzer.identity import KINDS, Role
    from analyzer.metrics.frames import measured_kinds
    from analyzer.report.algorithms import ALGORITHM_COLORS
    from analyzer.runs.registry import kinds_built
    from analyzer.settings import ALGORITHMS

    assert set(KINDS) == set(VocabKind) == kinds_built()
    assert measured_kinds() == [kind for kind in VocabKind if kind.algorithm is None]
    assert set(ALGORITHM_COLORS) == set(ALGORITHMS) == {str(a) for a in Algorithm}
    assert ALGORITHMS[0] == Algorithm.BPE == Role.BASELINE.kind.algorithm  # the default
    for role in Role:
        assert [kind for kind in VocabKind if kind.role == role] == [role.kind]
    for algorithm in Algorithm:
        for one_language in (False, True):
            kind = VocabKind.trained_with(algorithm, one_language)
            assert kind.algorithm == algorithm and kind.trained_on_one_language == one_language
            assert ALGORITHM_COLORS[algorithm] == VocabKind.trained_with(algorithm, False).about.color
    assert {kind.production for kind in VocabKind if kind.measured} == {True, False}
    assert all(kind.measured for kind in VocabKind if kind.production or kind.imported)


@pytest.fixture
def grafted():
    """A plug-in's kind with the extension's trait and one with the import's: what faces ask
    of the built-in ones, they ask of these."""
    from analyzer.identity import KindAbout, KindSpec

    kinds = [VocabKind.register(KindSpec("grafted", KindAbout("grafted", "#123456", False),
                                         Algorithm.BPE, word="graft", named=True, extends=True)),
             VocabKind.register(KindSpec("borrowed", KindAbout("borrowed", "#654321", False),
                                         None, word="borrowed", named=True, imported=True))]
    try:
        yield kinds
    finally:
        for kind in kinds:
            kind.unregister()


def test_a_plug_in_kind_with_a_trait_is_treated_as_the_built_in_one_with_it(grafted):
    from analyzer.metrics import configuration_name
    from analyzer.metrics.answer import column_label

    extension, imported = grafted
    assert extension.extends and not extension.production and extension.named
    assert imported.imported and imported.measured and not imported.production
    row = {"kind": str(extension), "vocab": "graft:o200k_base", "pretokenizer": "base",
           "size": 200_300, "added": 281}
    assert configuration_name(row) == "graft:o200k_base +281"
    assert configuration_name({**row, "kind": str(imported), "vocab": "borrowed:x"}) == \
        "borrowed:x (imported)"
    assert column_label("graft:o200k_base", extension, "base", 200_300, several_rules=True) == \
        "graft:o200k_base"


def test_a_role_or_a_plain_kind_taken_is_refused():
    from analyzer.identity import KindAbout, KindSpec, Role

    about = KindAbout("another", "#111111", False)
    with pytest.raises(ValueError, match="the baseline role is shared's already"):
        VocabKind.register(KindSpec("another", about, Algorithm.BPE, word="another",
                                    every_language=True, role=Role.BASELINE))
    with pytest.raises(ValueError, match="plain kind already"):
        VocabKind.register(KindSpec("another", about, Algorithm.UNIGRAM, word="another",
                                    every_language=True, plain=True))
    with pytest.raises(ValueError, match="an extension is trained and named by its base"):
        KindSpec("another", about, None, word="another", named=True, extends=True)
    assert "another" not in {str(kind) for kind in VocabKind}
