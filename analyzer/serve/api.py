"""The JSON API: the same documents as the CLI's `--json` outputs, from the same functions."""

from __future__ import annotations

import threading
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from analyzer.errors import Invalid
from analyzer.export import export_csv, export_json, merges_document, show_document, unit_counts_csv
from analyzer.external import ALL_AVAILABLE, availability, catalog, resolve_tokenizer
from analyzer.metrics import language_metrics, load_run_data
from analyzer.queries import comparison, complete_run, tokenization, trained_merges, trained_vocabulary
from analyzer.runs import EXTENSION_PREFIX
from analyzer.settings import MAX_LANGUAGES, MAX_SIZE, MIN_SIZE, RunSettings, request_model
from analyzer.store import (
    CorpusDetail,
    CorpusRead,
    NotFound,
    RunNotComplete,
    RunRead,
    RunStatus,
    VocabKind,
    VocabularyRead,
    get_corpus,
    get_run,
    list_corpora,
    list_runs,
    load_unit,
    vocabularies,
)

from .app import Database

router = APIRouter(prefix="/api")

MAX_ID = 2**63 - 1
RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="A run id (GET /api/runs lists them)")]
Size = Annotated[int | None, Field(None, ge=MIN_SIZE, le=MAX_SIZE)]

MAX_TOP = 100_000
MAX_VOCABULARIES = 64


@router.get("/corpora", response_model=list[CorpusRead], summary="The stored corpora")
def corpora(db: Database):
    return list_corpora(db)


@router.get("/corpora/{name:path}/units/{unit}", summary="One aligned unit, in every language")
def corpus_unit(db: Database, name: str, unit: Annotated[int, Path(ge=0, le=MAX_ID)]) -> dict[str, str]:
    return load_unit(db, get_corpus(db, name), unit)


@router.get("/corpora/{name:path}", response_model=CorpusDetail, summary="One corpus")
def corpus(db: Database, name: str):
    return get_corpus(db, name)


@router.get("/runs", response_model=list[RunRead], summary="Every run, with its status")
def runs(db: Database):
    return list_runs(db)


MAX_WAIT = 60.0
CHANGES_HEADER = "Analyzer-Changes"


@router.get("/runs/{run_id}", summary="A run: its records when complete, its progress while running")
def run(request: Request, response: Response, db: Database, run_id: RunId,
        after: int | None = Query(None, ge=0), wait: float = Query(0, ge=0, le=MAX_WAIT)) -> dict:
    """The header `Analyzer-Changes` counts the changes of this server's runs (progress, an
    end). With `after` (an earlier answer's count) and `wait`, a long poll: the answer comes
    once there have been more changes than `after`, or `wait` seconds on."""
    runs = request.app.state.runs
    changes = runs.wait_for_change(after, wait) if after is not None and wait else runs.changes
    response.headers[CHANGES_HEADER] = str(changes)
    found = get_run(db, run_id)
    if found.status != RunStatus.COMPLETE:
        return {**found.model_dump(mode="json"), "run": found.id, "records": [],
                "progress": runs.progress.get(run_id, {})}
    data = load_run_data(db, run_id)
    return show_document(data, language_metrics(data))


@router.get("/runs/{run_id}/vocabularies", response_model=list[VocabularyRead],
            summary="A run's vocabularies: trained and production")
def run_vocabularies(db: Database, run_id: RunId):
    complete_run(db, run_id)
    return vocabularies(db, run_id)


@router.get("/runs/{run_id}/merges", summary="A trained vocabulary's first merges")
def merges(db: Database, run_id: RunId, vocab: str = VocabKind.SHARED.value,
           top: int = Query(20, ge=0, le=MAX_TOP), pretokenizer: str | None = None) -> dict:
    rows, pretokenizer = trained_merges(db, run_id, vocab, pretokenizer)
    return {"run": run_id, "vocab": vocab, "pretokenizer": pretokenizer,
            "merges_learned": len(rows), "merges": merges_document(rows[:top])}


@router.get("/runs/{run_id}/export", summary="Everything about a run (json) or its records (csv)")
def export(request: Request, db: Database, run_id: RunId,
           format: Literal["json", "csv"] = "json", units: bool = False):
    """The export, streamed as it is made; `units`: each measured unit's count too (csv: one
    row per unit instead of the records)."""
    complete_run(db, run_id)
    data = load_run_data(db, run_id)
    frame = language_metrics(data)
    if format == "csv":
        if units:
            return StreamingResponse(unit_counts_csv(data), media_type="text/csv")
        return PlainTextResponse(export_csv(frame), media_type="text/csv")

    def pieces():  # the merges are read while the body is sent: on a connection of its own
        with request.app.state.databases.connection() as streaming:
            yield from export_json(streaming, run_id, data, frame, units=units)

    return StreamingResponse(pieces(), media_type="application/json")


RunRequest = request_model("RunRequest", exclude=("executor", "scheduler", "counts"))
"""The body of POST /api/runs: `RunSettings`' fields (generated from it), but for where the
trainings run (a client never makes this server connect to another host) and imported counts
(files on this server: a client never names one; `analyzer run --counts` imports them, and the
service shows them like any vocabulary)."""


@router.post("/runs", status_code=202, summary="Start a run (one at a time per database)")
def start_run(request: Request, body: RunRequest) -> dict:  # type: ignore[valid-type]
    fields = body.model_dump()  # type: ignore[attr-defined]
    for spec in fields["tokenizers"]:  # names only: a client never names a file on this server
        if spec != ALL_AVAILABLE and spec not in catalog() and not spec.startswith("hf:"):
            raise NotFound(f"unknown tokenizer {spec!r}: the service measures catalog tokenizers "
                           f"({', '.join(catalog())}) and hf:ORG/NAME", setting="tokenizers",
                           value=spec)
    run_id = request.app.state.runs.start(RunSettings(**fields))
    return {"run": run_id, "status": RunStatus.RUNNING.value, "url": f"/api/runs/{run_id}"}


