"""WordPiece vocabularies by the analyzer's own engine: Hugging Face's `WordPieceTrainer`,
token for token.

`reference` is the definition (Hugging Face's BPE trainer with the `##` prefix, every tie and
quirk written down); `engine/` the compiled trainer, exactly equal to it; `trainer.train`
runs either.

>>> vocab = train({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 520)
>>> len(vocab), vocab[512:514]
(520, [b'##es', b'##est'])
"""

from .trainer import pack, train, train_packed

__all__ = ["pack", "train", "train_packed"]
