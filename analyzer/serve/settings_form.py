"""The new-run form, made from the run settings' own definition.

Every field of the service's run request (`api.RunRequest`, generated from `RunSettings`) is
one control, chosen by its type: a checkbox for a flag, a number (typed as text, which the
server checks against its bounds), a choice among its allowed values, a list written as text.
Its label is its title, its help its description, its value its default: nothing about a
setting is written here a second time (its name, which the server's messages use, closes its
help). Before them all, the form asks what the person wants (`GOALS`: measure production
tokenizers, train vocabularies, or both); a setting of some goals only (`FOR_GOAL`) is shown,
and sent, for those alone. What only the server knows is offered as choices: the stored
corpora and the catalog tokenizers, with "all available" and a text entry for any other the
setting takes (hf:ORG/NAME).

    form = settings_form(RunRequest, corpora=["harbour_town"], tokenizers={"llama3": True})

The page's script (`static/workflow.js`) reads each control by its `data-kind` and sends the
JSON body of POST /api/runs; an empty control is left out (the default applies).
"""

from __future__ import annotations

import types
import typing
from html import escape
from typing import Annotated, Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from analyzer.bpe.pretokenize import USER_AROUND_PREFIX, USER_PREFIX
from analyzer.external import ALL_AVAILABLE

FIRST = ("tokenizers", "corpus", "sizes", "per_language", "languages", "pivot", "pretokenizers",
         "algorithms", "parity")
"""The settings shown first, in this order; the others follow under "More settings", in their
definition's order. (Which to show first is the page's choice; what each one is, is not.)"""

GOALS = (("measure", "Measure production tokenizers",
          "what each language costs under the tokenizers people pay for (no training, no size)"),
         ("train", "Train vocabularies",
          "how each language's cost changes with a vocabulary's size, trained on the corpus"),
         ("both", "Both", "trained vocabularies and production tokenizers, side by side"))
"""The form's first question, what the person wants: (value, label, what it gives)."""
FOR_GOAL = {"tokenizers": ("measure", "both"), "sizes": ("train", "both"),
            "per_language": ("train", "both"), "pretokenizers": ("train", "both"),
            "algorithms": ("train", "both"), "parity": ("train", "both")}
"""The settings that belong to some goals only: shown, and sent, for those alone (measuring
sends no size, training no tokenizer); the others belong to every goal."""
PATTERN_PREFIXES = (USER_PREFIX, USER_AROUND_PREFIX)
"""A list item starting so is a pattern, taken whole (commas and all), as the command line
takes it."""


def kind_of(info: FieldInfo) -> str:
    """The control a setting gets, by its type: bool, int, float, choice, text, ints, choices,
    texts or weights (a mapping of language to number).

    >>> from analyzer.settings import RunSettings
    >>> fields = RunSettings.__pydantic_fields__
    >>> [kind_of(fields[name]) for name in ("parity", "seed", "holdout", "tie_break", "sizes")]
    ['bool', 'int', 'float', 'choice', 'ints']
    >>> [kind_of(fields[name]) for name in ("algorithms", "languages", "weights", "pivot")]
    ['choices', 'texts', 'weights', 'text']
    """
    annotation = _bare(info.annotation)
    origin = typing.get_origin(annotation)
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    if origin is dict:
        return "weights"
    if origin is list:
        item = _bare(typing.get_args(annotation)[0])
        if item is int:
            return "ints"
        return "choices" if "items" in extra else "texts"
    if annotation is bool:
        return "bool"
    if annotation is int:
        return "int"
    if annotation is float:
        return "float"
    return "choice" if "enum" in extra else "text"


def _bare(annotation: Any) -> Any:
    """The type without its Annotated metadata and without None."""
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(arguments) == 1:
        return _bare(arguments[0])
    return annotation


def _default(info: FieldInfo) -> Any:
    return info.get_default(call_default_factory=True)


def _choices(info: FieldInfo) -> list[str]:
    """A setting's allowed values (its own, or its list's items')."""
    extra: dict[str, Any] = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    found = extra.get("enum") or (extra.get("items") or {}).get("enum") or []
    return [str(value) for value in found]


def _text(value: Any) -> str:
    """A default as the control shows it: a list as comma-separated items, nothing for None."""
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return ", ".join(f"{key}={number}" for key, number in value.items())
    return str(value)


