"""scripts/demo_key.sh, the demo key of scripts/run.sh: made once, kept under the data directory
readable by its owner only, printed again on the next run (keys do not pile up), and replaced
when it no longer works."""

from __future__ import annotations

import stat
import subprocess

import pytest

from tests.support.processes import ROOT, cli, service_env

pytestmark = pytest.mark.process


def demo_key(data_dir) -> subprocess.CompletedProcess:
    return subprocess.run(["scripts/demo_key.sh"], cwd=ROOT, env=service_env(data_dir), capture_output=True,
                          text=True, timeout=120, check=False)


def listed(data_dir) -> list[str]:
    return [line for line in cli(data_dir, "keys", "list").stdout.splitlines() if line.startswith("sig_live_")]


def test_the_demo_key_is_made_once_kept_private_and_replaced_when_revoked(tmp_path):
    first = demo_key(tmp_path)
    assert first.returncode == 0, first.stderr
    key = first.stdout.strip()
    assert key.startswith("sig_live_") and "\n" not in key  # the key alone on stdout
    kept = tmp_path / "demo-key"
    assert kept.read_text().strip() == key and stat.S_IMODE(kept.stat().st_mode) == 0o600
    again = demo_key(tmp_path)
    assert again.returncode == 0 and again.stdout.strip() == key
    assert "earlier run" in again.stderr
    assert len(listed(tmp_path)) == 1  # no second key
    assert cli(tmp_path, "keys", "revoke", key).returncode == 0
    replaced = demo_key(tmp_path)
    assert replaced.returncode == 0 and replaced.stdout.strip() not in ("", key)
    assert "revoked" in replaced.stderr
    assert kept.read_text().strip() == replaced.stdout.strip()


def banner(data_dir) -> subprocess.CompletedProcess:
    return subprocess.run(["scripts/key_banner.sh"], cwd=ROOT, env=service_env(data_dir), capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize("run", ["first", "again"])
def test_the_banner_shows_the_whole_key_first_and_alone(tmp_path, run):
    """What scripts/run.sh prints of its key (issue 42): a script that takes the first `sig_live_`
    of the output (stdout and stderr as a terminal shows them) gets the whole key, alone on its
    line; nothing before it looks like a key (the 16-character prefix did)."""
    if run == "again":
        assert demo_key(tmp_path).returncode == 0
    shown = banner(tmp_path)
    assert shown.returncode == 0, shown.stderr
    key = (tmp_path / "demo-key").read_text().strip()
    output = shown.stdout + shown.stderr
    first = output.index("sig_live_")
    assert output[first:].split("\n", 1)[0] == key  # the whole line is the key
    assert output[:first].endswith("\n") and output.count("sig_live_") == 1  # alone, and only once
    assert "/api/v1/account" in shown.stdout  # how to check it
    assert "scripts/key_banner.sh" in (ROOT / "scripts" / "run.sh").read_text()  # what run.sh prints
