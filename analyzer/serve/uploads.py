"""Bringing a corpus through the service: `POST /api/corpora`, a form with a file.

The file is what `analyzer ingest` reads (a .tsv, .csv, .jsonl, .parquet or .tmx, or a zip of a
folder of <lang>.txt files, of Moses files or of FLORES's release), with the same options, read
by the same function (`read_corpus`) and stored by the same (`save_corpus`): the same checks,
messages and content digest, and nothing stored on a refusal. Messages name the file as the
client called it (`tiny.zip/eng_Latn.txt:3`), never this server's temporary folders.
"""

from __future__ import annotations

import errno
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Form, HTTPException, Request, Response, UploadFile
from starlette.concurrency import run_in_threadpool

from analyzer.corpus import (
    BY_SUFFIX,
    DEFAULT_SPLIT,
    FLORES_SPLITS,
    FORMATS,
    SAMPLE_CORPUS,
    CorpusError,
    ParallelCorpus,
    default_name,
    read_corpus,
)
from analyzer.limits import DEFAULT_UPLOAD_SPACE, MAX_UPLOADS
from analyzer.report.files import without_local_paths
from analyzer.store import DiskFull, get_corpus, save_corpus

from .paths import source_shown
from .problems import ServerBusy, library_problem
from .waits import budget_of

router = APIRouter(prefix="/api")

CORPORA_PATH = "/api/corpora"

Format = Literal[FORMATS]  # type: ignore[valid-type]
Split = Literal[FLORES_SPLITS]  # type: ignore[valid-type]


class Uploads:
    """The uploads being read now: at most `most` at once, together needing at most `space`
    bytes of temporary disk. An upload's slot and space are taken (`UploadGate`) before any of
    its body is read, from its declared length, and given back when its answer is sent."""

    def __init__(self, limit: int, space: int = DEFAULT_UPLOAD_SPACE, most: int = MAX_UPLOADS):
        self.limit, self.space, self.most = limit, space, most
        self.now = self.reserved = 0
        self.lock = threading.Lock()

    def needs(self, declared: int) -> int:
        """Temporary bytes an upload of `declared` bytes may take: the body as the form parser
        keeps it, the file as it is read (under its own name), and what a zip unpacks to.

        >>> Uploads(limit=100).needs(10)
        120
        """
        return 2 * declared + self.limit

    def take(self, declared: int) -> int:
        """Reserve a slot and the space for an upload of `declared` bytes (returned, for
        `give_back`). ServerBusy (503) when all slots are taken or the space is; DiskFull (507)
        when the temporary folder's disk has not that much free."""
        needed = self.needs(declared)
        with self.lock:
            if self.now >= self.most:
                raise ServerBusy(f"{self.now} corpora are being read now, as many as this server "
                                 "reads at once; try again in a moment")
            if self.reserved + needed > self.space:
                raise ServerBusy(f"the uploads being read now take {self.reserved:,} of the "
                                 f"{self.space:,} bytes of temporary space this server gives "
                                 f"them, and this one may need {needed:,}; try again in a moment")
            free = shutil.disk_usage(tempfile.gettempdir()).free
            if free < needed:
                raise DiskFull(f"the server's temporary folder has {free:,} bytes free, and this "
                               f"upload may need {needed:,}; nothing was read")
            self.now += 1
            self.reserved += needed
        return needed

    def give_back(self, needed: int) -> None:
        with self.lock:
            self.now -= 1
            self.reserved -= needed


class UploadGate:
    """ASGI middleware: an upload (`POST /api/corpora`) takes its slot and space (`Uploads.take`)
    before its body is read, so that uploads over the bound are refused having sent headers
    only, never after their bodies have filled the disk. Its declared length is checked against
    the limit before this (`BodyLimit`)."""

    def __init__(self, app, uploads: Uploads):
        self.app, self.uploads = app, uploads

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != CORPORA_PATH or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        declared = int(dict(scope["headers"]).get(b"content-length", b"0") or 0)
        try:
            needed = self.uploads.take(declared)
        except (ServerBusy, DiskFull) as error:
            return await library_problem(error)(scope, receive, send)
        try:
            await self.app(scope, receive, send)
        finally:
            self.uploads.give_back(needed)


