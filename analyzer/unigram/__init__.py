"""Unigram vocabularies by the analyzer's own engine.

`reference` is the definition (Kudo 2018, as SentencePiece's trainer implements it, every tie
and float written down); `engine/` the compiled trainer, exactly equal to it and run on every
core; `trainer.train` runs the steps on either.

>>> trained = train({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 260)
>>> len(trained.pieces), trained.pieces[0]
(260, b'newest')
"""

from .trainer import Trained, train

__all__ = ["Trained", "train"]
