"""Every operation of the table (service/api/operations.py) reaches every consumer that should have it,
checked in the quick tier from the table itself, and a missing one is named:

- the Apps Script custom functions (connectors/apps_script/Code.gs): one `SIGNALS_<OPERATION>` per
  data endpoint, with its parameters, calling its method and path (the functions run under Node
  only in the full suite: tests/connectors/test_apps_script.py);
- the dashboard: a page (dashboard/pages/, the account page's webhook section dashboard/webhooks/)
  that calls the operation by name (minting a browser token aside: the dashboard is a server);
- the spec (docs/spec.md): each data endpoint's row in the Endpoints table, with its minimum plan,
  and its section; and the served OpenAPI document: every operation at its path and method;
- the API page (docs/api.md): a `curl` example of every operation;
- the counts the pages write ("seven endpoints", "the six GET endpoints").

The MCP page's tool rows are checked the same way in tests/connectors/mcp/test_mcp_docs.py; the
Python client's methods and the MCP tools are made from the served document, so they cannot lack
one. Each check is also run on a copy with one operation's entry taken out, and must name it (and
only it, besides what the real sources lack: a new operation without its consumer fails the first
test of each group, not every one).
"""

from __future__ import annotations

import ast
import copy
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from service.api.endpoints import BASE_PATH, ENDPOINTS
from service.api.openapi import build_openapi
from service.api.operations import OPERATIONS
from tests.support.processes import ROOT

DATA = [operation for operation in OPERATIONS if operation.endpoint is not None]
# The operations a dashboard page calls: every one but minting a browser token, which is for the server
# behind a web page (the dashboard is such a server, and calls the API with the key itself).
PAGED = [operation for operation in OPERATIONS if operation.tag != "tokens"]
CODE_GS = ROOT / "connectors" / "apps_script" / "Code.gs"
# The modules the dashboard's pages are made of: the pages, and the account page's webhook section.
PAGE_MODULES = sorted([*(ROOT / "dashboard" / "pages").glob("*.py"), *(ROOT / "dashboard" / "webhooks").glob("*.py")])
SPEC = ROOT / "docs" / "spec.md"
API_PAGE = ROOT / "docs" / "api.md"
# The pages whose prose counts the endpoints or tools (docs/spec.md is the contract as it was
# given, docs/development.md records a past run).
COUNTING_PAGES = [ROOT / "README.md", API_PAGE, ROOT / "docs" / "mcp.md", ROOT / "docs" / "sheets.md",
                  ROOT / "docs" / "dashboard.md"]


# -- the Apps Script functions ------------------------------------------------------------------

def function_name(name: str) -> str:
    return "SIGNALS_" + name.upper()


def apps_script_problems(source: str) -> dict[str, str]:
    """Data operation -> what is wrong with its custom function: missing, other parameters than the
    documented ones (in order; /query's body fields in any order, without `format`: a sheet takes
    JSON), or not calling its method and path."""
    functions = {name: ([a.strip() for a in args.split(",") if a.strip()], body) for name, args, body in
                 re.findall(r"^function (SIGNALS_[A-Z_]+)\(([^)]*)\) \{\n(.*?)^\}", source, re.M | re.S)}
    problems = {}
    for operation in DATA:
        name = function_name(operation.name)
        if name not in functions:
            problems[operation.name] = f"no function {name}"
            continue
        arguments, body = functions[name]
        documented = [p.name for p in operation.params]
        same = set(arguments) == set(documented) - {"format"} if operation.in_body else arguments == documented
        if not same:
            problems[operation.name] = f"{name}({', '.join(arguments)}): the parameters are {documented}"
        elif f"'{operation.method}', '{operation.path.removeprefix(BASE_PATH)}'" not in body:
            problems[operation.name] = f"{name} does not call {operation.method} {operation.path}"
    return problems


def test_every_data_endpoint_has_its_apps_script_function():
    assert apps_script_problems(CODE_GS.read_text()) == {}


