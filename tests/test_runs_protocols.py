"""runs/'s seams, typed (issue 70): both executors are `Executor`s, every builder a `JobBuilder`
or a `LocalBuilder` whose optional hooks are those `Hooks` documents, a run resolved is
never changed after, and a setting's choice is a type, refused as the settings are made."""

from __future__ import annotations

import dataclasses
import inspect
import types

import pytest

from analyzer.bpe.reference import TIE_BREAKS
from analyzer.settings import (
    CountConvention,
    ExecutorName,
    RunSettings,
    SettingsError,
    TieBreak,
    request_model,
    settings_errors,
)


def test_both_executors_are_executors():
    """The local pool and Dask give a run the same operations (mypy checks their signatures
    where `executor_for` yields either); an object short of one is not an executor."""
    from analyzer.runs.cluster import DaskExecutor
    from analyzer.runs.executor import Executor, LocalExecutor

    assert isinstance(LocalExecutor(1), Executor)
    assert isinstance(DaskExecutor(client=None), Executor)

    class NoMemoryCheck:
        run = count = LocalExecutor.run
        spread = LocalExecutor.spread

    assert not isinstance(NoMemoryCheck(), Executor)


def test_every_builder_is_a_job_or_a_local_builder_and_its_hooks_are_the_documented_ones():
    """Each registered builder satisfies exactly one protocol; every optional hook it has
    takes what `Hooks` says that hook takes (a hook renamed, or a parameter added, in a builder
    and not in the contract fails here); its `MEASURED_ALONE` names settings."""
    from analyzer.runs.builders import bpe
    from analyzer.runs.registry import BUILDERS, Hooks, JobBuilder, LocalBuilder

    assert len(BUILDERS) >= 7
    settings = {field.name for field in dataclasses.fields(RunSettings)}
    optional = [name for name in vars(Hooks) if not name.startswith("_")]
    assert set(optional) == {"MEASURED_ALONE", "check", "splitters", "place", "combine",
                             "stages", "local_costs"}
    for builder in BUILDERS:
        assert isinstance(builder, JobBuilder) != isinstance(builder, LocalBuilder), builder
        assert set(getattr(builder, "MEASURED_ALONE", ())) <= settings, builder
        for name in optional:
            own, default = getattr(builder, name, None), getattr(Hooks, name)
            if callable(own) and callable(default):
                assert list(inspect.signature(own).parameters) == \
                    list(inspect.signature(default).parameters), (builder, name)
    # A plug-in's builder is any object with the members: a namespace will do.
    assert isinstance(types.SimpleNamespace(KINDS=bpe.KINDS, plans=bpe.plans, build=bpe.build),
                      JobBuilder)
    assert not isinstance(types.SimpleNamespace(KINDS=bpe.KINDS, plans=bpe.plans), JobBuilder)


def test_hooks_a_builder_lacks_take_their_defaults():
    from analyzer.runs.builders import bpe, production
    from analyzer.runs.registry import Hooks, hook

    assert hook(bpe, "MEASURED_ALONE", Hooks.MEASURED_ALONE) == ()
    assert hook(production, "MEASURED_ALONE", Hooks.MEASURED_ALONE) == ("tokenizers",)
    assert hook(bpe, "check", Hooks.check) is Hooks.check
    assert Hooks.combine(["a record"]) == ["a record"]


def test_a_resolved_run_cannot_be_changed(tiny_db):
    """`resolve` makes the run whole, the builders' results in it: neither its fields nor
    what the builders made of their settings can be changed after."""
    from analyzer.runs import resolve_settings

    run = resolve_settings(tiny_db, RunSettings(sizes=[300], superbpe=[280]))
    assert run.made["superbpe"] == [280]  # gathered from the builders before it was made
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.made = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        run.made["superbpe"] = [270]  # type: ignore[index]
    with pytest.raises(TypeError):
        run.recorded["superbpe"] = [270]  # type: ignore[index]


@pytest.mark.parametrize("name, choices", [
    ("tie_break", "lexicographic, first"),
    ("executor", "local, dask"),
    ("count", "units, joined"),
])
def test_a_choice_outside_its_type_is_refused_naming_the_value_and_the_choices(name, choices):
    said = f"{name} must be one of {choices}, not 'other'"
    with pytest.raises(SettingsError) as refused:
        RunSettings(**{name: "other"})
    assert str(refused.value) == said and refused.value.setting == name
    # The service's request body: the same words, at the same setting.
    with pytest.raises(Exception) as invalid:
        request_model("Body").model_validate({name: "other"})
    [error] = settings_errors(invalid.value.errors())  # type: ignore[attr-defined]
    assert str(error) == said and error.setting == name


def test_choices_are_types_and_the_tie_breaks_are_the_engines():
    settings = RunSettings(tie_break="first", executor="dask", count="joined")
    assert settings.tie_break is TieBreak.FIRST and settings.executor is ExecutorName.DASK
    assert settings.count is CountConvention.JOINED
    assert tuple(TieBreak) == TIE_BREAKS  # the engine's own, in its order
