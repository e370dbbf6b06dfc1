"""Every relative link in the repository's Markdown (README.md, CHANGELOG.md, docs/*.md, ...) leads to
a file of the repository, and its `#anchor`, if any, to a heading of that file; every `*.md` file
named in the docs, scripts and the docstrings and comments of the code (service/, connectors/,
dashboard/, cache/, scripts/, bench/, tests/) exists: a clone has nothing outside it."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
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


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown text: lower case, punctuation dropped,
    spaces as hyphens, a repeated heading numbered (-1, -2, ...); headings in code blocks are none."""
    found, seen, fenced = set(), {}, False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        heading = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading[1].lower()).replace(" ", "-")
            found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return found


def test_anchors_are_read_as_github_makes_them():
    text = "# Signals\n## Comparing periods: what `beyond_noise` means\n```\n# not a heading\n```\n## Signals\n"
    assert anchors(text) == {"signals", "comparing-periods-what-beyond_noise-means", "signals-1"}


def test_relative_links_in_markdown_resolve():
    broken, checked = [], 0
    for path in tracked("*.md"):
        for target in LINK.findall(path.read_text()):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # a URL
            file, _, anchor = target.partition("#")
            destination = (path.parent / file).resolve() if file else path
            if not destination.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}")
            elif anchor and destination.suffix == ".md":
                checked += 1
                if anchor not in anchors(destination.read_text()):
                    broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken
    assert checked > 20  # the docs link to sections of each other: the anchors are read


def docstrings_and_comments(source: str) -> str:
    """The docstrings and comments of a Python module, one after the other."""
    parts = [node.body[0].value.value for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
             and node.body and isinstance(node.body[0], ast.Expr)
             and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str)]
    parts += [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
              if token.type == tokenize.COMMENT]
    return "\n".join(parts)


def test_docstrings_and_comments_are_what_is_read_of_a_benchmark():
    source = '''"""Figures in docs/benchmarks.md."""\n# see docs/data.md\nOUT = "accuracy.md"\n'''
    assert MD_NAME.findall(docstrings_and_comments(source)) == ["docs/benchmarks.md", "docs/data.md"]


def test_markdown_files_named_in_docs_and_code_exist():
    missing = []
    for path in tracked("*.md", "*.py", "*.sh", "*.gs", "*.toml", "Procfile", ".env.example"):
        if ".venv" in path.parts or path.name == "test_doc_links.py":
            continue
        text = path.read_text(errors="replace")
        if path.parts[len(ROOT.parts)] == "bench" and path.suffix == ".py":
            # Benchmarks name the reports they write ("accuracy.md" in bench/out/), which are made,
            # not read: of them, the docstrings and comments are read.
            text = docstrings_and_comments(text)
        for name in MD_NAME.findall(text):
            if name.startswith("bench/out/"):
                continue  # a report a benchmark writes
            if not resolves(name, path.parent):
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert not missing, missing
