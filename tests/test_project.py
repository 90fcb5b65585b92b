"""The project's promises that can be checked mechanically: the README's commands, the
layering, the public API, and an install from a wheel."""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_ci_runs_exactly_the_readme_test_command():
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    test_command = ci_lines[-1].strip()
    assert test_command.endswith("python -m pytest")
    assert f"    {test_command}\n" in README


def test_every_command_is_in_the_readme():
    from typer.main import get_command

    from analyzer.cli import app

    commands = sorted(get_command(app).commands)  # type: ignore[attr-defined]
    assert len(commands) >= 10
    missing = [name for name in commands if f"`analyzer {name}" not in README]
    assert missing == [], f"commands the README does not show: {missing}"


def imports_of(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_the_bpe_core_imports_only_the_standard_library_and_regex():
    for path in (ROOT / "analyzer" / "bpe").glob("*.py"):
        for name in imports_of(path):
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top in ("__future__", "regex", "analyzer"), \
                f"{path.name}: {name}"
            if top == "analyzer":
                assert name.startswith("analyzer.bpe"), f"{path.name}: {name}"


def test_the_unigram_engine_imports_only_the_standard_library_and_the_bpe_core():
    for path in (ROOT / "analyzer" / "unigram").glob("*.py"):
        for name in imports_of(path):
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top in ("__future__", "analyzer"), \
                f"{path.name}: {name}"
            if top == "analyzer":
                assert name.startswith(("analyzer.bpe", "analyzer.unigram")), f"{path.name}: {name}"


def test_the_wordpiece_engine_imports_only_the_standard_library_and_the_engines_before_it():
    for path in (ROOT / "analyzer" / "wordpiece").glob("*.py"):
        for name in imports_of(path):
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top in ("__future__", "analyzer"), \
                f"{path.name}: {name}"
            if top == "analyzer":
                assert name.startswith(("analyzer.bpe", "analyzer.unigram", "analyzer.wordpiece")), \
                    f"{path.name}: {name}"


def declared(extra: str | None = None) -> set[str]:
    """The distributions pyproject.toml declares for the core (None) or an extra, with the
    extras an extra includes (`analyzer[serve,dask]`), normalised as PyPI names are."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    names = set()
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)
        included = re.search(r"\[([^\]]+)\]", requirement)
        if name == "analyzer" and included:
            for part in included.group(1).split(","):
                names |= declared(part.strip())
        else:
            names.add(re.sub(r"[-_.]+", "-", name).lower())
    return names if extra is None else names | declared()


def third_party_imports(folder: Path) -> dict[str, str]:
    """{top-level module: the first file importing it} for the .py files of a folder."""
    found: dict[str, str] = {}
    local = {path.stem for path in [*folder.glob("*.py"), *(ROOT / "tests").glob("*.py")]}
    local |= {"analyzer", "golden", "__future__"}  # (benchmarks use the tests' helpers)
    for path in sorted(folder.rglob("*.py")):
        for name in imports_of(path):
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in local:
                found.setdefault(top, str(path.relative_to(ROOT)))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("folder, extra", [("tests", "test"), ("benchmarks", "bench")])
def test_the_tests_and_benchmarks_import_only_what_their_extra_declares(folder, extra):
    """deptry checks the package; this checks the two folders beside it against their extras
    (a module is matched to its distribution by the installed metadata, else by its name)."""
    from importlib.metadata import packages_distributions

    owners = packages_distributions()
    allowed = declared(extra) | (declared("test") if extra == "bench" else set())
    undeclared = {}
    for module, where in third_party_imports(ROOT / folder).items():
        candidates = {re.sub(r"[-_.]+", "-", name).lower() for name in owners.get(module, [module])}
        if not candidates & allowed:
            undeclared[module] = where
    assert undeclared == {}, f"imported by {folder}/ but not declared in [{extra}]: {undeclared}"


LAYERS = ["version", "lazy", "bpe", "unigram", "wordpiece", "errors", "files", "interrupts",
          "identity", "settings", "headroom", "hub", "corpus", "limits", "store", "external",
          "runs", "metrics", "queries", "export", "report", "serve", "cli", "__main__",
          "__init__"]
"""Every module of the package, by the first name under `analyzer`, in floors: each may import
only from its own floor and those before it (DESIGN.md's order). `version` and `lazy` under
everything (`import analyzer` reads nothing else); the Unigram and WordPiece engines beside the
BPE core; `errors`, `files`, `interrupts`, `identity`, `settings`, `headroom` and `hub` the
ground every layer after the core stands on (the settings name the kinds' algorithms); `limits` the service's, which both faces read;
`queries` what the faces ask of stored runs, above the metrics; `cli` above `serve` (`analyzer
serve` starts it); the package's own `__init__` (its public names, loaded on first use) and
`__main__` on top."""


def layer_of(module: str) -> str:
    """`analyzer.runs.memory` -> `runs`; the package itself -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of the graph that runs up a floor (or from a module no floor names)."""
    found = []
    for module, targets in sorted(graph.items()):
        if layer_of(module) not in LAYERS:
            found.append(f"{module} is on no floor of LAYERS")
            continue
        for target in sorted(targets):
            if LAYERS.index(layer_of(target)) > LAYERS.index(layer_of(module)):
                found.append(f"{module} imports {target}")
    return found


def test_layers_import_only_from_the_layers_below_them():
    """Every import, relative ones and those inside functions included (before, relative
    imports went unseen: `cli.serve` importing `analyzer.serve`, three modules importing
    `__version__` from the package itself)."""
    graph = module_graph()
    assert {"analyzer.cli.serve", "analyzer.runs.memory", "analyzer"} <= set(graph)
    assert upward_imports(graph) == []


def test_the_layer_test_sees_an_upward_relative_import(tmp_path, monkeypatch):
    """The check itself: an upward import written relatively, inside a function, is found."""
    graph = module_graph()
    graph["analyzer.runs.memory"] = graph["analyzer.runs.memory"] | {"analyzer.report.page"}
    assert upward_imports(graph) == ["analyzer.runs.memory imports analyzer.report.page"]
    module = tmp_path / "analyzer" / "store" / "late.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    from ..report import page\n")
    (tmp_path / "analyzer" / "report").mkdir()
    (tmp_path / "analyzer" / "report" / "page.py").write_text("")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert upward_imports(module_graph()) == ["analyzer.store.late imports analyzer.report.page"]


def module_graph() -> dict[str, set[str]]:
    """Every module of the package and the package's modules it imports: at the top of the
    file or inside a function (what a type checker alone reads, under TYPE_CHECKING, aside);
    relative imports resolved; a package's submodule named in `from package import name`
    counted as itself."""
    package = ROOT / "analyzer"

    def name_of(path: Path) -> str:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {name_of(path): path for pattern in ("*.py", "*.pyi") for path in package.rglob(pattern)}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(inner) for node in ast.walk(tree)
                       if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                       for inner in ast.walk(node)}
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1] + [node.module or ""]).rstrip(".") \
                    if node.level else node.module or ""
                for alias in node.names:
                    found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        graph[name] = {target for target in found if target in modules and target != name}
    return graph


@pytest.mark.slow
def test_no_module_imports_itself_round_a_circle():
    """No import cycle among the package's modules, imports inside functions counted."""
    graph = module_graph()
    assert {"analyzer.runs.builders", "analyzer.identity", "analyzer.store.results"} <= set(graph)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    circles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                circles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == [], "import circles: " + "; ".join(" -> ".join(c) for c in circles)


LAZY_PACKAGES = sorted(".".join(path.relative_to(ROOT).parent.parts)
                       for path in (ROOT / "analyzer").rglob("__init__.py")
                       if "lazy_names(__name__" in path.read_text(encoding="utf-8"))
"""The packages that load their names on first use (`analyzer.lazy`)."""

LAZY = """
import importlib, json, pkgutil, sys
name = sys.argv[1]
package = importlib.import_module(name)
lazy = vars(package)["__getattr__"]
for info in pkgutil.iter_modules(package.__path__, name + "."):  # each submodule loaded first
    if not info.name.startswith(("analyzer.serve", "analyzer.runs.cluster", "analyzer.__main__")):
        importlib.import_module(info.name)
wrong = []
for exported, module in lazy.names.items():
    source = importlib.import_module(module, name)
    expected = getattr(source, exported) if hasattr(source, exported) else source
    if getattr(package, exported) is not expected:
        wrong.append(exported)
print(json.dumps({"lazy": sorted(lazy.names), "all": sorted(package.__all__), "wrong": wrong,
                  "eager": sorted(n for n in package.__all__ if n not in lazy.names
                                  and n in vars(package))}))
"""


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_name_a_package_loads_on_first_use_is_its_module_s_and_in_its_all(package):
    """Each name of a package that loads its names on first use is the object its module has,
    even once every submodule is loaded (a submodule named as one of the names shadows it:
    `analyzer.external.catalog`, a function in a module of that name, must be imported by the
    package itself); and the names listed equal `__all__`, but for those the package imports
    itself."""
    import json

    assert {"analyzer", "analyzer.store", "analyzer.corpus", "analyzer.external",
            "analyzer.report"} <= set(LAZY_PACKAGES)
    done = subprocess.run([sys.executable, "-c", LAZY, package], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["wrong"] == []
    assert sorted(found["lazy"] + found["eager"]) == found["all"]


RESOLVE_ALONE = """
import sys
from analyzer.corpus import read_corpus, SAMPLE_CORPUS
from analyzer.runs import RunSettings, refusals, resolve_settings
from analyzer.store import open_db, save_corpus
db = open_db(sys.argv[1])
save_corpus(db, read_corpus(SAMPLE_CORPUS), "sample")
assert refusals(db, {"sizes": [300], "parity": True}) == []
print(resolve_settings(db, RunSettings(sizes=[300], parity=True)).sizes)
"""


def test_the_runs_package_s_checks_have_every_builder_registered(tmp_path):
    """What the service asks of `analyzer.runs` before a run (its settings checked, and every
    refusal of them), in a process that imports nothing else: the builders that check the
    settings are there (loaded on first use, the package had none registered and refused
    every run: no builder builds the kind shared)."""
    done = subprocess.run([sys.executable, "-c", RESOLVE_ALONE, str(tmp_path / "a.db")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[300]"


SQL = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE TABLE)\b|\.execute\(")


def test_no_sql_outside_the_store():
    offenders = [str(path.relative_to(ROOT)) for path in (ROOT / "analyzer").rglob("*.py")
                 if "store" not in path.parts and SQL.search(path.read_text(encoding="utf-8"))]
    assert offenders == []


@pytest.mark.slow
def test_the_public_api_is_the_declared_list_and_import_stays_light():
    code = ("import sys, analyzer; assert 'pandas' not in sys.modules and 'sqlite_utils' not in "
            "sys.modules; missing = [n for n in analyzer.__all__ if not hasattr(analyzer, n)]; "
            "assert not missing, missing; print(len(analyzer.__all__))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) <= 20
    assert (ROOT / "analyzer" / "py.typed").exists()


README_FIRST_COMMAND = re.search(r"^    (pip install -e \. && analyzer .*)$", README, re.M)
"""The README's first command: install, then run the main job on the shipped sample."""

WHEELHOUSE_ENV = "ANALYZER_TEST_WHEELHOUSE"
"""A folder of the wheels a fresh install needs (.ci/run fills it from the lock), so that the
fresh installs below resolve their dependencies from it, offline; without it, from the index."""


def test_the_readme_s_first_command_installs_then_runs():
    assert README_FIRST_COMMAND, "the README's first command is not where this test looks"
    install, _, rest = README_FIRST_COMMAND.group(1).partition(" && ")
    assert install == "pip install -e ." and rest.startswith("analyzer ingest && analyzer run")


def clean_copy(destination: Path) -> Path:
    """The project as a clean clone has it: the files git tracks (or, outside a checkout,
    the tree without what builds and runs leave behind)."""
    if (ROOT / ".git").exists():
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], cwd=ROOT, capture_output=True, check=True)
        for name in filter(None, listed.stdout.decode().split("\0")):
            source = ROOT / name
            if source.is_file():
                (destination / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, destination / name)
    else:
        shutil.copytree(ROOT, destination, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            "build", "dist", "*.egg-info", "__pycache__", "*.so", "*.db*", ".venv", "reports"))
    return destination


def pip_environment() -> dict[str, str]:
    """The environment of an install that resolves dependencies as a user's does (no
    --no-deps, no borrowed packages), at the versions of the lock, from the wheelhouse when
    there is one."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("PYTHONPATH", "VIRTUAL_ENV") and not key.startswith("PIP_")}
    environment["PIP_CONSTRAINT"] = str(ROOT / "constraints.txt")
    environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    wheelhouse = os.environ.get(WHEELHOUSE_ENV)
    if wheelhouse:
        environment.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=wheelhouse)
    return environment


def new_venv(folder: Path) -> dict[str, str]:
    """A brand-new virtual environment (no system site packages), and the environment of a
    shell in which it is activated."""
    venv.create(folder, system_site_packages=False, with_pip=True, clear=True)
    environment = pip_environment()
    environment["VIRTUAL_ENV"] = str(folder)
    environment["PATH"] = f"{folder / 'bin'}{os.pathsep}{environment.get('PATH', '')}"
    return environment


def shell(command: str, cwd: Path, environment: dict[str, str], timeout: float = 900):
    done = subprocess.run(["bash", "-c", f"set -e; {command}"], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done


CORE_IMPORTS = """
import importlib, pkgutil, sys, analyzer
optional = ("analyzer.serve", "analyzer.runs.cluster")  # the serve and dask extras
names = [m.name for m in pkgutil.walk_packages(analyzer.__path__, "analyzer.")
         if not m.name.startswith(optional) and not m.name.endswith("__main__")]
for name in names:
    importlib.import_module(name)
print(len(names))
"""
"""Every module of the core imports with the core's dependencies alone."""


def check_the_main_job(work: Path, environment: dict[str, str]) -> None:
    """The report the README's first command wrote, in `work`; and the engine it ran."""
    page = (work / "reports" / "run-1.html").read_text(encoding="utf-8")
    plotly = re.search(r"src=['\"](plotly-[0-9.]+\.min\.js)['\"]", page)
    assert plotly and (work / "reports" / plotly.group(1)).stat().st_size > 1_000_000
    assert "harbour_town" in page and "eng_Latn" in page and page.count("plotly-graph-div") >= 5
    version = shell("analyzer --version", work, environment).stdout
    if shutil.which("gcc") or shutil.which("cc"):
        assert "compiled BPE engine" in version, version  # built by the install, not missing
    shell(f"python -c {shlex.quote(CORE_IMPORTS)}", work, environment)


@pytest.fixture(scope="module")
def distributions(tmp_path_factory) -> dict[str, Path]:
    """The sdist, and the wheel built from it (as `python -m build` does), from a clean copy."""
    source = clean_copy(tmp_path_factory.mktemp("source"))
    folder = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(folder),
                           str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {"wheel": next(folder.glob("analyzer-*.whl")), "sdist": next(folder.glob("analyzer-*.tar.gz"))}


@pytest.mark.slow
@pytest.mark.install
def test_the_wheel_carries_the_migrations_the_sample_the_type_marker_and_the_pages_files(distributions):
    import tarfile
    import zipfile

    names = zipfile.ZipFile(distributions["wheel"]).namelist()
    for expected in ("analyzer/migrations/__init__.py", "analyzer/bpe/trainer.py", "analyzer/py.typed",
                     "analyzer/unigram/trainer.py", "analyzer/unigram/_engine.pyi",
                     "analyzer/parallel_corpora/harbour_town/eng_Latn.txt",
                     "analyzer/parallel_corpora/harbour_town/README.md"):
        assert expected in names
    # The pages' scripts and styles (package data), in the wheel and in the sdist it came from.
    static = [path.relative_to(ROOT).as_posix() for package in ("report", "serve")
              for path in (ROOT / "analyzer" / package / "static").iterdir()]
    with tarfile.open(distributions["sdist"]) as sdist:
        in_sdist = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert static and [name for name in static if name not in names or name not in in_sdist] == []


@pytest.mark.slow
@pytest.mark.install
@pytest.mark.timeout(900)  # two installs with a compile, on a loaded machine
@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_the_main_job_runs_from_a_fresh_install(distributions, kind, tmp_path):
    """The wheel and the sdist, each installed in a brand-new venv with its dependencies
    resolved (nothing borrowed from this machine), then the README's first command after its
    install, as written, from an empty folder."""
    environment = new_venv(tmp_path / "venv")
    # uv, a resolver as real as pip's and many times faster (pip itself runs the README's
    # command in the test below); constraints and a wheelhouse as pip_environment() gives pip.
    uv = Path(sys.executable).with_name("uv")
    options = ["--constraint", environment["PIP_CONSTRAINT"]]
    if environment.get("PIP_FIND_LINKS"):
        options += ["--no-index", "--find-links", environment["PIP_FIND_LINKS"]]
    shell(shlex.join([str(uv if uv.exists() else "uv"), "pip", "install", "--quiet", "--python",
                      str(tmp_path / "venv" / "bin" / "python"), *options,
                      str(distributions[kind])]), tmp_path, environment)
    work = tmp_path / "empty"
    work.mkdir()
    _, _, main_job = README_FIRST_COMMAND.group(1).partition(" && ")
    shell(main_job, work, environment)
    check_the_main_job(work, environment)


@pytest.mark.slow
@pytest.mark.install
@pytest.mark.timeout(900)
def test_the_readme_s_first_command_verbatim_in_a_clean_clone(tmp_path):
    """`pip install -e . && analyzer ingest && analyzer run ...`, exactly as the README writes
    it, in a clean copy of the project and a brand-new venv."""
    clone = clean_copy(tmp_path / "clone")
    environment = new_venv(tmp_path / "venv")
    shell(README_FIRST_COMMAND.group(1), clone, environment)
    check_the_main_job(clone, environment)


def test_every_package_is_in_the_wheel():
    """Each folder of the package with an __init__.py is listed for setuptools (a package left
    out installs as nothing: the console script of a wheel failed to import analyzer.cli)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(path.parent.relative_to(ROOT).parts)
             for path in (ROOT / "analyzer").rglob("__init__.py")}
    assert found - listed == set()
