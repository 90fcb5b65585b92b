"""Bringing a corpus through the service: `POST /api/corpora`, a form with a file.

The file is what `analyzer ingest` reads (a .tsv, .csv, .jsonl, .parquet or .tmx, or a zip of a
folder of <lang>.txt files, of Moses files or of FLORES's release), with the same options, read
by the same function (`read_corpus`) and stored by the same (`save_corpus`): the same checks,
messages and content digest, and nothing stored on a refusal. Messages name the file as the
client called it (`tiny.zip/eng_Latn.txt:3`), never this server's temporary folders.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Form, Request, UploadFile
from starlette.concurrency import run_in_threadpool

from analyzer.corpus import BY_SUFFIX, FLORES_SPLITS, FORMATS, CorpusError, default_name, read_corpus
from analyzer.store import get_corpus, save_corpus

from .problems import ServerBusy

router = APIRouter(prefix="/api")

CORPORA_PATH = "/api/corpora"
DEFAULT_CORPUS_LIMIT = 100_000_000
"""Bytes an uploaded corpus may have, as sent and (a zip) unpacked."""
MAX_UPLOADS = 2
"""Uploads read at once (each holds a thread and its file's bytes on disk); one more gets 503."""

Format = Literal[FORMATS]  # type: ignore[valid-type]
Split = Literal[FLORES_SPLITS]  # type: ignore[valid-type]


class Uploads:
    """How many uploads are being read now, bounded."""

    def __init__(self, limit: int, most: int = MAX_UPLOADS):
        self.limit, self.most, self.now = limit, most, 0
        self.lock = threading.Lock()

    def __enter__(self):
        with self.lock:
            if self.now >= self.most:
                raise ServerBusy(f"{self.now} corpora are being read now, as many as this server "
                                 "reads at once; try again in a moment")
            self.now += 1

    def __exit__(self, *exc):
        with self.lock:
            self.now -= 1


KNOWN_SUFFIXES = (".zip", *BY_SUFFIX)
"""The endings an uploaded file is kept under (what tells `ingest` its format); any other is
dropped, and the format must then be given."""


def shown_name(given: str | None) -> str:
    """The client's name for its file, for messages and the default corpus name: its last part,
    of safe characters only. Never a path here: the file is kept as `kept_name`.

    >>> shown_name("C:\\\\corpora\\\\tiny.zip"), shown_name("../../etc/passwd"), shown_name(None)
    ('tiny.zip', 'passwd', 'upload')
    """
    last = re.split(r"[\\/]", given or "")[-1]
    safe = re.sub(r"[^\w.\-]+", "_", last).lstrip(".")
    return safe[:200] or "upload"


def kept_name(shown: str) -> str:
    """The name the upload is kept under in its temporary folder: fixed, with the client's
    ending only when it is one `ingest` knows (nothing from a request becomes a path).

    >>> kept_name("tiny.zip"), kept_name("notes.exe"), kept_name("PAIRS.TSV")
    ('corpus.zip', 'corpus', 'corpus.tsv')
    """
    suffix = Path(shown).suffix.lower()
    return "corpus" + (suffix if suffix in KNOWN_SUFFIXES else "")


@router.post("/corpora", status_code=201, summary="Bring a corpus: a file, as analyzer ingest reads")
async def upload_corpus(
    request: Request,
    file: Annotated[UploadFile, Form(description="The corpus: a .tsv, .csv, .jsonl, .parquet or "
                                                 ".tmx file, or a zip of a corpus folder")],
    name: Annotated[str | None, Form(description="The name to store it under (default: the "
                                                 "file's name without its endings)")] = None,
    format: Annotated[Format | None, Form(description="Default: detected")] = None,
    units: Annotated[Literal["lines", "paragraphs"], Form()] = "lines",
    nfc: Annotated[bool, Form(description="Normalise texts to Unicode NFC")] = False,
    skip_empty_units: Annotated[bool, Form(description="Drop units empty in any language")] = False,
    split: Annotated[Split | None, Form(description="FLORES's split (default devtest)")] = None,
    replace: Annotated[bool, Form(description="Replace a corpus of the same name")] = False,
) -> dict:
    """The stored corpus (`GET /api/corpora/{name}`'s document) and what was done (`status`:
    created, replaced, unchanged), or a 422 naming the file, line and value at fault."""
    uploads: Uploads = request.app.state.uploads
    request.app.state.databases.check_present()

    def ingest() -> dict:
        shown = shown_name(file.filename)
        with uploads, tempfile.TemporaryDirectory(prefix="analyzer-upload-") as folder:
            path = Path(folder) / kept_name(shown)
            with open(path, "wb") as kept:
                shutil.copyfileobj(file.file, kept, 1 << 20)
            try:
                corpus = read_corpus(path, format=format, units=units, nfc=nfc,
                                     skip_empty_units=skip_empty_units, split=split,
                                     unpack_limit=uploads.limit)
            except CorpusError as error:  # said of the client's file, not of this server's
                raise error.renamed(str(path), shown).renamed(folder, shown) from None
            corpus.source = f"upload:{shown}"
            stored = name if name else default_name(Path(shown), corpus)
            with request.app.state.databases.connection() as db:
                status = save_corpus(db, corpus, stored, replace=replace)
                summary = get_corpus(db, stored)
            return {"status": status, "corpus": summary.model_dump(mode="json"),
                    "dropped_empty_units": corpus.dropped_empty_units,
                    "nfc_changed_units": corpus.nfc_changed_units, "not_read": corpus.not_read,
                    "url": f"/api/corpora/{quote(stored, safe='')}"}

    return await run_in_threadpool(ingest)
