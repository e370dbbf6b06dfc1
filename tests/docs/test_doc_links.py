"""Every relative link in the repository's Markdown, and every `*.md` file named in its docs and
docstrings, leads to a file of the repository: a clone has nothing outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")
MD_NAME = re.compile(r"(?<![\w/.-])((?:\.\./|[\w.-]+/)*[\w.-]+\.md)\b")


def tracked(*patterns: str) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *patterns], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def resolves(name: str, beside: Path) -> bool:
    """A name resolves beside the file that says it, from the repository's root, or in docs/."""
    return any((base / name).resolve().is_file() for base in (beside, ROOT, ROOT / "docs"))


def test_relative_links_in_markdown_resolve():
    broken = []
    for path in tracked("*.md"):
        for target in LINK.findall(path.read_text()):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL, or an anchor on the same page
            file = target.split("#", 1)[0]
            if not (path.parent / file).resolve().exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_markdown_files_named_in_docs_and_code_exist():
    missing = []
    for path in tracked("*.md", "*.py", "*.sh", "*.gs", "*.toml", "Procfile", ".env.example"):
        if ".venv" in path.parts or path.name == "test_doc_links.py":
            continue
        if path.parts[len(ROOT.parts)] == "bench" and path.suffix == ".py":
            continue  # benchmarks name the reports they write (bench/out/*.md), which are made, not read
        for name in MD_NAME.findall(path.read_text(errors="replace")):
            if name.startswith("bench/out/"):
                continue  # a report a benchmark writes
            if not resolves(name, path.parent):
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert not missing, missing
