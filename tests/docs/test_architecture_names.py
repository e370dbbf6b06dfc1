"""docs/architecture.md names only what exists: every file and folder of its module map and every
path it gives (`service/...py`, `tests/...`), every dotted module name (`service.settings.ENGINES`),
every name of code in backticks (`map_segment`, `snapshot_reading.map_segment`, `Usage.remaining_seconds`,
`pl.Enum`) and every setting (`SIGNALS_*`, `REDIS_URL`, `PORT`, `WEB_CONCURRENCY`).

What "exists" means:
- a path: a file or folder of the repository (a `*` in it is a glob), beside the module map's entry
  that gives it, or from the repository's root, docs/ or service/;
- a dotted name starting with one of our packages: it imports, and each further part is an
  attribute;
- a name in backticks: defined in the code (service/, cache/, connectors/, dashboard/, paramcheck/,
  envfields/, city_counties/; the tests' fixtures and helpers, and the test and bench modules the
  page names): a module or package, a
  class, a function or method, an assignment (module, class or `self.` attribute), or a string
  constant of the code that is exactly that word (a parameter, a table, a column); `a.b`: `b`
  defined in a module or package named `a` or a class named `a`; a first part that is none of
  ours is imported (`pl` and `pa` as polars and pyarrow) and the rest read as attributes;
- a setting: read by a settings class (its field names the variable) or through `os.environ`.

A problem is reported with its line, so a renamed function fails here by name."""

from __future__ import annotations

import ast
import dataclasses
import functools
import glob
import importlib
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("service", "cache", "connectors", "dashboard", "paramcheck", "envfields", "city_counties")
# Where a relative path outside the module map is looked for.
PATH_BASES = ("", "docs", "service")
EXTERNAL_ALIASES = {"pl": "polars", "pa": "pyarrow", "np": "numpy"}

SETTING = re.compile(r"(?<![\w$])(SIGNALS_[A-Z0-9_]+|REDIS_URL|PORT|WEB_CONCURRENCY)\b")
BACKTICKED = re.compile(r"`([^`\n]+)`")
NAME_CHAIN = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:\(\))?$")
GLOB_NAME = re.compile(r"^([A-Za-z_]\w*)\*$")
DOTTED_PACKAGE = re.compile(r"(?<![\w/.`-])((?:" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_]\w*)+)")
EXTENSION = re.compile(r"^x-[a-z][\w-]*$")   # an OpenAPI extension the document carries
PATH_SUFFIXES = (".py", ".lua", ".gs", ".sh")
IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")


# --- what the code defines -----------------------------------------------------------------------

@dataclasses.dataclass
class CodeIndex:
    names: set[str]                              # every defined name and identifier-like string
    modules: dict[str, set[str]]                 # module or package name -> names defined in it
    classes: dict[str, set[str]]                 # class name -> its members
    strings: set[str]                            # every string constant of the code


@functools.cache
def _python_files() -> tuple[Path, ...]:
    """Our packages' modules, the web process's gunicorn settings, and of the tests the fixtures
    (conftest.py) and helpers (tests/support/)."""
    files = [path for top in PACKAGES for path in sorted((ROOT / top).rglob("*.py"))]
    files += sorted((ROOT / "tests").rglob("conftest.py")) + sorted((ROOT / "tests" / "support").rglob("*.py"))
    return (*files, ROOT / "gunicorn.conf.py")


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _targets(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Tuple | ast.List):
        return [name for element in node.elts for name in _targets(element)]
    return []


