"""Bringing a corpus through the service (issue 43): `POST /api/corpora` takes what `analyzer
ingest` takes (a data file, or a zip of a corpus folder), with the same options, checks and
messages, names the client's file in them (never the server's temporary folders), stores
nothing on a refusal, and holds to the operator's size limit. Zips are also read by ingest."""

from __future__ import annotations

import io
import zipfile

import pytest

from helpers import TINY, cli_output, dump, invoke, problem_of, serving

httpx = pytest.importorskip("httpx", reason="the serve tests need httpx (pip install -e '.[test]')")
pytest.importorskip("fastapi", reason="analyzer serve needs the serve extra")


def zipped(files: dict[str, str | bytes], **infos) -> bytes:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            info = infos.get(name) or zipfile.ZipInfo(name)
            archive.writestr(info, content, compress_type=zipfile.ZIP_DEFLATED)
    return data.getvalue()


def folder_files(prefix: str = "mine/", **changed: str) -> dict[str, str]:
    files = {f"{prefix}{lang}.txt": "\n".join(lines) + "\n" for lang, lines in TINY.items()}
    files.update({f"{prefix}{name}": text for name, text in changed.items()})
    return files


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    yield from serving(tmp_path_factory.mktemp("uploads"), "--max-corpus-bytes", "200000",
                       run=False)


def upload(client, file_name: str, content: bytes, **fields):
    return client.post("/api/corpora", files={"file": (file_name, content)},
                       data={key: str(value).lower() if isinstance(value, bool) else value
                             for key, value in fields.items()})


