"""The boundaries docs/architecture.md draws between the packages: the connectors and the dashboard
talk to the API over HTTP and never import `service/`, and the service never imports its own
consumers; the packages shared by both sides (`paramcheck/`, `envfields/`, `city_counties/`,
`flatcolumns/`) and `cache/` import neither side.

Inside `service/` (issue 44): the storage (service/store/, service/clickhouse/) imports nothing
from the engines (service/engine/), which read it; and no product module imports another
module's private (underscore) names: a name two modules share is public, or lives where it is used.
Every import counts, wherever it is (in a function, under `if TYPE_CHECKING:`)."""

from __future__ import annotations

import ast

import pytest

from tests.docs.test_import_cycles import import_graph, module_sources
from tests.support.processes import ROOT

SIDES = {"service", "connectors", "dashboard"}
# package -> the top-level packages its modules may not import
FORBIDDEN = {
    "service": {"connectors", "dashboard"},
    "connectors": {"service", "dashboard"},
    "dashboard": {"service"},
    "paramcheck": SIDES | {"cache", "envfields"},
    "envfields": SIDES | {"cache", "paramcheck"},
    "city_counties": SIDES | {"cache", "paramcheck", "envfields"},
    "flatcolumns": SIDES | {"cache", "paramcheck", "envfields", "city_counties"},
    "cache": SIDES,
}


def imported_packages(source: str) -> set[str]:
    """The top-level packages a module imports, wherever the import statement is."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_nothing_across_its_boundary(package: str) -> None:
    modules = sorted((ROOT / package).rglob("*.py"))
    assert modules, f"{package}/ has no modules"
    crossings = {str(path.relative_to(ROOT)): sorted(imported_packages(path.read_text()) & FORBIDDEN[package])
                 for path in modules}
    assert {path: found for path, found in crossings.items() if found} == {}


def test_the_check_sees_imports_inside_functions() -> None:
    assert imported_packages("def f():\n    from service.settings import Settings\n    import connectors.client\n") \
        == {"service", "connectors"}


# Storage packages -> the packages they may not import (any module in or under them).
STORAGE = ("service.store", "service.clickhouse")
ENGINES = ("service.engine",)


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def crossings(graph: dict[str, set[str]], sources: tuple[str, ...], targets: tuple[str, ...],
              besides: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Module within `sources` (and not within `besides`) -> the modules within `targets` it imports."""
    found = {module: sorted(target for target in imported if _within(target, targets))
             for module, imported in graph.items() if _within(module, sources) and not _within(module, besides)}
    return {module: imported for module, imported in found.items() if imported}


def storage_crossings(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Storage module -> the engine modules it imports."""
    return crossings(graph, STORAGE, ENGINES)


def test_the_storage_imports_nothing_from_the_engines() -> None:
    graph = import_graph(module_sources())
    assert any(_within(module, STORAGE) for module in graph)
    assert storage_crossings(graph) == {}


def test_the_check_sees_storage_importing_an_engine() -> None:
    sources = {
        "service": "", "service.store": "", "service.engine": "",
        "service.engine.interface": "class BackendUnavailable(RuntimeError): ...\n",
        "service.store.schema": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                "    from ..engine.interface import BackendUnavailable\n",
        "service.engine.measures": "from service.store import schema\n",  # the other way is fine
    }
    assert storage_crossings(import_graph(sources)) == {"service.store.schema": ["service.engine.interface"]}


POLARS_ONLY = ("service.engine.polars",)
SHARED_ENGINE = ("service.engine",)  # everything of the engines outside polars/ is shared by both


def polars_crossings(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Engine module outside engine/polars/ -> the polars engine's modules it imports (the polars
    engine's own code lives in engine/polars/: the shared level and ClickHouse never use it)."""
    return crossings(graph, SHARED_ENGINE, POLARS_ONLY, besides=POLARS_ONLY)


def test_polars_only_code_stays_in_the_polars_engine() -> None:
    graph = import_graph(module_sources())
    assert any(_within(module, POLARS_ONLY) for module in graph)
    assert polars_crossings(graph) == {}


def test_the_check_sees_the_shared_level_importing_polars_code() -> None:
    sources = {
        "service": "", "service.engine": "", "service.engine.polars": "",
        "service.engine.polars.cell_keys": "CELL_USER = 1\n",
        "service.engine.measures": "from service.engine.polars.cell_keys import CELL_USER\n",
        "service.engine.polars.engine": "from service.engine import measures\n",  # the other way is fine
    }
    assert polars_crossings(import_graph(sources)) == {"service.engine.measures": ["service.engine.polars.cell_keys"]}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(sources: dict[str, str]) -> list[str]:
    """`module:line imports name from other` for every private name (or private module) a product
    module imports from another product module. Third-party modules are not this test's business."""
    found = []
    for module, source in sorted(sources.items()):
        is_package = any(other.startswith(module + ".") for other in sources)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in sources and any(_is_private(p) for p in alias.name.split(".")):
                        found.append(f"{module}:{node.lineno} imports {alias.name}")
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = module.split(".")
                    anchor = anchor if is_package else anchor[:-1]
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                if base.split(".")[0] not in sources:
                    continue
                for alias in node.names:
                    if _is_private(alias.name) or any(_is_private(p) for p in base.split(".")):
                        found.append(f"{module}:{node.lineno} imports {alias.name} from {base}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    assert private_imports(module_sources()) == []


def test_the_check_sees_private_names_imported() -> None:
    sources = {
        "cache": "", "cache.gate": "_US = 1_000_000\ndef _seconds(us): ...\n",
        "cache.local_gate": "from cache.gate import _US, Admission\ndef f():\n    from .gate import _seconds\n",
        "cache.redis_gate": "from __future__ import annotations\nimport cache._wire\nfrom polars._typing import PolarsDataType\n",
    }
    assert private_imports(sources) == [
        "cache.local_gate:1 imports _US from cache.gate",
        "cache.local_gate:3 imports _seconds from cache.gate",
        "cache.redis_gate:2 imports cache._wire",
    ]
