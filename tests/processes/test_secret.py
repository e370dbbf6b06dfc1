"""No secret in the repository ever serves. `scripts/run.sh` makes one per install on its first run
(scripts/install_secret.sh: random, kept in the data directory beside the demo key, mode 0600,
never shown) and exports it before it makes the demo data; every process that uses SIGNALS_SECRET
(it keys the privacy noise and the hash of user ids) refuses to start without it, saying how to
get one; production refuses every process without it."""

from __future__ import annotations

import re
import stat
import subprocess
import sys

import pytest

from tests.support.processes import ROOT, procfile_command, service_env
from tests.support.secret import TEST_SECRET

pytestmark = pytest.mark.process

RUN = ROOT / "scripts" / "run.sh"
# run.sh as it is, but for what a test must not do: install requirements (bootstrap.sh), read the
# developer's own .env, and start the processes (honcho): its last line says which secret they got.
LEFT_OUT = ("scripts/bootstrap.sh requirements.txt\n", "if [ -f .env ]; then set -a; . ./.env; set +a; fi\n")
HONCHO = 'exec honcho start -f "$procfile" -p "$PORT"\n'
MISSING = "SIGNALS_SECRET is not set"


def no_secret_env(data_dir, **extra: str) -> dict[str, str]:
    """The processes' environment without SIGNALS_SECRET (service_env gives them the tests' one)."""
    env = service_env(data_dir)
    del env["SIGNALS_SECRET"]
    return {**env, **extra}


def install_secret(data_dir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["scripts/install_secret.sh", *args], cwd=ROOT, env=no_secret_env(data_dir),
                          capture_output=True, text=True, timeout=60, check=False)


def run_sh(tmp_path, data_dir, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, str]:
    """scripts/run.sh up to the start of its processes: (the run, the SIGNALS_SECRET they would get)."""
    text = RUN.read_text()
    for line in (*LEFT_OUT, HONCHO):
        assert line in text, f"scripts/run.sh changed: {line!r} is not in it (update this test)"
    for line in LEFT_OUT:
        text = text.replace(line, "")
    seen = tmp_path / "seen-secret"
    seen.unlink(missing_ok=True)
    text = text.replace(HONCHO, 'printf "%s" "$SIGNALS_SECRET" > "$SEEN_SECRET"\n')
    done = subprocess.run(["bash", "-c", text, str(RUN), *args], cwd=ROOT,
                          env=no_secret_env(data_dir, SIGNALS_DEMO_EVENTS="2000", SEEN_SECRET=str(seen), **env),
                          capture_output=True, text=True, timeout=300, check=False)
    return done, seen.read_text() if seen.exists() else ""


def test_the_install_secret_is_made_once_kept_private_never_shown_and_differs_per_install(tmp_path):
    first = install_secret(tmp_path / "one")
    assert first.returncode == 0, first.stderr
    kept = tmp_path / "one" / "secret"
    secret = kept.read_text().strip()
    assert len(secret) >= 64 and re.fullmatch(r"[A-Za-z0-9_-]+", secret)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert secret not in first.stdout + first.stderr and first.stdout == ""
    again = install_secret(tmp_path / "one")
    assert again.returncode == 0 and "earlier run" in again.stderr
    assert kept.read_text().strip() == secret and secret not in again.stdout + again.stderr
    other = install_secret(tmp_path / "two")
    assert other.returncode == 0
    assert (tmp_path / "two" / "secret").read_text().strip() not in ("", secret)  # two installs, two secrets
    assert TEST_SECRET not in (secret, (tmp_path / "two" / "secret").read_text().strip())


def test_event_data_without_its_secret_is_refused_with_how_to_start_it_afresh(tmp_path):
    (tmp_path / "GENERATION").write_text("1\n")  # data made earlier (an older run.sh, or the secret file deleted)
    refused = install_secret(tmp_path)
    assert refused.returncode == 1 and not (tmp_path / "secret").exists()
    assert "no secret" in refused.stderr and "./scripts/run.sh --new-data" in refused.stderr
    fresh = install_secret(tmp_path, "--new")  # what --new-data does first: the old one stays until the data is in
    assert fresh.returncode == 0 and (tmp_path / "secret.new").is_file() and not (tmp_path / "secret").exists()
    assert stat.S_IMODE((tmp_path / "secret.new").stat().st_mode) == 0o600


def test_run_sh_makes_the_secret_before_the_demo_data_keeps_it_and_never_prints_it(tmp_path):
    data = tmp_path / "data"
    first, exported = run_sh(tmp_path, data)
    assert first.returncode == 0, first.stdout + first.stderr
    kept = (data / "secret").read_text().strip()
    assert exported == kept and len(kept) >= 64 and stat.S_IMODE((data / "secret").stat().st_mode) == 0o600
    # The demo data was made (its `data demo` refuses without a secret, so the secret came first).
    assert (data / "GENERATION").is_file() and (data / "demo-key").is_file()
    output = first.stdout + first.stderr
    assert "sig_live_" in output and kept not in output  # the banner shows the key, never the secret
    again, exported_again = run_sh(tmp_path, data)
    assert again.returncode == 0, again.stdout + again.stderr
    assert exported_again == kept == (data / "secret").read_text().strip()  # the same one on every run
    assert kept not in again.stdout + again.stderr
    # The environment's own, when it sets one: used as it is, the file left alone.
    own, exported_own = run_sh(tmp_path, data, SIGNALS_SECRET="an operator's own secret")
    assert own.returncode == 0 and exported_own == "an operator's own secret"
    assert (data / "secret").read_text().strip() == kept
    # --new-data: a new secret and new demo data made with it, in the old ones' place.
    generation = (data / "GENERATION").read_text()
    renewed, exported_new = run_sh(tmp_path, data, "--new-data")
    assert renewed.returncode == 0, renewed.stdout + renewed.stderr
    assert exported_new == (data / "secret").read_text().strip() not in ("", kept)
    assert not (data / "secret.new").exists() and (data / "GENERATION").read_text() != generation
    assert exported_new not in renewed.stdout + renewed.stderr


