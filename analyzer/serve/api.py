"""The JSON API: the same documents as the CLI's `--json` outputs, from the same functions."""

from __future__ import annotations

import json
import time
from contextlib import nullcontext
from typing import Annotated, Literal

from fastapi import APIRouter, Header, Path, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from analyzer.corpus import language_name
from analyzer.errors import AnalyzerError, Invalid
from analyzer.export import export_csv, export_json, merges_document, show_document, unit_counts_csv
from analyzer.external import ALL_AVAILABLE, availability, catalog, load_prices
from analyzer.identity import SHARED_SCOPE, VocabularyId
from analyzer.metrics import RunResults, load_run_data
from analyzer.metrics.bill import workload_of
from analyzer.queries import complete_run, trained_merges
from analyzer.runs import refusals
from analyzer.settings import MAX_LANGUAGES, MAX_SIZE, MIN_SIZE, RunSettings, request_model
from analyzer.store import (
    AnalyzerDatabase,
    CorpusDetail,
    CorpusRead,
    NotFound,
    QueuedRunRead,
    RunRead,
    RunStatus,
    VocabularyRead,
    WaitBudget,
    get_corpus,
    get_queued,
    get_run,
    list_corpora,
    list_runs,
    load_unit,
    queued_runs,
    vocabularies,
)

from . import counting, idempotency
from .paths import source_shown, tokenizer_document
from .problems import NotRunning, SettingsRefused
from .state import Database, Document, in_database, unchanged
from .waits import budget_of, writing

router = APIRouter(prefix="/api")

MAX_ID = 2**63 - 1
RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="A run id (GET /api/runs lists them)")]
Size = Annotated[int | None, Field(None, ge=MIN_SIZE, le=MAX_SIZE)]

MAX_TOP = 100_000
MAX_VOCABULARIES = 64


@router.get("/corpora", response_model=list[CorpusRead], summary="The stored corpora")
def corpora(db: Database):
    return [source_shown(corpus) for corpus in list_corpora(db)]


@router.get("/corpora/{name:path}/units/{unit}", summary="One aligned unit, in every language")
def corpus_unit(db: Database, name: str, unit: Annotated[int, Path(ge=0, le=MAX_ID)]) -> dict[str, str]:
    return load_unit(db, get_corpus(db, name), unit)


@router.get("/corpora/{name:path}", response_model=CorpusDetail, summary="One corpus")
def corpus(db: Database, name: str):
    return source_shown(get_corpus(db, name))


@router.get("/runs", response_model=list[RunRead], summary="Every run, with its status")
def runs(db: Database):
    return list_runs(db)


MAX_WAIT = 60.0
CHANGES_HEADER = "Analyzer-Changes"
Reference = Query(None, max_length=64, description="A language of the run to measure every "
                  "other against instead of its pivot (a code: hin_Deva); the verdicts are the "
                  "same against any")


@router.get("/runs/{run_id}", summary="A run: its records when complete, its progress while running")
async def run(request: Request, run_id: RunId, after: int | None = Query(None, ge=0),
              wait: float = Query(0, ge=0, le=MAX_WAIT),
              reference: str | None = Reference,
              bill: str | None = Query(None, max_length=32, description="A month's workload to "
                                       "price on every priced model: tokens of reference-language "
                                       "text (2.5M), as `counted_by` counts them"),
              mix: str | None = Query(None, max_length=20_000, description="Each language's "
                                      "share of the content: eng_Latn=0.6,hin_Deva=0.4"),
              counted_by: str | None = Query(None, max_length=200),
              requests: str | None = Query(None, max_length=32)) -> Response:
    """The header `Analyzer-Changes` counts the changes of this server's runs (progress, an
    end). With `after` (an earlier answer's count) and `wait`, a long poll: the answer comes
    once there have been more changes than `after`, or `wait` seconds on. A complete run's
    document is made once and sent with an ETag (`If-None-Match` gets 304)."""
    runs = request.app.state.runs
    changes = await runs.wait_for_change(after, wait)
    headers = {CHANGES_HEADER: str(changes)}
    found = await in_database(request, lambda db: get_run(db, run_id))
    if found.status != RunStatus.COMPLETE:
        progress = runs.progress.get(run_id)
        names = {code: language_name(code) for code in found.languages}
        return JSONResponse({**found.model_dump(mode="json"), "run": found.id, "records": [],
                             "progress": progress.steps if progress else {},
                             "overall": progress.document(names, time.monotonic())
                             if progress else None}, headers=headers)

    def make() -> Document:
        with request.app.state.databases.connection() as db:
            results = RunResults(load_run_data(db, run_id, reference=reference))
            workload = None if bill is None else workload_of(
                results.data, load_prices(), bill, mix, counted_by, requests)
            body = json.dumps(show_document(results, workload=workload)).encode()
        return Document(body, body)

    key = ("show", run_id, found.started, reference, bill, mix, counted_by, requests)
    document = await request.app.state.documents.get(key, make)
    headers["ETag"] = document.etag
    if unchanged(request, document):
        return Response(status_code=304, headers=headers)
    return Response(document.body, media_type="application/json", headers=headers)


