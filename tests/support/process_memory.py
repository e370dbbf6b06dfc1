"""What processes hold in memory, from /proc (Linux): RSS and PSS per process and over a process
tree, and the part of them that is mapped from files under a directory (the store's snapshots).

PSS (proportional set size) counts a page shared by n processes as 1/n in each, so the PSS of a
set of processes adds up to the memory they use together; RSS counts shared pages in full in each.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

MIB = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Usage:
    pid: int
    rss: int  # bytes
    pss: int  # bytes
    anonymous: int  # bytes of private, not file-backed memory
    mapped_pss: int = 0  # bytes of PSS from files under the directory asked about (0 if none asked)
    mapped_rss: int = 0


def children(pid: int) -> list[int]:
    """Direct children of a process."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def tree(pid: int) -> list[int]:
    """The process and all its descendants."""
    pids, pending = [], [pid]
    while pending:
        current = pending.pop()
        pids.append(current)
        try:
            pending += children(current)
        except OSError:
            continue
    return pids


def usage(pid: int, under: Path | None = None) -> Usage:
    """RSS and PSS of one process (smaps_rollup); with `under`, also what it maps from files there."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
            values[parts[0][:-1]] = int(parts[1]) * 1024
    mapped_pss = mapped_rss = 0
    if under is not None:
        prefix = str(Path(under).resolve())
        inside = False
        for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
            head = line.split(None, 5)
            if head and not head[0].endswith(":"):  # a mapping's first line: address perms offset dev inode path
                inside = len(head) == 6 and head[5].startswith(prefix)
            elif inside and head[0] == "Pss:":
                mapped_pss += int(head[1]) * 1024
            elif inside and head[0] == "Rss:":
                mapped_rss += int(head[1]) * 1024
    return Usage(pid, values.get("Rss", 0), values.get("Pss", 0), values.get("Anonymous", 0), mapped_pss, mapped_rss)


def tree_usage(pid: int, under: Path | None = None) -> list[Usage]:
    """`usage` of every process of the tree rooted at `pid` (processes that ended meanwhile are left out)."""
    found = []
    for member in tree(pid):
        try:
            found.append(usage(member, under))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def mapped_inodes(pid: int, under: Path) -> set[int]:
    """The inodes of the files under a directory that a process maps (by the path it opened them
    with: a file mapped through a directory since deleted still counts)."""
    prefix = str(Path(under).resolve())
    found = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith(prefix):
            found.add(int(parts[4]))
    return found


def mapped_files(pid: int, under: Path) -> set[str]:
    """The files under a directory that a process maps (a deleted one ends in " (deleted)")."""
    prefix = str(Path(under).resolve())
    found = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith(prefix):
            found.add(parts[5])
    return found
