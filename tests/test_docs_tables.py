"""Every markdown table of the docs renders as a table on the site (issue 47).

``mkdocs build --strict`` passes a table that renders as a paragraph of ``|`` characters (rows without their header,
say, under a heading): here each page is rendered with the site's own markdown extensions, and a paragraph that
starts with ``|`` is a broken table. A deliberately broken page proves the check can fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

markdown = pytest.importorskip("markdown", reason="the docs extra (markdown, pymdown-extensions) is not installed")
yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
BROKEN = re.compile(r"<p>\s*\|[^\n]*")


def _extensions() -> tuple[list[str], dict[str, dict]]:
    """The site's markdown extensions, as mkdocs.yml names them."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    names, options = [], {}
    for entry in config["markdown_extensions"]:
        name, settings = next(iter(entry.items())) if isinstance(entry, dict) else (entry, None)
        names.append(name)
        if settings:
            options[name] = settings
    if "pymdownx.snippets" in options:
        options["pymdownx.snippets"] = {**options["pymdownx.snippets"], "base_path": [str(ROOT)]}
    return names, options


def broken_tables(text: str) -> list[str]:
    """The start of each table row of ``text`` that renders as a paragraph instead of a table."""
    names, options = _extensions()
    html = markdown.markdown(text, extensions=names, extension_configs=options)
    return [found[:80] for found in BROKEN.findall(html)]


def test_a_table_without_its_header_is_found() -> None:
    page = "# Page\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n## Section\n| 3 | 4 |\n| 5 | 6 |\n"
    assert broken_tables(page) == ["<p>| 3 | 4 |"]


@pytest.mark.parametrize("page", sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"],
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_every_table_of_the_docs_renders_as_a_table(page: Path) -> None:
    assert broken_tables(page.read_text(encoding="utf-8")) == []