@router.get("/runs/{run_id}/vocabularies", response_model=list[VocabularyRead],
            summary="A run's vocabularies: trained and production")
def run_vocabularies(db: Database, run_id: RunId):
    complete_run(db, run_id)
    return [source_shown(vocabulary) for vocabulary in vocabularies(db, run_id)]


@router.get("/runs/{run_id}/merges", summary="A trained vocabulary's first merges")
def merges(db: Database, run_id: RunId, vocab: str = SHARED_SCOPE,
           top: int = Query(20, ge=0, le=MAX_TOP), pretokenizer: str | None = None) -> dict:
    rows, pretokenizer = trained_merges(db, run_id, vocab, pretokenizer)
    return {"run": run_id, "vocab": vocab, "pretokenizer": pretokenizer,
            "merges_learned": len(rows), "merges": merges_document(rows[:top])}


@router.get("/runs/{run_id}/export", summary="Everything about a run (json) or its records (csv)")
def export(request: Request, db: Database, run_id: RunId,
           format: Literal["json", "csv"] = "json", units: bool = False,
           reference: str | None = Reference):
    """The export, streamed as it is made; `units`: each measured unit's count too (csv: one
    row per unit instead of the records); `reference`: as the run's document's."""
    complete_run(db, run_id)
    results = RunResults(load_run_data(db, run_id, reference=reference))
    if format == "csv":
        if units:
            return StreamingResponse(unit_counts_csv(results.data), media_type="text/csv")
        return PlainTextResponse(export_csv(results), media_type="text/csv")

    def pieces():  # the merges are read while the body is sent: on a connection of its own
        with request.app.state.databases.connection() as streaming:
            yield from export_json(streaming, run_id, results, units=units)

    return StreamingResponse(pieces(), media_type="application/json")


RunRequest = request_model("RunRequest", exclude=("executor", "scheduler", "counts"))
"""The body of POST /api/runs: `RunSettings`' fields (generated from it), but for where the
trainings run (a client never makes this server connect to another host) and imported counts
(files on this server: a client never names one; `analyzer run --counts` imports them, and the
service shows them like any vocabulary)."""


RUNS_PATH = "/api/runs"


@router.post("/runs", status_code=202, summary="Start a run, or queue it behind the one in progress")
async def start_run(request: Request, body: RunRequest,  # type: ignore[valid-type]
                    idempotency_key: Annotated[str | None, Header(
                        alias=idempotency.HEADER, description="A key of the client's (a UUID): "
                        "the same request sent again with it starts nothing more, and gets the "
                        "first one's answer")] = None) -> Response:
    """A run starts at once when none is in progress or waiting (the answer names it: `run`);
    otherwise it waits in the queue (the answer is its entry: `id`, `position`, `url`). The
    settings are checked either way before anything is stored. Every wait (another process's
    lock on the database) is within the server's --lock-wait, in all."""
    fields = body.model_dump()  # type: ignore[attr-defined]
    if _named_tokenizers(fields["tokenizers"]):
        raise SettingsRefused(every_refusal(request, fields))

    def submit(budget: WaitBudget | None) -> dict:
        try:
            return request.app.state.runs.submit(RunSettings(**fields), budget)
        except (Invalid, NotFound) as error:
            found = every_refusal(request, fields) if error.setting is not None else []
            if not found:
                raise
            raise SettingsRefused(found) from None

    async def make() -> dict:
        return await writing(request, submit)

    if idempotency_key is None:
        return JSONResponse(await make(), status_code=202)
    answer, replayed = await request.app.state.replays.answer(
        idempotency.checked_key(idempotency_key), idempotency.fingerprint(fields),
        budget_of(request), make)
    return JSONResponse(answer, status_code=202,
                        headers={idempotency.REPLAYED: "true"} if replayed else None)


def _named_tokenizers(specs: list[str]) -> list[AnalyzerError]:
    """The service's own refusal of the tokenizers: names only (the catalog's, all-available,
    hf:ORG/NAME), for a client never names a file on this server."""
    for spec in specs:
        if spec != ALL_AVAILABLE and spec not in catalog() and not spec.startswith("hf:"):
            return [NotFound(f"unknown tokenizer {spec!r}: the service measures catalog "
                             f"tokenizers ({', '.join(catalog())}), {ALL_AVAILABLE} and "
                             "hf:ORG/NAME", setting="tokenizers", value=spec)]
    return []


