"""The boundaries docs/architecture.md draws between the packages: the connectors and the dashboard
talk to the API over HTTP and never import `service/`, and the service never imports its own
consumers; the packages shared by both sides (`paramcheck/`, `envfields/`, `city_counties/`,
`flatcolumns/`) and `cache/` import neither side."""

from __future__ import annotations

import ast

import pytest

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
