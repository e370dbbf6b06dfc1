"""The gunicorn target itself (`service.wsgi:app`) with SIGNALS_PRIVACY_RELEASE=1: the workers
answer from the release (once they served the release engine over the event store: a 500)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.release.conftest import RELEASE_SECRET

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json
import falcon.testing
from service.accounts import AccountStore
from service.api.tiers import Tier
from service.settings import Settings
from service.wsgi import app
key = AccountStore(Settings.from_env().accounts_url).create_key(Tier.PROFESSIONAL, subscription="wsgi")[0]
client = falcon.testing.TestClient(app)
answer = client.simulate_get("/api/v1/signals/top-keywords", params={"window": "24h", "limit": "5"},
                             headers={"Authorization": "Bearer " + key})
print(json.dumps({"status": answer.status_code, "body": answer.json}))
"""


def test_the_wsgi_target_answers_from_the_release(released_demo_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "SIGNALS_DATA_DIR": str(released_demo_dir), "SIGNALS_SECRET": RELEASE_SECRET,
           "SIGNALS_PRIVACY_RELEASE": "1", "SIGNALS_ACCOUNTS_URL": f"sqlite:///{tmp_path / 'accounts.db'}"}
    env.pop("REDIS_URL", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["status"] == 200, answer
    assert len(answer["body"]["keywords"]) == 5
