"""The pages a person without a terminal works through: bring a corpus, start a run, watch it
(or its place in the queue), then read its report.

Each page is a form or a view over the JSON API, driven by one script (`static/workflow.js`)
that sends what the API takes and shows what it answers, refusals included, where the person
can act on them. Everything from a corpus or a client is escaped here and set as text there.
"""

from __future__ import annotations

from html import escape
from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse

from analyzer.corpus import DEFAULT_SPLIT, FLORES_SPLITS, FORMATS, UNIT_KINDS
from analyzer.external import availability, catalog
from analyzer.store import RunRead, RunStatus, get_queued, list_corpora

from .api import MAX_ID, RunRequest
from .html import behind_token, layout, page, scripts
from .settings_form import PATTERN_PREFIXES, settings_form
from .state import Database
from .uploads import CORPORA_PATH

router = APIRouter(include_in_schema=False)

SCRIPT = scripts("workflow.js")


def _options(values, default: str | None = None, empty: str | None = None) -> str:
    first = f"<option value=''>{escape(empty)}</option>" if empty is not None else ""
    return first + "".join(f"<option{' selected' if value == default else ''}>{escape(value)}</option>"
                           for value in values)


def _split_options() -> str:
    """FLORES's splits, each once: the default first, sent empty (a corpus that is not FLORES
    is refused a split: the server's default applies to FLORES alone)."""
    return _options([split for split in FLORES_SPLITS if split != DEFAULT_SPLIT],
                    empty=DEFAULT_SPLIT)


NEW_CORPUS_PAGE = "/corpora/new"
"""The page that brings a corpus (an upload), which `analyzer serve` names on a new database."""


@router.get(NEW_CORPUS_PAGE, response_class=HTMLResponse)
def bring_corpus(request: Request):
    """The upload form: a file and ingest's options."""
    limit = request.app.state.uploads.limit
    body = (
        "<p class='lead'>A parallel corpus: the same units (sentences, paragraphs) in each "
        "language. A zip of a folder of <code>&lt;lang&gt;.txt</code> files, aligned line by line "
        "(<code>eng_Latn.txt</code>, <code>hin_Deva.txt</code>, ...), or a .tsv, .csv, .jsonl, "
        ".parquet or .tmx file with a column per language, as <code>analyzer ingest</code> reads "
        f"them. At most {limit:,} bytes.</p>"
        "<form id='upload' novalidate>"
        "<p class='error' id='form-error' role='alert' hidden></p>"
        "<div class='setting'><label for='upload-file'>File</label> "
        "<input id='upload-file' type='file' name='file' required></div>"
        "<div class='setting'><label for='upload-name'>Name</label> "
        "<input id='upload-name' type='text' name='name' placeholder='default: the file name'></div>"
        "<details><summary>Options</summary>"
        "<div class='setting'><label for='upload-format'>Format</label> "
        f"<select id='upload-format' name='format'>{_options(FORMATS, empty='detected')}</select></div>"
        "<div class='setting'><label for='upload-units'>Units</label> "
        f"<select id='upload-units' name='units'>{_options(UNIT_KINDS, 'lines')}</select> "
        "<span class='muted'>(a folder's files: a unit per line, or per blank-line-separated "
        "paragraph)</span></div>"
        "<div class='setting'><label for='upload-split'>FLORES split</label> "
        f"<select id='upload-split' name='split'>{_split_options()}</select></div>"
        "<div class='setting'><label><input type='checkbox' name='nfc' value='true'> Normalise "
        "texts to Unicode NFC</label></div>"
        "<div class='setting'><label><input type='checkbox' name='skip_empty_units' value='true'> "
        "Drop units empty in any language</label></div>"
        "<div class='setting'><label><input type='checkbox' name='replace' value='true'> Replace "
        "a corpus of the same name</label></div></details>"
        "<p><button type='submit' disabled>Bring it</button> <span id='form-status' class='muted' "
        "role='status'></span></p></form><div id='stored' hidden></div>")
    return page(layout("Bring a corpus", body, SCRIPT, data={"action": CORPORA_PATH, "limit": limit},
                       signed_in=behind_token(request)))


