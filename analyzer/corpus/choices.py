"""The choices the readers offer, by name: the corpus formats, what a unit is, FLORES's splits,
what a training source's document is and its text's field. Apart from the readers, so that a
command's options can list them without loading them.

>>> FLORES_SPLITS
('dev', 'devtest', 'dev+devtest')
"""

FORMATS = ("folder", "flores200", "flores_plus", "tsv", "csv", "jsonl", "parquet", "tmx", "moses")
UNIT_KINDS = ("lines", "paragraphs")
FLORES_SPLITS = ("dev", "devtest", "dev+devtest")
DEFAULT_SPLIT = "devtest"
"""What FLORES-200's users measure on (dev is for tuning)."""
DOCUMENT_KINDS = ("lines", "paragraphs")
"""A training source's documents: a line each, or a blank-line-separated paragraph each."""
DEFAULT_TEXT_FIELD = "text"
"""JSON Lines' field, or Parquet's column, that holds a document's text."""
