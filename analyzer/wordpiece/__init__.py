"""WordPiece vocabularies by the analyzer's own engine: Hugging Face's `WordPieceTrainer`,
token for token.

`reference` is the definition (Hugging Face's BPE trainer with the `##` prefix, every tie and
quirk written down, and its encoding); `engine/` the compiled trainer and encoder, exactly
equal to it; `trainer.train` runs either, and `encoder.encoder` gives either encoder.

>>> vocab = train({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 520)
>>> len(vocab), vocab[512:514]
(520, [b'##es', b'##est'])
"""

from .encoder import encoder
from .trainer import pack, train, train_packed

__all__ = ["encoder", "pack", "train", "train_packed"]