@router.delete("/runs/{run_id}", summary="Interrupt a run in progress")
def stop_run(request: Request, db: Database, run_id: RunId) -> dict:
    found = get_run(db, run_id)
    if not request.app.state.runs.stop(run_id):
        raise RunNotComplete(f"run {run_id} is {found.status}: this server is not running it, "
                             "so there is nothing to interrupt")
    after = get_run(db, run_id)
    return {"run": run_id, "status": after.status.value, "error": after.error}


class TokenizeRequest(BaseModel):
    """A text under a run's trained vocabulary (`run`, `vocab`, `size`) or a catalog tokenizer."""

    model_config = ConfigDict(extra="forbid")
    text: str
    run: int | None = Field(None, ge=1, le=MAX_ID)
    vocab: str = VocabKind.SHARED.value
    size: Size = None
    pretokenizer: str | None = None
    tokenizer: str | None = None


@router.post("/tokenize", summary="A text's pieces, ids and count")
async def tokenize(request: Request, body: TokenizeRequest) -> JSONResponse:
    # Async: a loaded vocabulary encodes a text in microseconds, faster than a hop to the
    # thread pool; loading one (a cache miss) goes to the pool.
    if (body.run is None) == (body.tokenizer is None):
        raise Invalid("give either run (with vocab and size) or tokenizer")
    if body.tokenizer is not None:
        served = await _tokenizer(request, body.tokenizer)
    else:
        assert body.run is not None
        served = await _vocabulary(request, body.run, body.vocab, body.size, body.pretokenizer)
    # A JSONResponse as is: FastAPI's encoder would walk every id and piece again.
    return JSONResponse({"vocab": body.tokenizer or body.vocab,
                         **tokenization(body.text, served.pieces)})


class CompareRequest(BaseModel):
    """The same content in several languages, under a run's vocabularies and catalog tokenizers."""

    model_config = ConfigDict(extra="forbid")
    texts: dict[str, str] = Field(examples=[{"eng_Latn": "The cat sat.", "rus_Cyrl": "Кот сидел."}])
    run: int | None = Field(None, ge=1, le=MAX_ID)
    vocabs: list[str] | None = Field(None, max_length=MAX_VOCABULARIES)
    """The run's trained vocabularies to use (default: all of them)."""
    size: Size = None
    tokenizers: list[str] = Field(default_factory=list, max_length=MAX_VOCABULARIES)
    pivot: str | None = None
    pieces: bool = False


@router.post("/compare", summary="Tokens per language per vocabulary, and premiums vs a pivot")
async def compare(request: Request, body: CompareRequest) -> JSONResponse:
    if len(body.texts) > MAX_LANGUAGES:
        raise Invalid(f"at most {MAX_LANGUAGES} texts")
    if body.run is None and not body.tokenizers:
        raise Invalid("give a run, tokenizers, or both")
    counters = {}
    if body.run is not None:
        run_id = body.run
        trained = await run_in_threadpool(_trained_scopes, request, run_id, body.size)
        for scope in dict.fromkeys(body.vocabs if body.vocabs is not None else trained):
            # `size` is the trained vocabularies'; an extension counts with all its additions.
            size = None if scope.startswith(EXTENSION_PREFIX) else body.size
            counters[scope] = (await _vocabulary(request, run_id, scope, size, None)).pieces
    for name in dict.fromkeys(body.tokenizers):
        counters[name] = (await _tokenizer(request, name)).pieces
    return JSONResponse(comparison(body.texts, counters, body.pivot, with_pieces=body.pieces))


def _trained_scopes(request: Request, run_id: int, size: int | None = None) -> list[str]:
    """The run's trained vocabularies; at a size the run did not train, without its Unigram and
    WordPiece ones (each has its trained sizes only: asked for one, it says which)."""
    with request.app.state.databases.connection() as db:
        run = complete_run(db, run_id)
        return [v.scope for v in vocabularies(db, run_id) if v.kind.trained and (
            v.kind.has_merges or size is None or size in run.sizes)]


@router.get("/tokenizers", summary="The tokenizer catalog, and which are available here")
def tokenizers() -> list[dict]:
    return [availability(item).document() for item in catalog().values()]


async def _cached(request: Request, key: tuple, load):
    cache = request.app.state.cache
    found = cache.peek(key)
    return found if found is not None else await run_in_threadpool(cache.get, key, load)


async def _vocabulary(request: Request, run_id: int, scope: str, size: int | None,
                      pretokenizer: str | None) -> _Served:
    def load() -> _Served:
        with request.app.state.databases.connection() as db:
            return _Served(trained_vocabulary(db, run_id, scope, size, pretokenizer).pieces)
    return await _cached(request, ("trained", run_id, scope, size, pretokenizer), load)


async def _tokenizer(request: Request, name: str) -> _Served:
    if name not in catalog():  # never a path: clients name catalog entries only
        raise NotFound(f"unknown tokenizer {name!r}; the catalog has: {', '.join(catalog())}")

    def load() -> _Served:
        tokenizer = resolve_tokenizer(name, downloads=False)
        if tokenizer.pieces is None:
            raise Invalid(f"{name} cannot show its pieces")
        return _Served(tokenizer.pieces)
    return await _cached(request, ("tokenizer", name), load)


class _Served:
    """A loaded encoder, one caller at a time (its chunk cache is shared between requests)."""

    def __init__(self, pieces):
        self._pieces = pieces
        self.lock = threading.Lock()

    def pieces(self, text: str) -> list[tuple[int, bytes]]:
        with self.lock:
            return self._pieces(text)
