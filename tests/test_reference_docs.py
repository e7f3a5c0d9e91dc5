"""The generated references are those the code makes now, and every relative link of the
README and of docs/ leads somewhere: to a file that exists and, for an anchor, to a heading
of that file."""

from __future__ import annotations

import re
import runpy
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
LINKED = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


@pytest.fixture(scope="module")
def reference() -> SimpleNamespace:
    """docs/reference.py's functions (it is a script, not a module of the package)."""
    import click

    if not hasattr(click.Option, "get_help_extra"):
        pytest.skip("the references are generated with click 8.2 or later")
    return SimpleNamespace(**runpy.run_path(str(DOCS / "reference.py")))


def test_generated_references_are_up_to_date(reference):
    for path, text in reference.references().items():
        committed = path.read_text(encoding="utf-8") if path.exists() else ""
        assert committed == text, (f"{path.relative_to(ROOT)} is not what the code makes: "
                                   "run `python docs/reference.py`")


def test_references_follow_the_code(reference, monkeypatch):
    """A changed help text or docstring changes the references (the check above can fail)."""
    from dtri.analytics.estimate import Approx
    from dtri.cli import main

    option = next(p for p in main.commands["count"].params if p.name == "approx")
    monkeypatch.setattr(option, "help", "A help text that is nowhere else.")
    monkeypatch.setattr(Approx, "__doc__", "A docstring that is nowhere else.")
    texts = {path.name: text for path, text in reference.references().items()}
    assert "A help text that is nowhere else." in texts["cli-reference.md"]
    assert "A docstring that is nowhere else." in texts["python-reference.md"]
    for name, text in texts.items():
        assert text != (DOCS / name).read_text(encoding="utf-8")


def test_the_cli_reference_has_every_command_and_option(reference):
    import click

    from dtri.cli import main

    text = reference.cli_reference()
    for name, command in main.commands.items():
        assert f"\n### dtri {name}\n" in text
        for param in command.params:
            if isinstance(param, click.Option):
                assert all(f"`{opt}`" in text for opt in param.opts), (name, param.opts)


def test_the_python_reference_has_every_public_name(reference):
    import dtri

    text = reference.python_reference()
    for name in dtri.__all__:
        assert f"\n### dtri.{name}\n" in text
    for member in ("Session.prepare", "PreparedGraph.k_truss", "Options.of", "Estimate.to_dict"):
        assert f"\n#### {member}\n" in text


# ------------------------------------------------------------------------------ links

FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^()\s<>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose(text: str) -> list[str]:
    """The paragraphs of a markdown text outside fenced code, escapes and code spans
    removed (a link there is no link)."""
    paragraphs, current, fenced = [], [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.strip():
            current.append(line)
        elif current:
            paragraphs.append("\n".join(current))
            current = []
    if current:
        paragraphs.append("\n".join(current))
    return [re.sub(r"(`+).+?\1", "", re.sub(r"\\.", "", p), flags=re.S) for p in paragraphs]


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: its text without markup, lower case, punctuation but
    ``-`` and ``_`` dropped, spaces as ``-``."""
    text = LINK.sub(lambda m: m.group(1), heading)
    text = re.sub(r"[`*]", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a markdown file's headings (a repeated one gets ``-1``, ``-2``...)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or not (match := HEADING.match(line)):
            continue
        slug = anchor(match.group(2))
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


def relative_links(path: Path) -> list[str]:
    targets = []
    for paragraph in prose(path.read_text(encoding="utf-8")):
        for match in LINK.finditer(paragraph):
            target = match.group(2)
            if not re.match(r"(https?|mailto):", target):
                targets.append(target)
    return targets


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in relative_links(path):
        file_part, _, fragment = target.partition("#")
        linked = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and unquote(fragment) not in anchors(linked):
            broken.append(f"{target}: no heading makes #{fragment}")
    return broken


@pytest.mark.parametrize("path", LINKED, ids=[str(p.relative_to(ROOT)) for p in LINKED])
def test_relative_links_lead_somewhere(path):
    assert broken_links(path) == []


def test_the_readme_links_are_found():
    assert "docs/cli-reference.md" in relative_links(ROOT / "README.md")
    assert "docs/cli.md#memory-caps-and-spilling" in relative_links(ROOT / "README.md")


def test_the_link_check_finds_broken_links(tmp_path):
    (tmp_path / "other.md").write_text("# A heading, `code` and all\n\n## A heading, `code` and "
                                       "all\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Top\n\n[ok](other.md#a-heading-code-and-all) [ok](other.md#a-heading-code-and-all-1)"
        " [ok](#top) [web](https://example.com/x) `[code](missing.md)`\n\n```text\n"
        "[fenced](missing.md)\n# not a heading\n```\n\n[gone](missing.md) [bad](other.md#nope)"
        "\n[here too](#not-a-heading)\n", encoding="utf-8")
    assert broken_links(page) == ["missing.md: no such file",
                                  "other.md#nope: no heading makes #nope",
                                  "#not-a-heading: no heading makes #not-a-heading"]


def test_the_python_reference_lists_every_tuning_key_with_its_comment(reference):
    from dtri.config import described_keys

    text = reference.python_reference()
    for key, (_, comment) in described_keys().items():
        assert f"| `{key}` |" in text and comment in text
