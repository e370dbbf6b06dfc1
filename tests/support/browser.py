"""Headless Chromium for the dashboard's tests and benchmark: Debian's chromium and
chromium-driver (scripts/install_chromium.sh installs them), driven by plain Selenium, with the
browser console and the network (performance log) recorded."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from tests.support.processes import ROOT, service_env
from tests.support.redis_server import free_port

CHROMIUM = os.environ.get("SIGNALS_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SIGNALS_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")


def chrome():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    assert not missing, f"{missing} missing: run scripts/install_chromium.sh (scripts/test.sh does)"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000",
                     "--disable-gpu", "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--disable-default-apps"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def requested_urls(driver) -> list[str]:
    """Every URL the page asked for since the last call (the performance log is drained)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def unanswered(driver) -> list[str]:
    """The requests still waiting for an answer, and those that failed, from the performance log
    (drained): what a page stuck on "Loading..." is waiting for."""
    sent: dict[str, str] = {}
    failed = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        method, params = message.get("method"), message.get("params", {})
        if method == "Network.requestWillBeSent":
            sent[params["requestId"]] = params["request"]["url"]
        elif method == "Network.loadingFinished":
            sent.pop(params["requestId"], None)
        elif method == "Network.loadingFailed":
            failed.append(f"{sent.pop(params['requestId'], '?')} ({params.get('errorText')})")
    return [f"{url} (no answer yet)" for url in sent.values()] + failed


def console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


@contextlib.contextmanager
def dashboard(api_url: str, data_dir: Path):
    """The Procfile's dashboard command, really started (through bash, as honcho runs it);
    yields its base URL and a list that receives its output once it has stopped. The output goes
    to a file, not a pipe: a pipe nobody reads fills up and blocks the workers' writes."""
    procfile = dict(line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if ":" in line)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log: list[str] = []
    with tempfile.TemporaryFile(mode="w+") as output:
        process = subprocess.Popen(["bash", "-c", "exec " + procfile["dashboard"].strip()], cwd=ROOT,
                                   env=service_env(data_dir, SIGNALS_API_URL=api_url,
                                                   SIGNALS_DASHBOARD_PORT=str(port)),
                                   stdout=output, stderr=subprocess.STDOUT, text=True)

        def written() -> str:
            output.seek(0)
            return output.read()

        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(base + "/sign-in", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert process.poll() is None, written()
                assert time.monotonic() < deadline, "the dashboard did not start"
                time.sleep(0.2)
            yield base, log
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.append(written())
