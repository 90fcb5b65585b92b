"""The field's terms, said plainly: a page's last section defines each, and the first use of a
term in a section's lead links to its definition there (offline: the page needs no site). The
docs' metrics reference (docs/reference/metrics.md) gives each with its source.

>>> linked("The Gini of premiums")
"The <a class='term' href='#term-gini'>Gini</a> of premiums"
"""

from __future__ import annotations

import re
from html import escape

TERMS: dict[str, str] = {
    "pivot": "The language every other is measured against (English, unless the run chose "
             "another): its premium is 1.00x.",
    "premium": "A language's tokens over the pivot's for the same content: 2.00x means it pays "
               "twice as many tokens (Petrov et al. 2023).",
    "ratio of totals": "The premium every face shows: a language's tokens summed over all the "
                       "measured units, over the pivot's (Petrov et al. 2023).",
    "mean of unit ratios": "The other estimator of the premium: each unit's tokens over the "
                           "pivot's for that unit, averaged over the units, so a short unit "
                           "weighs as much as a long one (as tokentax reports it).",
    "overhead": "The premium minus one, as a percentage: the extra tokens a language needs "
                "(+100% is twice as many).",
    "Gini": "How unevenly the premiums of all the languages are spread under one vocabulary: 0 "
            "when every language pays the same, towards 1 when one pays everything.",
    "parity-aware": "BPE where each merge goes to the language that compresses worst so far "
                    "(Foroutan et al. 2025), rather than to the most frequent pair overall.",
    "SuperBPE": "BPE that, past a transition size, may merge across the spaces between words, "
                "so frequent phrases become single tokens (Liu et al. 2025).",
    "equal-cost": "The smallest vocabulary at which a language's text takes no more tokens than "
                  "the pivot's at a reference size (Arnett et al. 2025).",
    "utilisation": "The share of a vocabulary's tokens a language uses at all (Limisiewicz et al. "
                   "2023).",
    "Rényi efficiency": "How evenly a language uses the tokens it uses: the Rényi entropy "
                        "(alpha 2.5) of its token distribution over the log of the vocabulary's "
                        "size (Zouhar et al. 2023).",
    "Jensen-Shannon divergence": "How differently two languages use a vocabulary: 0 bits when "
                                 "their token distributions are the same, 1 when they share no "
                                 "token.",
    "bootstrap": "An interval found by resampling the measured units (the same units in every "
                 "language) 1,000 times: the premium lies in it 95 times in 100.",
    "fertility": "Tokens per word, for languages that write words apart (Rust et al. 2021).",
    "pre-tokenizer": "The rule that cuts a text into chunks before merging: merges never cross "
                     "a chunk's edge.",
}
"""Each term and its definition, in words; the metrics reference has the formulas."""


def anchor(term: str) -> str:
    """A term's id on the page: `term-` and its letters.

    >>> anchor("Rényi efficiency")
    'term-renyi-efficiency'
    """
    plain = term.lower().replace("é", "e")
    return "term-" + re.sub(r"[^a-z0-9]+", "-", plain).strip("-")


def _used(term: str) -> re.Pattern[str]:
    """Where `term` is used in escaped HTML: as a word of its own, not inside another word,
    a tag or a code (`unit_premium` is no use of premium)."""
    return re.compile(rf"(?<![\w>-])({re.escape(escape(term))})(?![\w<-])", re.IGNORECASE)


def linked(text: str) -> str:
    """Escaped `text` with the first use of each term linked to its definition."""
    html = escape(text)
    for term in sorted(TERMS, key=len, reverse=True):  # the longest first
        html = _used(term).sub(rf"<a class='term' href='#{anchor(term)}'>\1</a>", html, count=1)
    return html


def glossary(page: str) -> str:
    """The page's section of terms: each that the rest of the `page` (its HTML) uses, defined
    where its links land; a term the page never uses is not defined (a run that trained
    nothing has no use for parity-aware or utilisation)."""
    items = "".join(f"<dt id='{anchor(term)}'>{escape(term)}</dt><dd>{escape(text)}</dd>"
                    for term, text in TERMS.items() if _used(term).search(page))
    return (f"<dl class='glossary'>{items}</dl><p class='muted'>The formulas and their sources: "
            "the metrics reference of the analyzer's documentation (docs/reference/metrics.md)."
            "</p>")
