"""TMX 1.4 translation memories: `<tu>` units of `<tuv xml:lang>` variants holding a `<seg>`.

Parsed with defusedxml, so entity declarations (billion laughs) and external entities are
refused instead of expanded. The file's own encoding declaration is honoured (TMX is often
UTF-16).
"""

from __future__ import annotations

from pathlib import Path
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from .errors import CorpusError
from .readers import RawCorpus

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
NATIVE_CODE = {"bpt", "ept", "ph", "it", "ut"}
"""Inline elements holding the original format's markup, not text: left out of a segment."""


def read_tmx(path: Path) -> RawCorpus:
    try:
        root = fromstring(path.read_bytes())
    except DefusedXmlException as error:
        raise CorpusError(f"{path}: refused unsafe XML ({error})") from None
    except ParseError as error:
        line, column = error.position
        raise CorpusError(f"{path}: not well-formed XML at line {line}, column {column}") from None
    except OSError as error:
        raise CorpusError(f"{path}: cannot read ({error.strerror})") from None
    units = root.findall("./body/tu")
    if not units:
        raise CorpusError(f"{path}: no <tu> units in <body>")
    rows: list[dict[str, str]] = []
    labels, unit_ids = [], []
    for number, tu in enumerate(units, start=1):
        tuid = tu.get("tuid")
        label = f"tu {number}" + (f" (tuid {tuid})" if tuid else "")
        row = {}
        for tuv in tu.findall("tuv"):
            code = tuv.get(XML_LANG) or tuv.get("lang")
            if not code:
                raise CorpusError(f"{path}: {label}: a <tuv> has no xml:lang")
            if code in row:
                raise CorpusError(f"{path}: {label}: two variants for {code}")
            seg = tuv.find("seg")
            row[code] = segment_text(seg) if seg is not None else ""
        rows.append(row)
        labels.append(label)
        unit_ids.append(tuid)
    languages = list(dict.fromkeys(code for row in rows for code in row))
    for row, label in zip(rows, labels):
        missing = [code for code in languages if code not in row]
        if missing:
            raise CorpusError(f"{path}: misaligned: {label} has no {', '.join(missing)} "
                              f"({len(row)} of {len(languages)} languages)")
    columns = {code: [row[code] for row in rows] for code in languages}
    return RawCorpus(columns, dict.fromkeys(languages, path.name), labels, unit_ids)


def segment_text(element: Element) -> str:
    """The text of a <seg>, inline formatting kept, native codes left out. Walked with a stack
    of its own, not by recursion: markup nested as deep as a file likes is still read.

    >>> segment_text(fromstring("<seg>a<b>b<ph>x</ph>c</b>d</seg>"))
    'abcd'
    """
    parts = [element.text or ""]
    stack = [(iter(element), "")]  # each open element's children, and its tail to write after
    while stack:
        child = next(stack[-1][0], None)
        if child is None:
            parts.append(stack.pop()[1])
            continue
        if child.tag in NATIVE_CODE:
            parts.append(child.tail or "")
            continue
        parts.append(child.text or "")
        stack.append((iter(child), child.tail or ""))
    return "".join(parts)
