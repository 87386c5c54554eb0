"""The documents lead somewhere: every relative link of the README, docs/ and the services'
READMEs names a file that exists, and a heading of it that exists when it names one."""

from __future__ import annotations

from pathlib import Path

from tests.support.markdown import anchors, links

REPO = Path(__file__).resolve().parents[1]


def documents() -> list[Path]:
    return [
        REPO / "README.md",
        *sorted((REPO / "docs").rglob("*.md")),
        *sorted((REPO / "services").glob("*/README.md")),
    ]


def broken_links(document: Path) -> list[str]:
    """The links of one document that lead nowhere, as `target: why`."""
    broken = []
    for target in links(document):
        if "://" in target or target.startswith("mailto:"):
            continue  # outside the repository
        path, _, section = target.partition("#")
        destination = (document.parent / path).resolve() if path else document
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif section and destination.suffix == ".md" and section not in anchors(destination):
            broken.append(f"{target}: no such heading")
    return broken


def test_every_relative_link_of_the_documents_leads_to_a_file_and_heading() -> None:
    found = {
        str(document.relative_to(REPO)): broken
        for document in documents()
        if (broken := broken_links(document))
    }
    assert found == {}


def test_a_link_to_a_missing_file_or_heading_is_named(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A heading: with `code`\n")
    document = tmp_path / "doc.md"
    document.write_text(
        "[ok](there.md#a-heading-with-code) [gone](missing.md) [lost](there.md#nowhere)\n"
        "```\n[in code](nowhere.md)\n```\n"
    )
    assert broken_links(document) == [
        "missing.md: no such file",
        "there.md#nowhere: no such heading",
    ]
