"""A generation's manifest, `generations/g<N>.json` (`layout.manifest_path`): written by the landing
(`writer.write_tables`) before its files are renamed into place, it records the partition files
and other files (quarantine) the generation puts in place, and the source files' SHA-256 hashes.

`landed_sources` answers "is this file already in the store?" from the manifests of published
generations, so that running an ingest again after a crash does not land the same rows twice;
`sweep` reads the manifest of an unfinished generation to find its other files.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

from service.store import layout

# The landing's logger, whose name its lines carry (docs/data.md quotes them), as before writer.py was split.
log = logging.getLogger("service.store.writer")


@dataclasses.dataclass(frozen=True)
class SourceRecord:
    """A source file whose rows a generation landed (for `landed_sources`)."""

    sha256: str
    file: str  # its name when it was ingested
    table: str | None
    rows: int  # rows accepted from it


@dataclasses.dataclass(frozen=True)
class LandedSource:
    sha256: str
    file: str
    generation: int
    landed_at: str  # ISO 8601, UTC


def manifest_entries(path: Path, key: str) -> list[str]:
    """The text entries of a manifest's list `key`; none when the manifest cannot be read."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8")).get(key, [])
    except (OSError, ValueError, AttributeError):
        return []
    return [entry for entry in entries if isinstance(entry, str)] if isinstance(entries, list) else []


def landed_sources(data_dir: Path) -> dict[str, LandedSource]:
    """Source files (by SHA-256 of their bytes) whose rows are in the store: recorded by a
    published generation whose partition files are still there (`data demo --replace` removes
    them). The latest landing of a content wins."""
    data_dir = Path(data_dir)
    current = layout.read_generation(data_dir)
    found: dict[str, LandedSource] = {}
    for path in sorted(layout.generations_dir(data_dir).glob("g*.json")):
        generation = layout.manifest_generation(path)
        if generation is None or generation > current:
            continue
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.warning("unreadable manifest %s; the files it records may be ingested again", path)
            continue
        partitions = manifest.get("partitions", [])
        if not any((data_dir / relative).exists() for relative in partitions):
            continue
        for source in manifest.get("sources", []):
            found[source["sha256"]] = LandedSource(
                source["sha256"], source["file"], generation, manifest.get("landed_at", "")
            )
    return found
