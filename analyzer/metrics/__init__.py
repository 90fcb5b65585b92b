"""Metrics of a run as pandas frames: premium, byte premium, bytes and characters per token,
fertility, per-unit spread, bootstrap confidence intervals and the Gini of premiums; vocabulary
allocation (utilisation, mean rank, Rényi efficiency, divergence between languages); and the
fairness views (who got the vocabulary, what parity costs, equal-cost sizes).

    data = load_run_data(db, run_id)
    frame = language_metrics(data)   # one row per (vocab, pretokenizer, size, lang)
    results = RunResults(data)       # every section of the run (SECTIONS), each computed once
    summaries(data)                  # cost, Gini and the frontier per configuration
    attribution(data)                # who got the vocabulary
    equal_cost_sizes(data)           # the size at which each language costs what the pivot does
    superbpe_effects(data)           # what SuperBPE's superwords do to each language
    extension_reach(data)            # the tokens added to a production tokenizer each language needs
    algorithm_premiums(data)         # each language under BPE, Unigram and WordPiece
"""

from .algorithms import algorithm_premiums, by_script
from .allocation import divergence_matrix
from .answer import premium_table, premium_text, takeaways
from .data import FairnessData, RunData, load_run_data
from .extension import WITHIN, extension_curves, extension_effects, extension_reach
from .fairness import (
    SUMMARY_COLUMNS,
    attribution,
    equal_cost_sizes,
    own_superbpe_effects,
    summaries,
    superbpe_effects,
    token_curve,
)
from .frames import (
    PREMIUM_ESTIMATOR,
    UNIT_ESTIMATOR,
    counting_convention,
    estimators,
    estimators_note,
    for_pretokenizer,
    headline_vocabulary,
    language_metrics,
    own_vocabulary,
    request_framing,
    special_tokens_counted,
    tokenizer_label,
    tokenizer_models,
    tokenizer_sizes,
    trained_language,
    unit_ratios,
)
from .frontier import configuration_name, pareto_frontier
from .sections import SECTIONS, Registered, RunResults, Section, View, Views
from .stats import gini, separates_words
from .verdicts import VERDICT_COLUMNS, Verdicts, verdicts

__all__ = [
    "VERDICT_COLUMNS",
    "Verdicts",
    "verdicts",
    "premium_table",
    "premium_text",
    "takeaways",
    "SECTIONS",
    "Registered",
    "View",
    "Views",
    "SUMMARY_COLUMNS",
    "WITHIN",
    "FairnessData",
    "RunData",
    "RunResults",
    "Section",
    "algorithm_premiums",
    "attribution",
    "by_script",
    "configuration_name",
    "counting_convention",
    "estimators",
    "estimators_note",
    "PREMIUM_ESTIMATOR",
    "UNIT_ESTIMATOR",
    "divergence_matrix",
    "equal_cost_sizes",
    "extension_curves",
    "extension_effects",
    "extension_reach",
    "for_pretokenizer",
    "gini",
    "headline_vocabulary",
    "language_metrics",
    "load_run_data",
    "own_superbpe_effects",
    "own_vocabulary",
    "trained_language",
    "pareto_frontier",
    "request_framing",
    "special_tokens_counted",
    "separates_words",
    "summaries",
    "superbpe_effects",
    "token_curve",
    "tokenizer_label",
    "tokenizer_models",
    "tokenizer_sizes",
    "unit_ratios",
]
