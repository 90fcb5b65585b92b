"""The JSON API: the same documents as the CLI's `--json` outputs, from the same functions."""

from __future__ import annotations

import threading
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field

from analyzer.export import export_csv, export_document, merges_document, show_document
from analyzer.external import availability, catalog, resolve_tokenizer
from analyzer.metrics import language_metrics, load_run_data
from analyzer.queries import comparison, complete_run, tokenization, trained_merges, trained_vocabulary
from analyzer.runs import RunSettings
from analyzer.store import (
    CorpusDetail,
    CorpusRead,
    NotFound,
    RunNotComplete,
    RunRead,
    RunStatus,
    StoreError,
    VocabKind,
    VocabularyRead,
    get_corpus,
    get_run,
    list_corpora,
    list_runs,
    load_unit,
    vocabularies,
)

router = APIRouter(prefix="/api")

MAX_ID = 2**63 - 1
RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="A run id (GET /api/runs lists them)")]
Size = Annotated[int | None, Field(None, ge=256, le=2**24)]

MAX_TOP = 100_000
MAX_LANGUAGES = 300
MAX_VOCABULARIES = 64


def _db(request: Request):
    """A connection of this request's own."""
    return request.app.state.databases.get()


@router.get("/corpora", response_model=list[CorpusRead], summary="The stored corpora")
def corpora(request: Request):
    return list_corpora(_db(request))


@router.get("/corpora/{name:path}/units/{unit}", summary="One aligned unit, in every language")
def corpus_unit(request: Request, name: str, unit: Annotated[int, Path(ge=0, le=MAX_ID)]) -> dict[str, str]:
    db = _db(request)
    return load_unit(db, get_corpus(db, name), unit)


@router.get("/corpora/{name:path}", response_model=CorpusDetail, summary="One corpus")
def corpus(request: Request, name: str):
    return get_corpus(_db(request), name)


@router.get("/runs", response_model=list[RunRead], summary="Every run, with its status")
def runs(request: Request):
    return list_runs(_db(request))


MAX_WAIT = 60.0
CHANGES_HEADER = "Analyzer-Changes"


@router.get("/runs/{run_id}", summary="A run: its records when complete, its progress while running")
def run(request: Request, response: Response, run_id: RunId, after: int | None = Query(None, ge=0),
        wait: float = Query(0, ge=0, le=MAX_WAIT)) -> dict:
    """The header `Analyzer-Changes` counts the changes of this server's runs (progress, an
    end). With `after` (an earlier answer's count) and `wait`, a long poll: the answer comes
    once there have been more changes than `after`, or `wait` seconds on."""
    runs = request.app.state.runs
    changes = runs.wait_for_change(after, wait) if after is not None and wait else runs.changes
    response.headers[CHANGES_HEADER] = str(changes)
    db = _db(request)
    found = get_run(db, run_id)
    if found.status != RunStatus.COMPLETE:
        return {**found.model_dump(mode="json"), "run": found.id, "records": [],
                "progress": runs.progress.get(run_id, {})}
    data = load_run_data(db, run_id)
    return show_document(data, language_metrics(data))


@router.get("/runs/{run_id}/vocabularies", response_model=list[VocabularyRead],
            summary="A run's vocabularies: trained and production")
def run_vocabularies(request: Request, run_id: RunId):
    db = _db(request)
    complete_run(db, run_id)
    return vocabularies(db, run_id)


@router.get("/runs/{run_id}/merges", summary="A trained vocabulary's first merges")
def merges(request: Request, run_id: RunId, vocab: str = VocabKind.SHARED.value,
           top: int = Query(20, ge=0, le=MAX_TOP), pretokenizer: str | None = None) -> dict:
    rows, pretokenizer = trained_merges(_db(request), run_id, vocab, pretokenizer)
    return {"run": run_id, "vocab": vocab, "pretokenizer": pretokenizer,
            "merges_learned": len(rows), "merges": merges_document(rows[:top])}


