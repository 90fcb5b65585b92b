"""The pure-Python engine behind the contract both engines share: the fallback when the
compiled one is not built, and a second oracle in the tests (ANALYZER_ENGINE=python).

It covers what the contract holds today (training on texts with weights and groups, parity-aware
training, continuing a base, counting and encoding with a merge list) and stays that: a new
training feature is written in the literal reference (`analyzer.bpe.reference`, the definition)
and in the compiled engine (`engine/train.c`) only, and tested against the reference; where the
pure engine lacks it, the contract says so rather than falling back."""

from .trainer import train_detailed, train_grouped
from .vocabulary import Vocabulary

__all__ = ["Vocabulary", "train_detailed", "train_grouped"]
