"""How a vocabulary is allocated to a language: which of its tokens the language uses, and how.

From the token histogram of a language's measured units under a vocabulary of a given size
(`{token id: occurrences}`), per (vocabulary, size, language):

- utilisation: distinct tokens used / vocabulary size (Limisiewicz et al. 2023, "Tokenization
  impacts multilingual language modeling: assessing vocabulary allocation and overlap across
  languages", Findings of ACL; their "characters per token" is our chars_per_token);
- mean rank: the occurrence-weighted mean of the tokens' ranks, a token's rank being its id, its
  place in the merge order (bytes 0-255 first; Limisiewicz et al. rank by frequency, which a
  greedy BPE's merge order follows); a low mean rank means a language lives on the earliest,
  most general merges;
- Rényi efficiency with alpha = 2.5 (Zouhar et al. 2023, "Tokenization and the noiseless
  channel", ACL): H_alpha(p) / log |V|, with H_alpha(p) = log(sum p_i^alpha) / (1 - alpha) and
  |V| the vocabulary size; 1 when every token is used equally often, lower when a few tokens
  carry the text;

and between two languages under the same vocabulary and size, the Jensen-Shannon divergence of
their token distributions (base 2, so from 0, the same distribution, to 1, disjoint tokens).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from analyzer.store import TokenHistogram

RENYI_ALPHA = 2.5


def _arrays(histogram: Mapping[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """A histogram's token ids and their occurrences, as int64 arrays in its own order (a
    stored one's, as it was read: no dict to walk)."""
    if isinstance(histogram, TokenHistogram):
        return histogram.ids, histogram.counts
    return (np.fromiter(histogram.keys(), dtype=np.int64, count=len(histogram)),
            np.fromiter(histogram.values(), dtype=np.int64, count=len(histogram)))


def _probabilities(histogram: Mapping[int, int]) -> np.ndarray:
    """The token distribution, in ascending order: what is summed of it is summed in an order
    that does not depend on the tokens' ids (a vocabulary that numbers the same pieces
    otherwise gives the same figures, to the last bit)."""
    counts = np.sort(_arrays(histogram)[1].astype(float))
    return counts / counts.sum()


def utilisation(histogram: Mapping[int, int], size: int) -> float:
    """Distinct tokens used / vocabulary size.

    >>> utilisation({97: 3, 300: 1}, 400)
    0.005
    """
    return int(np.count_nonzero(_arrays(histogram)[1])) / size


def mean_rank(histogram: Mapping[int, int]) -> float:
    """The occurrence-weighted mean of the tokens' ids (their place in the merge order).

    >>> mean_rank({97: 3, 301: 1})
    148.0
    """
    tokens, counts = _arrays(histogram)
    total = int(counts.sum())
    return int(tokens @ counts) / total if total else math.nan  # whole numbers: exact


def renyi_efficiency(histogram: Mapping[int, int], size: int, alpha: float = RENYI_ALPHA) -> float:
    """H_alpha(p) / log(size) (Zouhar et al. 2023); logs in any base cancel out.

    Four tokens used equally often, in a vocabulary of four: 1.0.
    >>> round(renyi_efficiency({1: 5, 2: 5, 3: 5, 4: 5}, 4), 6)
    1.0

    By hand: 0.9^2.5 + 0.1^2.5 = 0.768433 + 0.003162 = 0.771595; ln of that is -0.259298;
    over (1 - 2.5) that is 0.172865; over ln 4 = 1.386294 that is 0.1247.
    >>> round(renyi_efficiency({1: 9, 2: 1}, 4), 4)
    0.1247
    """
    if not histogram or size < 2:
        return math.nan
    p = _probabilities(histogram)
    entropy = math.log(float(np.sum(p ** alpha))) / (1 - alpha)
    return entropy / math.log(size)