@router.get("/runs/{run_id}/export", summary="Everything about a run (json) or its records (csv)")
def export(request: Request, run_id: RunId, format: Literal["json", "csv"] = "json"):
    db = _db(request)
    complete_run(db, run_id)
    data = load_run_data(db, run_id)
    frame = language_metrics(data)
    if format == "csv":
        return PlainTextResponse(export_csv(frame), media_type="text/csv")
    return JSONResponse(export_document(db, run_id, data, frame))


class RunRequest(BaseModel):
    """The settings of `analyzer run` (the same names as `RunSettings`)."""

    model_config = ConfigDict(extra="forbid")
    sizes: list[int] = Field(max_length=64, examples=[[512, 1024]])
    corpus: str | None = None
    languages: list[str] | None = Field(None, max_length=MAX_LANGUAGES)
    pivot: str | None = None
    per_language: bool = True
    cross: bool = False
    holdout: float = 0.0
    seed: int = 0
    tie_break: Literal["lexicographic", "first"] = "lexicographic"
    min_pair_count: int = 2
    jobs: int | None = Field(None, ge=1, le=256)
    tokenizers: list[str] = Field(default_factory=list, max_length=64)
    pretokenizers: list[str] = Field(default_factory=lambda: ["none"], max_length=16)
    parity: bool = False
    global_merges: int = 0
    weights: dict[str, int] = Field(default_factory=dict)


@router.post("/runs", status_code=202, summary="Start a run (one at a time per database)")
def start_run(request: Request, settings: RunRequest) -> dict:
    for spec in settings.tokenizers:  # names only: a client never names a file on this server
        if spec != "all-available" and spec not in catalog() and not spec.startswith("hf:"):
            raise NotFound(f"unknown tokenizer {spec!r}: the service measures catalog tokenizers "
                           f"({', '.join(catalog())}) and hf:ORG/NAME")
    run_id = request.app.state.runs.start(RunSettings(**settings.model_dump()))
    return {"run": run_id, "status": RunStatus.RUNNING.value, "url": f"/api/runs/{run_id}"}


@router.delete("/runs/{run_id}", summary="Interrupt a run in progress")
def stop_run(request: Request, run_id: RunId) -> dict:
    db = _db(request)
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
        raise StoreError("give either run (with vocab and size) or tokenizer")
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
        raise StoreError(f"at most {MAX_LANGUAGES} texts")
    if body.run is None and not body.tokenizers:
        raise StoreError("give a run, tokenizers, or both")
    counters = {}
    if body.run is not None:
        run_id = body.run
        trained = await run_in_threadpool(_trained_scopes, request, run_id)
        for scope in dict.fromkeys(body.vocabs if body.vocabs is not None else trained):
            counters[scope] = (await _vocabulary(request, run_id, scope, body.size, None)).pieces
    for name in dict.fromkeys(body.tokenizers):
        counters[name] = (await _tokenizer(request, name)).pieces
    return JSONResponse(comparison(body.texts, counters, body.pivot, with_pieces=body.pieces))


def _trained_scopes(request: Request, run_id: int) -> list[str]:
    db = _db(request)
    complete_run(db, run_id)
    return [v.scope for v in vocabularies(db, run_id) if v.kind.trained]


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
        db = _db(request)
        return _Served(trained_vocabulary(db, run_id, scope, size, pretokenizer).pieces)
    return await _cached(request, ("trained", run_id, scope, size, pretokenizer), load)


async def _tokenizer(request: Request, name: str) -> _Served:
    if name not in catalog():  # never a path: clients name catalog entries only
        raise NotFound(f"unknown tokenizer {name!r}; the catalog has: {', '.join(catalog())}")

    def load() -> _Served:
        tokenizer = resolve_tokenizer(name, downloads=False)
        if tokenizer.pieces is None:
            raise StoreError(f"{name} cannot show its pieces")
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
