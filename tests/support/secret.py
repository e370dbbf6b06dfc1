"""The tests' SIGNALS_SECRET: every app, settings object and process the tests start is given it
explicitly (tests/support/processes.py puts it in the environment of the processes). A constant of
the test suite, so a failing draw can be reproduced; it never serves an install: the product has
no built-in secret (`scripts/run.sh` makes one per install, production refuses to start without one)."""

TEST_SECRET = "signals-test-suite-secret-never-serves"
