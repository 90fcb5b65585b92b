"""The pure-Python engine behind the contract both engines share: the fallback when the
compiled one is not built, and a second oracle in the tests (ANALYZER_ENGINE=python)."""

from .trainer import train_detailed, train_grouped
from .vocabulary import Vocabulary

__all__ = ["Vocabulary", "train_detailed", "train_grouped"]