def _defined(body: list[ast.stmt]) -> set[str]:
    """The names a module's or a class's own statements define (not nested functions' locals)."""
    found: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign):
            found.update(name for target in node.targets for name in _targets(target))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            found.update(_targets(node.target))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.If | ast.Try | ast.With):
            inner = [*getattr(node, "body", []), *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            inner += [stmt for handler in getattr(node, "handlers", []) for stmt in handler.body]
            found |= _defined(inner)
    return found


@functools.cache
def code_index(named: frozenset[Path] = frozenset()) -> CodeIndex:
    """What the code defines; `named`: the test and bench modules a text names, read as well."""
    names: set[str] = set()
    modules: dict[str, set[str]] = defaultdict(set)
    classes: dict[str, set[str]] = defaultdict(set)
    strings: set[str] = set()
    for path in (*_python_files(), *sorted(named)):
        tree = _tree(path)
        module = path.parent.name if path.name == "__init__.py" else path.stem
        defined = _defined(tree.body)
        modules[module] |= defined
        if path.name != "__init__.py":
            modules[path.parent.name].add(path.stem)   # a package's submodules are its names
        names |= defined | {module, path.parent.name}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                members = _defined(node.body)
                for function in node.body:
                    if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                        members |= {target.attr for sub in ast.walk(function)
                                    for target in getattr(sub, "targets", [getattr(sub, "target", None)])
                                    if isinstance(target, ast.Attribute)
                                    and isinstance(target.value, ast.Name) and target.value.id == "self"}
                classes[node.name] |= members
                names |= members | {node.name}
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)
    names |= {text for text in strings if IDENTIFIER.match(text)}
    return CodeIndex(names, dict(modules), dict(classes), strings)


@functools.cache
def settings_read() -> frozenset[str]:
    """The environment variables the code reads: each settings class's fields name theirs, and a
    few are read directly (`os.environ.get("X")`, `os.getenv("X")`, `os.environ["X"]`)."""
    from connectors.settings import ConnectorSettings
    from dashboard.settings import DashboardSettings
    from service.settings import Settings

    read = {field.metadata["env"] for cls in (Settings, ConnectorSettings, DashboardSettings)
            for field in dataclasses.fields(cls) if "env" in field.metadata}
    for path in _python_files():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                owner = func.value if isinstance(func, ast.Attribute) else None
                environ = isinstance(owner, ast.Attribute) and owner.attr == "environ" or called == "getenv"
                if environ and isinstance(node.args[0].value, str):
                    read.add(node.args[0].value)
            elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
                  and node.value.attr == "environ" and isinstance(node.slice, ast.Constant)):
                read.add(node.slice.value)
    return frozenset(read)


# --- what the page names -------------------------------------------------------------------------

def _member(scope: str, name: str, index: CodeIndex) -> bool:
    return name in index.modules.get(scope, set()) or name in index.classes.get(scope, set())


def check_chain(chain: str, index: CodeIndex) -> str | None:
    """None when a name of code exists, else why not."""
    parts = chain.split(".")
    if parts[0] in PACKAGES:
        return check_dotted(chain)
    ours = parts[0] in index.modules or parts[0] in index.classes
    if len(parts) == 1:
        return None if parts[0] in index.names else "defined nowhere in the code"
    if not ours:
        module_name = EXTERNAL_ALIASES.get(parts[0], parts[0])
        try:
            obj = importlib.import_module(module_name)
        except ImportError:
            return f"{parts[0]!r} is neither a module or class of the code nor an importable module"
        for part in parts[1:]:
            if not hasattr(obj, part):
                return f"{module_name} has no {part!r}"
            obj = getattr(obj, part)
        return None
    for scope, name in zip(parts, parts[1:], strict=False):
        if not _member(scope, name, index):
            return f"no module, package or class {scope!r} of the code defines {name!r}"
    return None