def test_run_sh_refuses_data_whose_secret_is_gone(tmp_path):
    data = tmp_path / "data"
    assert run_sh(tmp_path, data)[0].returncode == 0
    (data / "secret").unlink()
    refused, exported = run_sh(tmp_path, data)
    assert refused.returncode != 0 and exported == ""  # nothing started
    assert "./scripts/run.sh --new-data" in refused.stderr


# Each Procfile process, by whether it uses the secret. The API's clients (mcp, dashboard) never
# read it; the lander lands events the collector already hashed, and needs it only to release the
# closed hours (SIGNALS_PRIVACY_RELEASE).
USES_THE_SECRET = {"web", "worker", "precompute", "collector"}
WHEN_RELEASING = {"lander"}
DOES_NOT = {"mcp", "dashboard"}


def test_every_procfile_process_is_classified():
    procfile = {line.split(":", 1)[0] for line in (ROOT / "Procfile").read_text().splitlines() if ":" in line}
    assert procfile == USES_THE_SECRET | WHEN_RELEASING | DOES_NOT
    for package in ("connectors", "dashboard"):  # the clients of the API never see it
        assert not [path for path in (ROOT / package).rglob("*.py") if "SIGNALS_SECRET" in path.read_text()]


@pytest.mark.parametrize("name", sorted(USES_THE_SECRET | WHEN_RELEASING))
def test_a_process_that_uses_the_secret_refuses_to_start_without_it(tmp_path, name):
    command = procfile_command(name)
    if name in ("worker", "precompute", "lander"):
        command[-1] += " --once"  # if it did start, it would not run forever
    done = subprocess.run(command, cwd=ROOT, env=no_secret_env(tmp_path, PORT="1", SIGNALS_COLLECTOR_PORT="1",
                                                               SIGNALS_PRIVACY_RELEASE="1"),
                          capture_output=True, text=True, timeout=60, check=False)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert MISSING in output and "./scripts/run.sh makes one" in output and "Traceback" not in output, output
    assert not (tmp_path / "secret").exists()  # nothing is made in its place


@pytest.mark.parametrize("command", [["data", "demo", "--events", "1000", "--days", "2"],
                                     ["data", "ingest", "events.ndjson"], ["data", "release"]])
def test_the_data_commands_that_hash_user_ids_or_release_refuse_without_it(tmp_path, command):
    (tmp_path / "events.ndjson").write_text("")
    command = [str(tmp_path / part) if part.endswith(".ndjson") else part for part in command]
    done = subprocess.run([sys.executable, "-m", "service", *command], cwd=ROOT, env=no_secret_env(tmp_path / "d"),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and MISSING in done.stderr, done.stderr
    assert not (tmp_path / "d" / "GENERATION").exists()


def test_commands_that_do_not_use_it_run_without_it_and_production_refuses_them_all(tmp_path):
    for command in (["keys", "list"], ["data", "count"], ["lander", "--once"]):
        done = subprocess.run([sys.executable, "-m", "service", *command], cwd=ROOT, env=no_secret_env(tmp_path),
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0 and MISSING not in done.stderr, (command, done.stderr)
    production = no_secret_env(tmp_path, SIGNALS_ENV="production", PORT="1")
    for command in ([sys.executable, "-m", "service", "keys", "list"], procfile_command("web"),
                    procfile_command("collector")):
        done = subprocess.run(command, cwd=ROOT, env=production, capture_output=True, text=True, timeout=60,
                              check=False)
        output = done.stdout + done.stderr
        assert done.returncode != 0 and "SIGNALS_SECRET must be set in production" in output, output
        assert "Traceback" not in output, output


@pytest.mark.slow  # two releases of the demo data (about 30 s each)
def test_new_data_makes_the_release_again_under_the_new_secret(tmp_path):
    """A release made before --new-data holds other data's numbers drawn under the old secret:
    run.sh makes it again from nothing (`data release --rebuild`), not only the hours since."""
    import json

    data = tmp_path / "data"
    first, _ = run_sh(tmp_path, data, SIGNALS_PRIVACY_RELEASE="1")
    assert first.returncode == 0, first.stdout + first.stderr
    log = data / "release" / "log.ndjson"
    made = [json.loads(line) for line in log.read_text().splitlines()]
    again, _ = run_sh(tmp_path, data, "--new-data", SIGNALS_PRIVACY_RELEASE="1")
    assert again.returncode == 0, again.stdout + again.stderr
    remade = [json.loads(line) for line in log.read_text().splitlines()][len(made):]
    # every node again (as many as the first time, give or take an hour turned meanwhile), not the new hours only
    assert remade and remade[-1]["nodes"] > made[-1]["nodes"] // 2 > 1000