def control(name: str, info: FieldInfo, *, corpora: list[str], corpus: str | None,
            tokenizers: dict[str, bool]) -> str:
    """One setting's control, labelled, with its description and a place for its error."""
    kind = "choices" if name == "tokenizers" else kind_of(info)  # offered: the catalog's
    default = _default(info)
    field_id = f"setting-{name}"
    attributes = f"id='{field_id}' name='{name}' data-setting='{name}' data-kind='{kind}'"
    described = f" aria-describedby='{field_id}-help {field_id}-error'"
    if name == "corpus":
        options = "".join(f"<option{' selected' if item == corpus else ''}>{escape(item)}</option>"
                          for item in corpora)
        widget = f"<select {attributes}{described}>{options}</select>"
    elif name == "tokenizers" or kind == "choices":
        if name == "tokenizers":
            items = [(ALL_AVAILABLE, "all available (every one this server has)", False)]
            items += [(item, f"{item}{'' if ready else ' (not on this server)'}", not ready)
                      for item, ready in tokenizers.items()]
        else:
            items = [(item, item, False) for item in _choices(info)]
        boxes = "".join(
            f"<label class='choice'><input type='checkbox' value='{escape(value, quote=True)}'"
            f"{' checked' if value in (default or []) else ''}{' disabled' if off else ''}> "
            f"{escape(label)}</label>" for value, label, off in items)
        widget = (f"<div {attributes} role='group' aria-labelledby='{field_id}-label'"
                  f"{described}>{boxes}</div>")
        if name == "tokenizers":  # what no box can say: the hub's (hf:ORG/NAME)
            title = _title(name, info)
            widget += (f"<label class='more' for='{field_id}-more'>Other "
                       f"{escape(title[:1].lower() + title[1:])}</label> "
                       f"<textarea id='{field_id}-more' data-adds='{name}' rows='2' "
                       "placeholder='hf:ORG/NAME, one a line or comma-separated'"
                       f"{described}></textarea>")
    elif kind == "bool":
        widget = (f"<input type='checkbox' {attributes}{' checked' if default else ''}"
                  f"{described}>")
    elif kind == "choice":
        options = "".join(f"<option{' selected' if item == default else ''}>{escape(item)}</option>"
                          for item in _choices(info))
        widget = f"<select {attributes}{described}>{options}</select>"
    elif kind in ("int", "float"):
        # Text, not type='number': a number field gives a script "" for what is not a number
        # (abc, Infinity), which would be dropped and the default used without a word. The
        # text typed is sent, and refused at this field if it is not a number in bounds.
        mode = "decimal" if kind == "float" else "numeric"
        widget = (f"<input type='text' inputmode='{mode}' {attributes} "
                  f"placeholder='{escape(_text(default) or 'default')}'{described}>")
    else:
        examples = info.examples[0] if info.examples else None
        # Its default (sizes: none, so that measuring trains nothing), an example beside it.
        placeholder = f"e.g. {_text(examples)}" if examples else "default"
        widget = (f"<input type='text' {attributes} value='{escape(_text(default), quote=True)}'"
                  f"{' required' if info.is_required() else ''}"
                  f" placeholder='{escape(placeholder, quote=True)}'{described}>")
    goals = FOR_GOAL.get(name)
    shown_for = f" data-goals='{' '.join(goals)}'" if goals else ""
    # Labelled in words (its title); its name, which the messages use, closes its help.
    return (f"<div class='setting' data-for='{name}'{shown_for}>"
            f"<label id='{field_id}-label' for='{field_id}'>{escape(_title(name, info))}</label> "
            f"{widget}<p class='help muted' id='{field_id}-help'>{escape(info.description or '')} "
            f"(setting <code class='muted'>{escape(name)}</code>)</p>"
            f"<p class='error' id='{field_id}-error' role='alert' hidden></p></div>")


def _title(name: str, info: FieldInfo) -> str:
    """What a setting is called to a reader: its definition's title (its name if it has none)."""
    return info.title or name


def goal_choice(goal: str) -> str:
    """The form's first question: what the person wants (`GOALS`), `goal` chosen."""
    choices = "".join(
        f"<label class='goal'><input type='radio' name='goal' value='{value}'"
        f"{' checked' if value == goal else ''}> <strong>{escape(label)}</strong>: "
        f"{escape(gives)}</label>" for value, label, gives in GOALS)
    return (f"<fieldset id='goal'><legend>What do you want to know?</legend>{choices}"
            "</fieldset>")


def settings_form(model: type[BaseModel], *, corpora: list[str], corpus: str | None = None,
                  tokenizers: dict[str, bool]) -> str:
    """The whole form: what the person wants (measuring when this server has a production
    tokenizer, else training), the first settings, then the rest under "More settings" (its
    page's data gives its script the `PATTERN_PREFIXES`)."""
    fields = model.model_fields
    names = [name for name in FIRST if name in fields] + [n for n in fields if n not in FIRST]

    def made(name: str) -> str:
        return control(name, fields[name], corpora=corpora, corpus=corpus, tokenizers=tokenizers)

    first = "".join(made(name) for name in names if name in FIRST)
    rest = "".join(made(name) for name in names if name not in FIRST)
    goal = "measure" if any(tokenizers.values()) else "train"
    return ("<form id='new-run' novalidate>"
            f"<p class='error' id='form-error' role='alert' hidden></p>{goal_choice(goal)}{first}"
            f"<details><summary>More settings</summary>{rest}</details>"
            "<p><button type='submit' disabled>Start the run</button> <span id='form-status' "
            "class='muted' role='status'></span></p></form>")
