"""Test-only hooks for the real processes (gunicorn, `python -m service ...`), on PYTHONPATH only
when a test puts this folder there (tests/support/processes.py `hooked_env`). Nothing of the
product reads these variables:

- SIGNALS_TEST_CLOCK_FILE: the wall clock of every process is the ISO time in that file (the
  test moves it), through service.clock.SystemClock;
- SIGNALS_TEST_SLOW_COMPUTE_SECONDS: every answer the engine computes takes that much longer
  (service.answers.serving.Answers._computed), so a test can hold a computation open.
"""

import datetime as _dt
import importlib.abc
import importlib.util
import os
import sys
import time

_CLOCK = os.environ.get("SIGNALS_TEST_CLOCK_FILE")
_SLOW = os.environ.get("SIGNALS_TEST_SLOW_COMPUTE_SECONDS")


def _file_clock_now(self):
    with open(_CLOCK) as clock:
        return _dt.datetime.fromisoformat(clock.read().strip()).astimezone(_dt.UTC)


def _slowed(module):
    original = module.Answers._computed

    def computed(self, prepared, frames):
        time.sleep(float(_SLOW))
        return original(self, prepared, frames)

    module.Answers._computed = computed


def _patched(module):
    if module.__name__ == "service.clock" and _CLOCK:
        module.SystemClock.now = _file_clock_now
    if module.__name__ == "service.answers.serving" and _SLOW:
        _slowed(module)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Patches a module right after it is first executed (nothing is imported early: the gunicorn
    master must not load polars before it forks)."""

    names = {"service.clock", "service.answers.serving"}

    def find_spec(self, name, path, target=None):
        if name not in self.names:
            return None
        self.names = self.names - {name}
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patched(module)

        spec.loader.exec_module = exec_module
        return spec


if _CLOCK or _SLOW:
    sys.meta_path.insert(0, _AfterImport())