def every_refusal(request: Request, values: dict, refused: list[AnalyzerError] | None = None
                  ) -> list[AnalyzerError]:
    """Every refusal of a run's settings (`analyzer.runs.refusals`), `refused` first, as a
    client may see them; `values` without the fields `refused` names."""
    refused = list(refused or []) + _named_tokenizers(values.get("tokenizers") or [])
    databases = request.app.state.databases
    with databases.connection() as db:
        found = refusals(db, values, refused)
    return [databases.shown(error) for error in found]


@router.delete("/runs/{run_id}", summary="Interrupt a run in progress")
async def stop_run(request: Request, run_id: RunId) -> Response:
    """200 with how the run ended (`interrupted`, marked so, nothing partial stored, as on
    Ctrl-C) once its process has ended; 202 (`interrupting`) when it has not within the
    server's --lock-wait (it may be waiting for another process's lock to mark its run), and
    GET /api/runs/{id} says when it has; 409 when this server is not running it, or it
    completed before it could be interrupted."""
    runs = request.app.state.runs
    found = await in_database(request, lambda db: get_run(db, run_id))
    if found.status == RunStatus.COMPLETE or not runs.stop(run_id):
        raise NotRunning(f"run {run_id} is {found.status}: this server is not running it, "
                         "so there is nothing to interrupt")
    budget = budget_of(request)
    with budget.waiting() if budget is not None else nullcontext(MAX_WAIT) as left:
        ended = await runs.wait_for_end(run_id, left)
    after = await in_database(request, lambda db: get_run(db, run_id))
    if not ended:
        return JSONResponse({"run": run_id, "status": "interrupting", "error": None,
                             "url": f"/api/runs/{run_id}"}, status_code=202)
    if after.status == RunStatus.COMPLETE:
        raise NotRunning(f"run {run_id} completed before it could be interrupted; nothing was "
                         "stopped, and its results are stored")
    return JSONResponse({"run": run_id, "status": after.status.value, "error": after.error})


QueuedId = Annotated[int, Path(ge=1, le=MAX_ID, description="A queued run's id (GET /api/queue)")]


@router.get("/queue", response_model=list[QueuedRunRead],
            summary="The runs waiting their turn (or starting), in order")
def queue(db: Database, all: bool = False):
    """`all`: every entry ever queued, started, cancelled and refused ones too."""
    return queued_runs(db, active_only=not all)


@router.get("/queue/{queued_id}", summary="A queued run: its position, or what became of it")
async def queued(request: Request, queued_id: QueuedId, after: int | None = Query(None, ge=0),
                 wait: float = Query(0, ge=0, le=MAX_WAIT)) -> JSONResponse:
    """Its `position` while it waits; once started, `run` (GET /api/runs/{run}). A long poll
    with `after` and `wait`, as GET /api/runs/{id}."""
    runs = request.app.state.runs
    changes = await runs.wait_for_change(after, wait)
    entry = await in_database(request, lambda db: get_queued(db, queued_id))
    return JSONResponse(runs.queued_document(entry), headers={CHANGES_HEADER: str(changes)})


@router.delete("/queue/{queued_id}", summary="Cancel a queued run that is still waiting")
async def cancel(request: Request, queued_id: QueuedId) -> dict:
    runs = request.app.state.runs
    return runs.queued_document(await writing(request, lambda budget: runs.cancel(queued_id, budget)))


