"""The TypeScript client (connectors/typescript/): its generated files are those the service's
OpenAPI document makes today, and it works against the real API.

- src/schema.d.ts (openapi-typescript) and src/operations.ts (the operation table its methods are
  made from) are generated again from `build_openapi()` into a temporary directory by the
  package's own generator (scripts/generate.mjs) and compared with the checked-in files: an
  endpoint, parameter or schema changed in the service without `npm run generate` fails here.
- test/live/ runs under Node's test runner against the app served over HTTP from a thread (the
  fixture data, a key per plan): pages, 304s, errors, the account and a webhook.

The client's own tests (a fake fetch, the bundle's staleness, the types) are `npm test`
(scripts/test.sh runs it). Node 20 and the packages of package-lock.json are needed: the
`typescript_packages` fixture runs `npm ci` when node_modules/ is missing or older than the lock.
"""

from __future__ import annotations

import difflib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from cache import LocalGate
from service.api.openapi import build_openapi
from service.api.tiers import Tier
from service.app import create_app
from service.clock import FixedClock
from service.engine.polars import PolarsEngine
from service.privacy import Privacy
from service.settings import Settings
from tests.support.api_server import Ticker, serve
from tests.support.fixture_data import FIXTURE_NOW
from tests.support.processes import ROOT
from tests.support.secret import TEST_SECRET

PACKAGE = ROOT / "connectors" / "typescript"
GENERATED = ("schema.d.ts", "operations.ts")


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is needed for the TypeScript client's tests (Node 20 and npm); install nodejs and npm")
    return found


@pytest.fixture(scope="session")
def typescript_packages() -> str:
    """The path of `node`, once connectors/typescript/node_modules holds the locked packages."""
    node = _tool("node")
    installed = PACKAGE / "node_modules" / ".package-lock.json"

    def stale() -> bool:
        return not installed.is_file() or installed.stat().st_mtime < (PACKAGE / "package-lock.json").stat().st_mtime

    if stale():
        # One `npm ci` at a time (pytest -n 2 runs this fixture once per worker).
        with open(Path(tempfile.gettempdir()) / "signals-typescript-npm-ci.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if stale():
                done = subprocess.run([_tool("npm"), "ci", "--prefer-offline", "--no-audit", "--no-fund"],
                                      cwd=PACKAGE, capture_output=True, text=True, timeout=300)
                assert done.returncode == 0, done.stdout + done.stderr
    return node


def test_generated_files_are_those_of_todays_document(typescript_packages, tmp_path):
    document = tmp_path / "openapi.json"
    document.write_text(json.dumps(build_openapi(), indent=1))
    done = subprocess.run([typescript_packages, "scripts/generate.mjs", str(document), "--out", str(tmp_path)],
                          cwd=PACKAGE, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in GENERATED:
        fresh, kept = (tmp_path / name).read_text(), (PACKAGE / "src" / name).read_text()
        diff = "".join(list(difflib.unified_diff(kept.splitlines(True), fresh.splitlines(True),
                                                 f"src/{name} (checked in)", f"src/{name} (today's document)"))[:60])
        assert fresh == kept, (
            f"connectors/typescript/src/{name} is not what the OpenAPI document makes today. Regenerate it (with "
            f"the bundle) and commit: cd connectors/typescript && npm run generate -- {document}\n{diff}")


@pytest.fixture
def served_api(fixture_data_dir, fixture_store, accounts):
    """The app on the fixture data over HTTP on 127.0.0.1, webhooks to local addresses allowed."""
    settings = Settings(data_dir=fixture_data_dir, secret=TEST_SECRET, webhook_allow_private=True)
    ticker = Ticker()
    app = create_app(settings, clock=FixedClock(FIXTURE_NOW), store=fixture_store, accounts=accounts,
                     gate=LocalGate(clock=ticker), engine=PolarsEngine(Privacy.exact()))
    with serve(app) as url:
        yield url


def test_the_client_against_the_api(typescript_packages, served_api, keys):
    env = {**os.environ, "SIGNALS_TEST_API_URL": served_api,
           "SIGNALS_TEST_KEYS": json.dumps({tier.slug: keys[tier.slug] for tier in Tier})}
    done = subprocess.run([typescript_packages, "--test", "test/live/"], cwd=PACKAGE, env=env,
                          capture_output=True, text=True, timeout=180)
    summary = [line for line in done.stdout.splitlines() if line.startswith(("# pass", "# fail", "# skipped"))]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert summary[:3] == ["# pass 7", "# fail 0", "# skipped 0"], summary
