"""Training sources in the database: registered by reference (each file's path, size, time and
SHA-256, and what it holds), listed, described and removed. The text itself is never copied."""

from __future__ import annotations

import json
from typing import Any

from sqlmodel import col, select

from analyzer.corpus import language_name, lone_surrogate
from analyzer.corpus.sources import ScannedSource
from analyzer.errors import Conflict, did_you_mean

from .corpora import check_corpus_name
from .db import AnalyzerDatabase, write_transaction
from .errors import NotFound
from .models import SourceDetail, SourceFile, SourceFileRow, SourceLanguage, SourceRead, SourceRow
from .session import session
from .values import inserted_id, now


def save_source(db: AnalyzerDatabase, name: str, scanned: ScannedSource, *, documents: str,
                text_field: str, replace: bool = False, origin: dict | None = None) -> str:
    """Register the scanned source under `name` in one transaction; "created", "replaced" or
    "unchanged" (the same files, untouched, read the same way, from the same place). Another
    source of that name is a Conflict unless `replace`. `origin`: where a hub source's files
    were fetched from (`analyzer.corpus.hub_sources`)."""
    check_corpus_name(name, what="source")
    said = json.dumps(origin, sort_keys=True) if origin is not None else None
    with write_transaction(db):
        existing = db.execute("SELECT id, fingerprint, documents, text_field, origin FROM "
                              "sources WHERE name = ?", [name]).fetchone()
        if existing and tuple(existing[1:]) == (scanned.fingerprint, documents, text_field, said):
            stamps = db.execute("SELECT path, mtime_ns FROM source_files WHERE source_id = ? "
                                "ORDER BY position", [existing[0]]).fetchall()
            if stamps == [(str(f.path), f.mtime_ns) for f in scanned.files]:
                return "unchanged"
        if existing and not replace:
            raise Conflict(f"a source named {name!r} is already registered, with other files or "
                           "settings; pass {setting:replace} to register it again, or choose "
                           "another name", setting="name", value=name)
        if existing:
            db.execute("DELETE FROM sources WHERE id = ?", [existing[0]])
        source_id = inserted_id(db.execute(
            "INSERT INTO sources (name, documents, text_field, fingerprint, created, origin) "
            "VALUES (?, ?, ?, ?, ?, ?)", [name, documents, text_field, scanned.fingerprint, now(),
                                          said]))
        db.conn.executemany(
            "INSERT INTO source_files (source_id, position, lang, path, size, mtime_ns, sha256, "
            "compression, format, bytes, documents, invalid_documents, invalid_bytes, problem) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(source_id, position, f.lang, str(f.path), f.size, f.mtime_ns, f.sha256,
              f.kind.compression, f.kind.format, f.bytes, f.documents, f.invalid_documents,
              f.invalid_bytes, f.problem) for position, f in enumerate(scanned.files)])
    return "replaced" if existing else "created"


def list_sources(db: AnalyzerDatabase) -> list[SourceRead]:
    """Every registered source, oldest first."""
    with session(db) as s:
        rows = s.exec(select(SourceRow).order_by(col(SourceRow.id))).all()
        return [_read(row, _files(s, row), SourceRead) for row in rows]


def get_source(db: AnalyzerDatabase, name: str) -> SourceDetail:
    """One source by name, with its languages and files; NotFound naming those there are."""
    with session(db) as s:
        row = s.exec(select(SourceRow).where(SourceRow.name == name)).first() \
            if lone_surrogate(name) is None else None  # such a name cannot be asked of SQLite
        if row is None:
            names = s.exec(select(SourceRow.name).order_by(col(SourceRow.id))).all()
            known = f" (registered: {', '.join(names)})" if names else \
                " (none is registered yet: analyzer sources add NAME PATH)"
            raise NotFound(f"no training source named {name!r}{did_you_mean(name, names)}{known}",
                           value=name)
        files = _files(s, row)
        detail = _read(row, files, SourceDetail)
        return detail


def remove_source(db: AnalyzerDatabase, name: str) -> None:
    """Forget a source (its files are left where they are; runs trained on it keep what they
    recorded of it)."""
    get_source(db, name)  # NotFound, naming the others
    with write_transaction(db):
        db.execute("DELETE FROM sources WHERE name = ?", [name])


def _files(s, row: SourceRow) -> list[SourceFile]:
    found = s.exec(select(SourceFileRow).where(SourceFileRow.source_id == row.id)
                   .order_by(col(SourceFileRow.position))).all()
    return [SourceFile(**item.model_dump(exclude={"source_id", "position"})) for item in found]


def _read(row: SourceRow, files: list[SourceFile], model):
    languages: dict[str, list[int]] = {}
    fields: dict[str, Any]
    for item in files:
        entry = languages.setdefault(item.lang, [0, 0, 0])
        entry[0] += 1
        entry[1] += item.bytes
        entry[2] += item.documents
    fields = dict(id=row.id, name=row.name, documents=row.documents, text_field=row.text_field,
                  fingerprint=row.fingerprint, created=row.created, languages=list(languages),
                  files=len(files), bytes=sum(item.bytes for item in files),
                  document_count=sum(item.documents for item in files),
                  origin=json.loads(row.origin) if row.origin is not None else None)
    if model is SourceDetail:
        fields["language_stats"] = [SourceLanguage(lang=lang, name=language_name(lang), files=n,
                                                   bytes=size, documents=docs)
                                    for lang, (n, size, docs) in languages.items()]
        fields["file_list"] = files
    return model(**fields)