def said_of_upload(error: CorpusError, shown: str, path: Path) -> CorpusError:
    """A refusal of an upload as its client may read it: the file kept at `path` (and its
    folder) called by the client's name for it, `shown`; any other folder of this server (where
    a zip was unpacked, say) left out, its files called by their names.

    >>> str(said_of_upload(CorpusError("/tmp/u1/corpus.zip: /tmp/analyzer-zip-9/d/a.txt:3: "
    ...                                "empty"), "mine.zip", Path("/tmp/u1/corpus.zip")))
    'mine.zip: a.txt:3: empty'
    """
    said = error.renamed(str(path), shown).renamed(str(path.parent), shown)
    return said.rewritten(without_local_paths)  # type: ignore[return-value]


def unreadable(error: OSError) -> str:
    """An OSError while reading an upload, in words, naming at most its file's name.

    >>> unreadable(OSError(36, "File name too long", "/tmp/z/d/" + "x" * 300))
    'File name too long (xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...)'
    """
    name = Path(str(error.filename)).name if error.filename else ""
    shown = name if len(name) <= 50 else name[:48] + "..."
    return f"{error.strerror or type(error).__name__}" + (f" ({shown})" if shown else "")


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
    split: Annotated[Split | None, Form(description=f"FLORES's split (default {DEFAULT_SPLIT})")] = None,
    replace: Annotated[bool, Form(description="Replace a corpus of the same name")] = False,
) -> dict:
    """The stored corpus (`GET /api/corpora/{name}`'s document) and what was done (`status`:
    created, replaced, unchanged), or a 422 naming the file, line and value at fault."""
    uploads: Uploads = request.app.state.uploads
    form = await request.form()  # the one parsed for the fields above (a request keeps it)
    repeated = sorted({key for key in form if len(form.getlist(key)) > 1})
    if repeated:  # the form parser keeps the last of each, without a word
        raise HTTPException(400, f"the form gives {', '.join(repeated)} more than once; each "
                                 "field is given once. Nothing was stored")
    request.app.state.databases.check_present()

    def ingest() -> dict:  # its slot and space were taken by UploadGate
        shown = shown_name(file.filename)
        with tempfile.TemporaryDirectory(prefix="analyzer-upload-") as folder:
            path = Path(folder) / kept_name(shown)
            with open(path, "wb") as kept:
                shutil.copyfileobj(file.file, kept, 1 << 20)
            file.file.close()  # the form parser's copy: its space is free again
            try:
                corpus = read_corpus(path, format=format, units=units, nfc=nfc,
                                     skip_empty_units=skip_empty_units, split=split,
                                     unpack_limit=uploads.limit)
            except CorpusError as error:  # said of the client's file, not of this server's
                raise said_of_upload(error, shown, path) from None
            except OSError as error:  # one the reader did not put in words: still the file's
                if error.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise DiskFull(f"the server's temporary folder is full ({error.strerror}) "
                                   f"while reading {shown}; nothing was stored") from None
                raise said_of_upload(CorpusError(f"{shown} cannot be read: "
                                                 f"{unreadable(error)}", file=shown),
                                     shown, path) from None
            corpus.source = f"upload:{shown}"
            return stored(request, corpus, name if name else default_name(Path(shown), corpus),
                          replace)

    return await run_in_threadpool(ingest)


def stored(request: Request, corpus: ParallelCorpus, name: str, replace: bool) -> dict:
    """Store a corpus read as `analyzer ingest` reads it, under `name`: what an upload (or the
    sample) answers, the stored corpus (its source named without this server's folders) and
    what was done."""
    with request.app.state.databases.connection(budget=budget_of(request)) as db:
        status = save_corpus(db, corpus, name, replace=replace)
        summary = get_corpus(db, name)
    return {"status": status, "corpus": source_shown(summary).model_dump(mode="json"),
            "dropped_empty_units": corpus.dropped_empty_units,
            "nfc_changed_units": corpus.nfc_changed_units, "not_read": corpus.not_read,
            "notes": corpus.notes, "url": f"/api/corpora/{quote(name, safe='')}"}


SAMPLE_PATH = "/api/corpora/sample"


@router.post("/corpora/sample", status_code=201,
             summary="Bring the shipped sample corpus, as analyzer ingest with no path does")
async def sample_corpus(request: Request, response: Response) -> dict:
    """The sample the README's first command runs on (twelve languages, twenty paragraphs),
    stored under its own name (`harbour_town`): `unchanged` if it is already, a 409 if another
    corpus holds that name. The answer is an upload's."""
    request.app.state.databases.check_present()

    def ingest() -> dict:
        corpus = read_corpus(SAMPLE_CORPUS)
        return stored(request, corpus, default_name(SAMPLE_CORPUS, corpus), replace=False)

    answer = await run_in_threadpool(ingest)
    if answer.get("status") == "unchanged":
        response.status_code = 200  # nothing was created
    return answer
