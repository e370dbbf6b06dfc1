"""`python -m service data ingest ...` that stops at a named stage of its work, for a test to kill.

    python -m tests.support.pausing_ingest STAGE DONE MARKER -- data ingest FILE...

Runs the real command line (`service.__main__.main`) in this process, with one change: ingest is
given an `on_stage` callback (`writer.StageCallback`; the command line itself passes none) that,
when called with (STAGE, DONE, _), writes MARKER and sleeps until the process is killed. The
stages: "parsing" before each file is read, "staging" before each file is staged, "renaming"
before each file is renamed into place (after the generation's manifest), "compacting" before a
table's snapshot is rewritten whole, "snapshot" before each file of the generation's snapshot is
written, "linking" before each previous segment file is hard-linked into it, "publishing" with
GENERATION's new value written but not yet renamed into place, "published" after. Nothing of this
is in the service: without this wrapper nobody passes a pausing callback.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from service import __main__ as service_main
from service.store import ingest


def main() -> int:
    stage, done, marker = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    argv = sys.argv[sys.argv.index("--") + 1 :]
    real = ingest.ingest_files

    def pause(name: str, count: int, total: int) -> None:
        if (name, count) == (stage, done):
            marker.write_text(f"{name} {count}/{total}\n")
            time.sleep(600)  # until killed

    def pausing_ingest_files(*args: object, **kwargs: object) -> ingest.IngestReport:
        return real(*args, **kwargs, on_stage=pause)

    ingest.ingest_files = pausing_ingest_files
    return service_main.main(argv)


if __name__ == "__main__":
    sys.exit(main())
