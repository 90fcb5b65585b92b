"""A run's settings made concrete (`ResolvedRun`): what `resolution.resolve` returns and every
builder reads. Apart from the resolution, so that the builders' contract (`registry`) can name
it without importing what resolves it (which asks the registry)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from analyzer.bpe.pretokenize import NONE
from analyzer.settings import RunSettings
from analyzer.store import CorpusDetail

from .counting import SourcePlan


@dataclass(frozen=True)
class ResolvedRun:
    """Settings made concrete: the corpus, languages, pivot, sizes and the unit split."""

    corpus: CorpusDetail
    languages: list[str]
    pivot: str
    sizes: list[int]
    train_units: list[int]
    measured_units: list[int]
    settings: RunSettings
    pretokenizers: list[str] = field(default_factory=lambda: [NONE])
    """The pre-tokenizers' names, checked, without repeats, in the order given."""
    weights: dict[str, int] = field(default_factory=dict)
    """The training mix, with language codes normalised; only weights other than 1."""
    source: SourcePlan | None = None
    """With `train_on`: the sample of the training source every trained vocabulary learns
    from (the corpus is then measured, whole)."""
    joined_ids: list[str | None] | None = None
    """With `count` joined: each measured unit's id in its source, which groups the units
    into their splits for the join (`analyzer.corpus.joined`)."""
    made: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """What the builders made of the settings they own, by setting (`registry`: `check`), e.g.
    SuperBPE's transitions, sorted, under `superbpe`; the extension bases, loaded, under
    `extend`. Read-only: `resolve` gathers it before the run is made."""
    recorded: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """How the run's row records the builders' settings, resolved (read-only, as `made`)."""

    def recorded_settings(self) -> RunSettings:
        """The settings as the run's row records them: what they resolved to."""
        return dataclasses.replace(self.settings, corpus=self.corpus.name,
                                   languages=self.languages, pivot=self.pivot, sizes=self.sizes,
                                   pretokenizers=self.pretokenizers, weights=self.weights,
                                   **self.recorded)