class TokenizeRequest(BaseModel):
    """A text under a run's trained vocabulary (`run`, `vocab`, `size`) or a catalog tokenizer.
    Each value of its own JSON type (strict: `true` is not run 1, nor `"1"`)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    text: str
    run: int | None = Field(None, ge=1, le=MAX_ID)
    vocab: str = SHARED_SCOPE
    size: Size = None
    pretokenizer: str | None = None
    tokenizer: str | None = None


MAX_WORK = 4_000_000
"""The bytes of text one request may have counted, summed over the vocabularies that count it
(a 400 KB text under ten tokenizers): more is refused (422), so that no request holds a
counting process for long."""
MAX_PIECES_WORK = 1_000_000
"""The same with `pieces`, each of which is sent back."""
INLINE_WORK = 4_096
"""Counting this little is done at once in the server's process (microseconds, less than the
hop to a counting process), its vocabularies loaded there on the thread pool; anything more
goes to the counting processes."""


def _work(texts: list[str], vocabularies: int, pieces: bool) -> int:
    """The bytes a request asks to count; Invalid when they are over the limit."""
    work = sum(len(text.encode("utf-8", errors="surrogatepass")) for text in texts) * vocabularies
    limit = MAX_PIECES_WORK if pieces else MAX_WORK
    if work > limit:
        raise Invalid(f"this request asks to count {work:,} bytes of text ({vocabularies} "
                      f"vocabularies x the texts' bytes); one request counts at most "
                      f"{limit:,}{' with pieces' if pieces else ''}: send shorter texts or fewer "
                      "vocabularies", value=work)
    return work


async def _count(request: Request, keys: list[tuple], work: int,
                 question: counting.Tokenize | counting.Compare) -> Response:
    """The answer, counted in this process when it is little work, else in a counting process
    (503 when all are busy)."""
    databases = request.app.state.databases
    databases.check_present()
    database = counting.DatabaseRef(str(databases.path), databases.checked.identity)
    if work <= INLINE_WORK:
        for key in keys:
            if counting.loaded(key) is None:
                await run_in_threadpool(counting.load, database, key)
        body = counting.answer(database, keys, question)
    else:
        body = await request.app.state.counting.run(counting.answer, database, keys, question)
    return Response(body, media_type="application/json")


@router.post("/tokenize", summary="A text's pieces, ids and count")
async def tokenize(request: Request, body: TokenizeRequest) -> Response:
    if (body.run is None) == (body.tokenizer is None):
        raise Invalid("give either run (with vocab and size) or tokenizer")
    if body.tokenizer is not None:
        key = _tokenizer_key(body.tokenizer)
    else:
        assert body.run is not None
        key = ("trained", body.run, body.vocab, body.size, body.pretokenizer)
    work = _work([body.text], 1, pieces=True)
    return await _count(request, [key], work,
                        counting.Tokenize(body.text, body.tokenizer or body.vocab))


class CompareRequest(BaseModel):
    """The same content in several languages, under a run's vocabularies and catalog tokenizers
    (strict, as `TokenizeRequest`)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    texts: dict[str, str] = Field(examples=[{"eng_Latn": "The cat sat.", "rus_Cyrl": "Кот сидел."}])
    run: int | None = Field(None, ge=1, le=MAX_ID)
    vocabs: list[str] | None = Field(None, max_length=MAX_VOCABULARIES)
    """The run's trained vocabularies to use (default: all of them)."""
    size: Size = None
    tokenizers: list[str] = Field(default_factory=list, max_length=MAX_VOCABULARIES)
    pivot: str | None = None
    pieces: bool = False


@router.post("/compare", summary="Tokens per language per vocabulary, and premiums vs a pivot")
async def compare(request: Request, body: CompareRequest) -> Response:
    if len(body.texts) > MAX_LANGUAGES:
        raise Invalid(f"at most {MAX_LANGUAGES} texts")
    if body.run is None and not body.tokenizers:
        raise Invalid("give a run, tokenizers, or both")
    keys: dict[str, tuple] = {}
    if body.run is not None:
        run_id, size = body.run, body.size
        trained = await in_database(request, lambda db: _trained(db, run_id, size))
        for scope in dict.fromkeys(body.vocabs if body.vocabs is not None else trained):
            # `size` is the trained vocabularies'; an extension counts with all its additions.
            extension = scope in trained and trained[scope].kind.extends
            keys[scope] = ("trained", run_id, scope, None if extension else size, None)
    for name in dict.fromkeys(body.tokenizers):
        keys[name] = _tokenizer_key(name)
    work = _work(list(body.texts.values()), len(keys), body.pieces)
    return await _count(request, list(keys.values()), work,
                        counting.Compare(body.texts, list(keys), body.pivot, body.pieces))


def _trained(db: AnalyzerDatabase, run_id: int, size: int | None = None) -> dict[str, VocabularyId]:
    """The run's trained vocabularies by scope; at a size the run did not train, without its
    Unigram and WordPiece ones (each has its trained sizes only: asked for one, it says which)."""
    run = complete_run(db, run_id)
    return {v.scope: v.identity for v in vocabularies(db, run_id) if v.kind.trained and (
        v.kind.has_merges or size is None or size in run.sizes)}


@router.get("/tokenizers", summary="The tokenizer catalog, and which are available here")
def tokenizers() -> list[dict]:
    return [tokenizer_document(availability(item)) for item in catalog().values()]


def _tokenizer_key(name: str) -> tuple:
    if name not in catalog():  # never a path: clients name catalog entries only
        raise NotFound(f"unknown tokenizer {name!r}; the catalog has: {', '.join(catalog())}")
    return ("tokenizer", name)