@router.get("/runs/new", response_class=HTMLResponse)
def new_run(request: Request, db: Database, corpus: str | None = None):
    """The new-run form, from the run settings' definition (`settings_form`)."""
    names = [item.name for item in list_corpora(db)]
    if not names:
        body = ("<p id='first-step'>No corpus yet: <a href='/corpora/new'>bring one</a> "
                "first.</p>")
        return page(layout("New run", body, signed_in=behind_token(request)))
    tokenizers = {name: availability(item).available for name, item in catalog().items()}
    lead = ("<p class='lead'>What each language costs in tokens: trained vocabularies at each "
            "size, and the production tokenizers you tick, measured on the corpus. A run waits "
            "its turn if another is in progress.</p>")
    form = settings_form(RunRequest, corpora=names, corpus=corpus if corpus in names else None,
                         tokenizers=tokenizers)
    return page(layout("New run", lead + form, SCRIPT, data={"patterns": list(PATTERN_PREFIXES)},
                       signed_in=behind_token(request)))


def run_progress_page(found: RunRead, signed_in: bool = False):
    """A run not complete yet, or that never will be: while it runs, how much of it is done,
    for how long it has run and how long it has left, then each job's line, live
    (`progress.RunProgress`); else how it ended."""
    running = found.status == RunStatus.RUNNING
    overall = ("<div id='overall'><progress id='overall-bar' max='1' value='0'></progress> "
               "<strong id='overall-said'>Starting: loading the texts…</strong> "
               "<span class='muted' id='times'><span id='elapsed'></span> · <span id='left'>time left: "
               "estimating…</span></span></div>")
    body = (
        "<div id='watch'>"
        + (overall if running else "")
        + f"<p id='run-status' role='status' class='status-{escape(str(found.status))}'>"
        f"{escape(str(found.status))}</p>"
        f"<p class='error' id='run-error' role='alert'{'' if found.error else ' hidden'}>"
        f"{escape(found.error or '')}</p>"
        + ("<ul id='progress'></ul>" if running else "")
        + f"<p class='muted'>Corpus <strong>{escape(found.corpus)}</strong>, sizes "
        f"{escape(', '.join(map(str, found.sizes)) or 'none')}, {len(found.languages)} languages; "
        f"started {escape(found.started)}.</p>"
        + ("<p><button id='interrupt' type='button' disabled>Interrupt the run</button></p>"
           if running else "")
        + "</div>")
    return page(layout(f"Run {found.id}", body, SCRIPT,
                       data={"run": found.id, "status": str(found.status)}, signed_in=signed_in))


@router.get("/queue/{queued_id:int}", response_class=HTMLResponse)
def queued_page(request: Request, db: Database,
                queued_id: Annotated[int, Path(ge=1, le=MAX_ID)]):
    """A queued run: its place, live; once started, its run's page."""
    entry = get_queued(db, queued_id)
    settings = entry.settings
    body = (
        "<div id='queued'>"
        f"<p>Corpus <strong>{escape(entry.corpus or '')}</strong>, sizes "
        f"{escape(', '.join(map(str, settings.get('sizes') or [])) or 'none')}, tokenizers "
        f"{escape(', '.join(settings.get('tokenizers') or []) or 'none')}; asked for "
        f"{escape(entry.submitted)}.</p>"
        f"<p id='queue-status' role='status'>{escape(_place(entry.status, entry.position))}</p>"
        f"<p class='error' id='queue-error' role='alert'{'' if entry.error else ' hidden'}>"
        f"{escape(entry.error or '')}</p>"
        + ("<p><button id='cancel' type='button' disabled>Cancel it</button></p>"
           if entry.status == "waiting" else "")
        + "</div>")
    return page(layout(f"Queued run {entry.id}", body, SCRIPT,
                       data={"queued": entry.id, "status": str(entry.status), "run": entry.run},
                       signed_in=behind_token(request)))


def _place(status: str, position: int | None) -> str:
    if status == "waiting":
        return f"waiting: number {position} in the queue" if position else "waiting"
    return str(status)