@pytest.mark.parametrize("operation", DATA, ids=lambda o: o.name)
def test_a_missing_apps_script_function_is_named(operation):
    source = CODE_GS.read_text()
    name = function_name(operation.name)
    assert f"function {name}(" in source
    before = set(apps_script_problems(source))  # (empty, unless an operation lacks its function)
    without = source.replace(f"function {name}(", f"function {name}_GONE(")
    assert set(apps_script_problems(without)) - before == {operation.name}
    other = source.replace(f"function {name}(", f"function {name}(extra, ")
    assert set(apps_script_problems(other)) - before == {operation.name}


# -- the dashboard's pages ------------------------------------------------------------------------

def named_in(source: str) -> set[str]:
    """The string constants of a module's code."""
    return {node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def without_page(sources: Mapping[Path, str]) -> list[str]:
    """The operations that no page module names (`api.fetch(key, "<operation>", ...)`,
    `ChartPage(operation="<operation>")`, `ui.call(session, "<operation>")`, ...)."""
    named = set().union(*(named_in(source) for source in sources.values()))
    return [operation.name for operation in PAGED if operation.name not in named]


def page_sources() -> dict[Path, str]:
    return {path: path.read_text() for path in PAGE_MODULES}


def test_every_operation_has_a_dashboard_page():
    assert without_page(page_sources()) == []


@pytest.mark.parametrize("operation", PAGED, ids=lambda o: o.name)
def test_a_missing_dashboard_page_is_named(operation):
    """The pages' calls of the operation, taken out (as when the page that shows it is missing)."""
    sources = page_sources()
    assert any(operation.name in named_in(source) for source in sources.values())
    gone = {path: renamed(source, operation.name) for path, source in sources.items()}
    assert set(without_page(gone)) - set(without_page(sources)) == {operation.name}


def renamed(source: str, name: str) -> str:
    """The module with every string constant `name` changed to another."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == name:
            node.value = name + "_gone"
    return ast.unparse(tree)


# -- the spec and the served document --------------------------------------------------------------

def spec_problems(text: str) -> dict[str, str]:
    """Data operation -> what docs/spec.md lacks of it: its row in the Endpoints table (method,
    path, minimum plan) or its section."""
    rows = {(method, path): tier for method, path, tier in
            re.findall(r"^\| [^|]+ \| (GET|POST) \| (/[\w-]+) \| (\w+) \|$", text, re.M)}
    sections = set(re.findall(r"^### (GET|POST) (/[\w-]+)$", text, re.M))
    problems = {}
    for endpoint in ENDPOINTS:
        key = (endpoint.method, endpoint.path)
        if rows.get(key) != endpoint.min_tier.label:
            problems[endpoint.name] = f"no row `| ... | {endpoint.method} | {endpoint.path} | {endpoint.min_tier.label} |`"
        elif key not in sections:
            problems[endpoint.name] = f"no section `### {endpoint.method} {endpoint.path}`"
    return problems


def test_every_data_endpoint_is_in_the_spec():
    assert spec_problems(SPEC.read_text()) == {}


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_a_missing_spec_entry_is_named(endpoint):
    text = SPEC.read_text()
    heading = f"### {endpoint.method} {endpoint.path}\n"
    assert heading in text
    before = set(spec_problems(text))
    assert set(spec_problems(text.replace(heading, ""))) - before == {endpoint.name}
    row = re.compile(rf"^\| [^|]+ \| {endpoint.method} \| {re.escape(endpoint.path)} \| \w+ \|\n", re.M)
    assert row.search(text)
    assert set(spec_problems(row.sub("", text))) - before == {endpoint.name}


def not_documented(document: Mapping[str, Any]) -> list[str]:
    """The operations the OpenAPI document does not give at their path and method."""
    paths = document.get("paths", {})
    return [operation.name for operation in OPERATIONS
            if paths.get(operation.path, {}).get(operation.method.lower(), {}).get("operationId") != operation.name]


def test_every_operation_is_in_the_served_document():
    assert not_documented(build_openapi()) == []


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda o: o.name)
def test_a_missing_document_entry_is_named(operation):
    document = copy.deepcopy(build_openapi())
    del document["paths"][operation.path][operation.method.lower()]
    assert set(not_documented(document)) - set(not_documented(build_openapi())) == {operation.name}


# -- the API page's examples ---------------------------------------------------------------------

def curl_commands(text: str) -> list[tuple[tuple[int, int], tuple[str, str]]]:
    """Every curl command of the page's bash blocks calling the API: its span in the text and its
    (method, path); `$ID` is a webhook's id. A command may go on over lines (a trailing `\\`, or a
    quoted body)."""
    found = []
    for block in re.finditer(r"```bash\n(.*?)```", text, flags=re.S):
        offset, pending, begin = block.start(1), "", 0
        for line in block[1].splitlines(keepends=True):
            if not pending:
                begin = offset
            offset += len(line)
            pending += line
            if pending.rstrip("\n").endswith("\\") or pending.count("'") % 2:
                continue
            command, pending = re.sub(r"\\\n\s*", " ", pending).split("  #")[0].strip(), ""
            if not command.startswith("curl "):
                continue
            args = shlex.split(command)
            url = next((a for a in args if a.startswith("$API/")), None)
            if url is not None:
                method = args[args.index("-X") + 1] if "-X" in args else "POST" if "-d" in args else "GET"
                path = url.removeprefix("$API").split("?")[0].replace("$ID", "{webhook_id}")
                found.append(((begin, offset), (method, path)))
    return found


def without_example(text: str) -> list[str]:
    requests = {request for _, request in curl_commands(text)}
    return [operation.name for operation in OPERATIONS if (operation.method, operation.path) not in requests]


def test_every_operation_has_an_example_on_the_api_page():
    assert without_example(API_PAGE.read_text()) == []


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda o: o.name)
def test_a_missing_example_is_named(operation):
    text = API_PAGE.read_text()
    spans = [span for span, request in curl_commands(text) if request == (operation.method, operation.path)]
    assert spans, operation.name
    kept = text
    for begin, end in reversed(spans):
        kept = kept[:begin] + "# (example taken out)\n" + kept[end:]
    assert set(without_example(kept)) - set(without_example(text)) == {operation.name}


# -- the counts the pages write -----------------------------------------------------------------------

WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
COUNTED = re.compile(r"\b(" + "|".join(WORDS) + r"|\d+) (read-only tools|tools|endpoints|GET endpoints)\b", re.I)


def wrong_counts(text: str) -> list[str]:
    """The counts of endpoints or tools the text writes that are not the table's."""
    gets = sum(1 for e in ENDPOINTS if e.method == "GET")
    expected = {"endpoints": len(ENDPOINTS), "tools": len(ENDPOINTS), "read-only tools": len(ENDPOINTS),
                "get endpoints": gets}
    wrong = []
    for match in COUNTED.finditer(text):
        number = match[1].lower()
        count = int(number) if number.isdigit() else WORDS.index(number)
        if count != expected[match[2].lower()]:
            wrong.append(match[0])
    return wrong


@pytest.mark.parametrize("page", COUNTING_PAGES, ids=lambda p: p.name)
def test_the_pages_count_the_endpoints_as_the_table(page):
    assert wrong_counts(page.read_text()) == []


def test_a_wrong_count_is_found():
    assert wrong_counts(f"{WORDS[len(ENDPOINTS) + 1]} endpoints, {len(ENDPOINTS)} read-only tools") \
        == [f"{WORDS[len(ENDPOINTS) + 1]} endpoints"]


# -- the Sheets command line's help ---------------------------------------------------------------

def test_the_sheets_help_names_endpoints_of_the_table():
    from connectors.sheets.cli import ENDPOINT_EXAMPLES, _parser

    slugs = {endpoint.path.strip("/") for endpoint in ENDPOINTS}
    assert set(ENDPOINT_EXAMPLES) <= slugs, set(ENDPOINT_EXAMPLES) - slugs
    commands = next(action for action in _parser()._actions if action.dest == "command")
    endpoint = next(action for action in commands.choices["push"]._actions if action.dest == "endpoint")
    assert all(name in endpoint.help for name in ENDPOINT_EXAMPLES)