def check_dotted(dotted: str) -> str | None:
    """`service.settings.ENGINES`: the longest importable prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in parts[cut:]:
            if not hasattr(obj, part):
                return f"{'.'.join(parts[:cut])} has no {part!r}"
            obj = getattr(obj, part)
        return None
    return "does not import"


def path_exists(name: str, bases: list[Path]) -> bool:
    name = name.rstrip("/")
    for base in bases:
        candidate = base / name
        if "*" in name and glob.glob(str(candidate)):
            return True
        if candidate.exists():
            return True
    return False


def path_tokens(text: str) -> list[str]:
    """The file and folder names of a text: words ending in .py (.lua, .gs, .sh) or in `/`."""
    found = []
    for word in re.split(r"[\s(),;:`\"'\[\]]+", text):
        word = word.rstrip(".")
        if not word or any(mark in word for mark in "$~<>|{}+=@#") or "://" in word:
            continue
        if word.startswith("/") or word.startswith("."):
            continue  # a route (/healthz) or a hidden name (.staging)
        if (word.endswith(PATH_SUFFIXES) or word.endswith("/")) and re.match(r"^[\w./*-]+$", word):
            found.append(word)
    return found


@dataclasses.dataclass
class Entry:
    directory: Path   # where the map's entry sits
    names: list[str]  # its files and folders
    line: int


def module_map(lines: list[str]) -> tuple[list[Entry], dict[int, list[Path]]]:
    """The fenced module map: its entries, and for each of its lines the folders its names are
    looked for in (the entry's own folder, then its parents)."""
    entries: list[Entry] = []
    bases: dict[int, list[Path]] = {}
    try:
        heading = lines.index("## Modules")
    except ValueError:
        return entries, bases
    start = next(i for i in range(heading, len(lines)) if lines[i].startswith("```"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    stack: list[tuple[int, Path]] = []  # (indent, folder)
    current: list[Path] = [ROOT]
    for number in range(start + 1, end):
        line = lines[number]
        indent = len(line) - len(line.lstrip(" "))
        if line.strip() and indent < 20:   # an entry; deeper lines continue the description
            names = []
            field = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]  # the names, before the description
            for word in field.split():
                if re.match(r"^[\w.]+(/|\.py|\.lua|\.gs|\.sh),?$", word):
                    names.append(word.rstrip(","))
                else:
                    break
            while stack and stack[-1][0] >= indent:
                stack.pop()
            parent = stack[-1][1] if stack else ROOT
            entries.append(Entry(parent, names, number + 1))
            own = [parent / names[0]] if names and names[0].endswith("/") else []
            current = own + [parent] + [folder for _, folder in reversed(stack)] + [ROOT]
            if names and names[0].endswith("/") and len(names) == 1:
                stack.append((indent, parent / names[0]))
        bases[number + 1] = list(dict.fromkeys(current))
    return entries, bases


def problems(text: str) -> list[str]:
    """Every name of the text that does not exist, as `line N: name: why`."""
    lines = text.splitlines()
    named = frozenset(path for word in path_tokens(text) for path in glob.glob(str(ROOT / word))
                      if word.startswith(("tests/", "bench/")) and path.endswith(".py"))
    index = code_index(frozenset(Path(path) for path in named))
    found: list[str] = []
    entries, map_bases = module_map(lines)
    entry_names = {entry.line: set(entry.names) for entry in entries}
    for entry in entries:
        for name in entry.names:
            if not path_exists(name, [entry.directory]):
                found.append(f"line {entry.line}: {name}: no such file or folder in "
                             f"{entry.directory.relative_to(ROOT).as_posix() or '.'}/")
    default_bases = [ROOT / base for base in PATH_BASES]
    read = settings_read()
    for number, line in enumerate(lines, start=1):
        bases = map_bases.get(number, default_bases)
        for name in path_tokens(line):
            if name in entry_names.get(number, ()):
                continue  # checked as an entry of the map
            if not path_exists(name, bases):
                found.append(f"line {number}: {name}: no such file or folder")
        for setting in SETTING.findall(line):
            if setting not in read:
                found.append(f"line {number}: {setting}: a setting the code does not read")
        for dotted in DOTTED_PACKAGE.findall(BACKTICKED.sub("", line)):
            if dotted.endswith(PATH_SUFFIXES) or (why := check_dotted(dotted)) is None:
                continue
            found.append(f"line {number}: {dotted}: {why}")
        for span in BACKTICKED.findall(line):
            span = span.strip()
            if SETTING.fullmatch(span) or span.endswith(PATH_SUFFIXES):
                continue  # checked above
            if chain := NAME_CHAIN.match(span):
                if (why := check_chain(chain[1], index)) is not None:
                    found.append(f"line {number}: `{span}`: {why}")
            elif prefix := GLOB_NAME.match(span):
                if not any(name.startswith(prefix[1]) for name in index.names):
                    found.append(f"line {number}: `{span}`: no name of the code begins so")
            elif EXTENSION.match(span) and span not in index.strings:
                found.append(f"line {number}: `{span}`: no such extension in the code")
    return found


# --- the tests -----------------------------------------------------------------------------------

def test_every_name_in_architecture_md_exists():
    found = problems(DOC.read_text())
    assert not found, "docs/architecture.md names what the code does not have:\n" + "\n".join(found)


def test_the_page_is_read_for_names():
    """The checks above see the page's names (a test that reads nothing would pass forever)."""
    text = DOC.read_text()
    entries, _ = module_map(text.splitlines())
    assert len(entries) > 80
    spans = [span for span in BACKTICKED.findall(text) if NAME_CHAIN.match(span.strip())]
    assert len(spans) > 50
    assert len(set(SETTING.findall(text))) > 8


@pytest.mark.parametrize(("line", "named"), [
    ("the reader maps them (`snapshot_reading.map_segment_twice`)", "`snapshot_reading.map_segment_twice`"),
    ("the reader maps them (`snapshot._mapped`)", "`snapshot._mapped`"),
    ("a `NoSuchCacheOfSegments` keeps them", "`NoSuchCacheOfSegments`"),
    ("`Usage.seconds_we_never_had` says when", "`Usage.seconds_we_never_had`"),
    ("`pl.NoSuchType` for dimensions", "`pl.NoSuchType`"),
    ("see `service.settings.NO_SUCH_CONSTANT`", "`service.settings.NO_SUCH_CONSTANT`"),
    ("see service.no_such_module for it", "service.no_such_module"),
    ("the deadline (service/alarm_deadline.py) stops it", "service/alarm_deadline.py"),
    ("its tests (tests/store/test_no_such_thing_*.py)", "tests/store/test_no_such_thing_*.py"),
    ("set SIGNALS_NO_SUCH_SETTING to change it", "SIGNALS_NO_SUCH_SETTING"),
    ("its columns (`x-signals-no-such-extension`)", "`x-signals-no-such-extension`"),
])
def test_a_made_up_name_fails_with_its_line(line, named):
    text = "# Architecture\n\nthe snapshot (`snapshot_reading.map_segment`, service/store/snapshot_reading.py), SIGNALS_ENGINE\n" + line + "\n"
    found = problems(text)
    assert len(found) == 1 and found[0].startswith("line 4: ") and named.strip("`") in found[0], found


def test_real_names_pass():
    text = ("`snapshot_reading.map_segment`, `snapshot_reading.SegmentCache`, `Usage.remaining_seconds`, `EventStore.follow`, "
            "`pl.Enum`, `pyarrow.memory_map`, `service.settings.ENGINES`, `map_segment`, `ENDPOINTS`, `publish_*`, "
            "`x-signals-columns`, service/answers/deadline.py, tests/engine/test_engine_*.py, service/engine/publication/, "
            "SIGNALS_COMPUTE_DEADLINE_SECONDS, REDIS_URL, WEB_CONCURRENCY, PORT, SIGNALS_SCREENSHOTS_DIR\n")
    assert problems(text) == []


def test_the_module_map_is_read_by_its_indentation():
    text = ("## Modules\n\n```\nservice/\n  clock.py           the work limit (engine/cost.py, meter.py)\n"
            "  engine/            the engines\n    polars/          slicing.py\n    no_such.py       x\n"
            "cache/               wire.py\n```\n")
    found = problems(text)
    assert found == ["line 8: no_such.py: no such file or folder in service/engine/",
                     "line 5: meter.py: no such file or folder"], found