@pytest.mark.slow
def test_a_zipped_folder_is_stored_as_ingest_would_and_again_is_unchanged(served, client, tmp_path):
    content = zipped(folder_files())
    answer = upload(client, "mine.zip", content)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["status"] == "created" and body["url"] == "/api/corpora/mine"
    corpus = body["corpus"]
    assert corpus["name"] == "mine" and corpus["units"] == 6 and corpus["format"] == "folder"
    assert sorted(corpus["languages"]) == sorted(TINY) and corpus["source"] == "upload:mine.zip"
    assert [s["lang"] for s in corpus["language_stats"]] == corpus["languages"]
    # The same digest as the CLI's ingest of the same folder.
    folder = tmp_path / "mine"
    folder.mkdir()
    for lang, lines in TINY.items():
        (folder / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cli_output(tmp_path / "cli.db", "ingest", folder)
    listed = cli_output(tmp_path / "cli.db", "corpora", "--json")
    assert corpus["content_hash"] in listed
    assert upload(client, "mine.zip", content).json()["status"] == "unchanged"
    assert "mine" in [c["name"] for c in client.get("/api/corpora").json()]


def test_a_tsv_with_options_and_a_name(client):
    text = "eng_Latn\trus_Cyrl\nthe cat\tкот\na mouse\t\nthe dog\tпёс\n"
    answer = upload(client, "pairs.tsv", text.encode(), name="pairs-named", skip_empty_units=True,
                    nfc=True)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["corpus"]["name"] == "pairs-named" and body["corpus"]["units"] == 2
    assert body["dropped_empty_units"] == 1 and body["corpus"]["nfc"] is True


@pytest.mark.parametrize(("name", "content", "said"), [
    ("bad.zip", zipped(folder_files(**{"eng_Latn.txt": "only one line\n"})),
     "misaligned: the files have different numbers of lines"),
    ("bad.tsv", b"eng_Latn\trus_Cyrl\nthe cat\n", "bad.tsv: row at line 2 has 1 cells"),
    ("bad.tsv", b"eng_Latn\trus_Cyrl\nthe \xffcat\tx\n", "bad.tsv"),
    ("escape.zip", zipped({"../../evil/eng_Latn.txt": "x\n"}), "would be written outside"),
    ("notzip.zip", b"PK\x03\x04 not really", "notzip.zip"),
    ("empty.zip", zipped({}), "holds no files"),
    ("unknown.bin", b"eng_Latn\tx\n", "unknown.bin: cannot tell the format from the name; pass format"),
])
def test_refusals_name_the_client_s_file_and_store_nothing(served, client, name, content, said):
    before = dump(served.db)
    detail = problem_of(upload(client, name, content), 422)
    assert said in detail, detail
    assert "analyzer-upload-" not in detail and "/tmp" not in detail, detail
    assert dump(served.db) == before


def test_a_file_whose_ending_says_nothing_is_read_in_the_format_given(client):
    answer = upload(client, "pairs.txt", "eng_Latn\trus_Cyrl\nthe cat\tкот\n".encode(), format="tsv")
    assert answer.status_code == 201, answer.text
    assert answer.json()["corpus"]["name"] == "pairs" and answer.json()["corpus"]["format"] == "tsv"


def test_a_link_in_an_archive_is_refused(served, client):
    link = zipfile.ZipInfo("mine/eng_Latn.txt")
    link.external_attr = (0o120777 << 16)
    detail = problem_of(upload(client, "link.zip", zipped({"mine/eng_Latn.txt": "/etc/passwd"},
                                                           **{"mine/eng_Latn.txt": link})), 422)
    assert "symbolic link" in detail


def test_a_name_taken_by_other_content_is_a_conflict_unless_replaced(client):
    assert upload(client, "taken.tsv", b"eng_Latn\trus_Cyrl\na\tb\n").status_code == 201
    detail = problem_of(upload(client, "taken.tsv", b"eng_Latn\trus_Cyrl\nc\td\n"), 409)
    assert "already exists" in detail and "replace" in detail
    assert upload(client, "taken.tsv", b"eng_Latn\trus_Cyrl\nc\td\n",
                  replace=True).json()["status"] == "replaced"


def test_the_corpus_size_limit_holds_as_sent_and_unpacked(served, client):
    detail = problem_of(upload(client, "big.tsv", b"eng_Latn\trus_Cyrl\n" + b"a\tb\n" * 60_000), 413)
    assert "--max-corpus-bytes" in detail
    bomb = zipped(folder_files(**{"eng_Latn.txt": "a" * 300_000}))  # small zipped, large unpacked
    assert len(bomb) < 200_000
    assert "more than 200,000 bytes" in problem_of(upload(client, "bomb.zip", bomb), 422)
    unsized = client.post("/api/corpora", content=iter([b"x"]),
                          headers={"content-type": "multipart/form-data; boundary=x"})
    assert "Content-Length" in problem_of(unsized, 411)


def test_a_form_without_a_file_or_with_a_wrong_option_is_refused(client):
    assert "file" in problem_of(client.post("/api/corpora", data={"name": "x"}), 422)
    assert "units" in problem_of(upload(client, "a.tsv", b"eng_Latn\n", units="words"), 422)


def test_ingest_reads_a_zip_and_its_refusals_name_the_archive(tmp_path):
    archive = tmp_path / "mine.zip"
    archive.write_bytes(zipped(folder_files()))
    assert "Created corpus 'mine'" in cli_output(tmp_path / "a.db", "ingest", archive)
    broken = tmp_path / "broken.zip"
    broken.write_bytes(zipped(folder_files(**{"kor_Hang.txt": "\ufeffx\n" * 6 + "\x00\n"})))
    result = invoke(tmp_path / "a.db", "ingest", broken)
    assert result.exit_code != 0
    assert str(broken) in result.output and "analyzer-zip-" not in result.output, result.output


def test_uploads_read_at_once_are_bounded_in_number_and_space():
    from analyzer.serve.problems import ServerBusy
    from analyzer.serve.uploads import Uploads

    uploads = Uploads(limit=1_000, space=10_000, most=2)
    first = uploads.take(100)
    assert first == 1_200 and (uploads.now, uploads.reserved) == (1, 1_200)
    with pytest.raises(ServerBusy, match="temporary space"):
        uploads.take(4_000)  # 9,000 more would pass 10,000
    second = uploads.take(10)
    with pytest.raises(ServerBusy, match="as many as this server reads at once"):
        uploads.take(1)
    uploads.give_back(first)
    uploads.give_back(second)
    assert (uploads.now, uploads.reserved) == (0, 0)  # freed again


def test_an_upload_the_temporary_disk_cannot_hold_is_refused_before_it_is_read(monkeypatch):
    """507 (DiskFull) when the temporary folder's disk has less free than the upload may need;
    no slot or space stays taken."""
    import shutil

    from analyzer.serve.uploads import Uploads
    from analyzer.store import DiskFull

    uploads = Uploads(limit=1_000, space=10_000, most=2)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(9, 8, 1_199))
    with pytest.raises(DiskFull, match="1,199 bytes free, and this upload may need 1,200"):
        uploads.take(100)
    assert (uploads.now, uploads.reserved) == (0, 0)
    assert uploads.take(99) == 1_198  # what fits is taken