def jensen_shannon(a: dict[int, int], b: dict[int, int]) -> float:
    """The Jensen-Shannon divergence of two token distributions, in bits (0 to 1): the
    readable definition `divergence_matrix` computes for all pairs at once (and is tested
    against).

    >>> jensen_shannon({1: 2, 2: 2}, {1: 5, 2: 5})
    0.0
    >>> jensen_shannon({1: 1}, {2: 1})
    1.0
    >>> round(jensen_shannon({1: 1, 2: 1}, {1: 1}), 4)  # M = (3/4, 1/4)
    0.3113
    """
    tokens = sorted(set(a) | set(b))
    total_a, total_b = sum(a.values()), sum(b.values())
    p = np.array([a.get(t, 0) / total_a for t in tokens])
    q = np.array([b.get(t, 0) / total_b for t in tokens])
    m = (p + q) / 2

    def kl(x: np.ndarray) -> float:
        used = x > 0
        return float(np.sum(x[used] * np.log2(x[used] / m[used])))

    return max(0.0, (kl(p) + kl(q)) / 2)


def allocation_frame(histograms: Mapping[tuple[str, str | None, int],
                                          Mapping[str, Mapping[int, int]]]) -> pd.DataFrame:
    """One row per (vocab, pretokenizer, size, lang): utilisation, mean_rank, renyi_efficiency."""
    rows = [{"vocab": vocab, "pretokenizer": pretokenizer, "size": size, "lang": lang,
             "utilisation": utilisation(histogram, size), "mean_rank": mean_rank(histogram),
             "renyi_efficiency": renyi_efficiency(histogram, size)}
            for (vocab, pretokenizer, size), by_lang in histograms.items()
            for lang, histogram in by_lang.items()]
    return pd.DataFrame(rows, columns=["vocab", "pretokenizer", "size", "lang", "utilisation",
                                       "mean_rank", "renyi_efficiency"])


def divergence_matrix(by_lang: Mapping[str, Mapping[int, int]], languages: list[str]
                      ) -> pd.DataFrame:
    """Jensen-Shannon divergence between every pair of languages (a symmetric frame, zero on
    the diagonal), in the given language order: `jensen_shannon` of each pair, computed for all
    pairs at once.

    With f(x) = -x log2 x, JS(p, q) = H(m) - (H(p) + H(q)) / 2, m = (p + q) / 2. Where p is 0,
    f(q / 2) = (f(q) + q) / 2, so the tokens language i does not use add up from q's entropy
    and total: each row needs only the columns of i's own tokens, a few hundred of thousands.

    >>> divergence_matrix({"a": {1: 1, 2: 1}, "b": {1: 1}, "c": {3: 4}}, ["a", "b", "c"]).round(4)
            a       b    c
    a  0.0000  0.3113  1.0
    b  0.3113  0.0000  1.0
    c  1.0000  1.0000  0.0
    """
    present = [lang for lang in languages if lang in by_lang]
    arrays = [_arrays(by_lang[lang]) for lang in present]
    tokens = np.unique(np.concatenate([ids for ids, _ in arrays] or [np.zeros(0, np.int64)]))
    p = np.zeros((len(present), len(tokens)))
    for row, (ids, counts) in enumerate(arrays):  # each token in its column, in id order
        weights = counts.astype(float)
        p[row, np.searchsorted(tokens, ids)] = weights / weights.sum()
    f = _bits(p)  # -p log2 p, each cell
    entropy = f.sum(axis=1)
    matrix = np.zeros((len(present), len(present)))
    for i in range(len(present)):
        used = np.flatnonzero(p[i])
        q = p[:, used]  # every language, on the tokens language i uses
        m = p[i, used] + q  # (in place from here: each step's result is the same float)
        m /= 2
        shared = _bits(m).sum(axis=1)
        fq = f[:, used]
        fq += q
        rest = (entropy + 1 - fq.sum(axis=1)) / 2  # where language i has none
        matrix[i] = shared + rest - (entropy[i] + entropy) / 2
    matrix = np.clip((matrix + matrix.T) / 2, 0.0, None)  # exact symmetry, no rounding below 0
    np.fill_diagonal(matrix, 0.0)
    return pd.DataFrame(matrix, index=present, columns=present)


def _bits(x: np.ndarray) -> np.ndarray:
    """-x log2 x, elementwise (0 where x is 0): computed where x is positive, in place of a
    gather and a scatter of those cells (three times faster, the same floats).

    >>> _bits(np.array([0.0, 0.5, 1.0])).tolist()
    [0.0, 0.5, -0.0]
    """
    positive = x > 0
    logs = np.log2(x, out=np.zeros_like(x), where=positive)
    return np.multiply(np.negative(x), logs, out=logs, where=positive)
