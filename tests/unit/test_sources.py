"""Walking registered folders: ignore rules, symlinks, size limit and skip reasons."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from indexing.readers import SkipFile, read_file
from indexing.sources import (
    Skipped,
    SkipReason,
    SourceFile,
    SourceSettings,
    is_ignored,
    walk,
)
from tests.fixtures.nasty_folder import NastyFolder, build_nasty_folder, deny_reading


@pytest.fixture
def nasty(tmp_path: Path) -> NastyFolder:
    return build_nasty_folder(tmp_path, max_bytes=64 * 1024)


def _outcomes(
    nasty: NastyFolder, monkeypatch: pytest.MonkeyPatch, settings: SourceSettings
) -> tuple[dict[str, SkipReason | str], list[str]]:
    """relpath → decoded text or skip reason, after walking and reading like a sync does."""
    outcomes: dict[str, SkipReason | str] = {}
    order: list[str] = []
    with deny_reading(monkeypatch, nasty.root / nasty.unreadable):
        for item in walk(nasty.root, settings):
            rel = nasty.rel(item.path)
            order.append(rel)
            assert rel not in outcomes, f"{rel!r} yielded twice"
            if isinstance(item, Skipped):
                assert item.detail, f"{rel!r} skipped without a detail"
                outcomes[rel] = item.reason
                continue
            try:
                outcomes[rel] = read_file(item.path, max_bytes=settings.max_file_bytes).text
            except SkipFile as exc:
                outcomes[rel] = exc.reason
    return outcomes, order


def test_nasty_folder_every_case(nasty: NastyFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = SourceSettings(max_file_bytes=64 * 1024)
    outcomes, _ = _outcomes(nasty, monkeypatch, settings)
    for rel, snippet in nasty.indexed.items():
        assert rel in outcomes, f"{rel!r} was not yielded"
        assert isinstance(outcomes[rel], str), f"{rel!r} skipped: {outcomes[rel]}"
        assert snippet in outcomes[rel], rel
    for rel, reason in nasty.skipped.items():
        assert outcomes.get(rel) == reason, f"{rel!r}: expected {reason}, got {outcomes.get(rel)}"
    for rel in nasty.ignored:
        assert rel not in outcomes, f"ignored {rel!r} was yielded"
    assert not any(rel.startswith(("links/notes-again/", "links/loop/")) for rel in outcomes)
    unexpected = set(outcomes) - set(nasty.indexed) - set(nasty.skipped)
    assert unexpected == set()


def test_walk_order_is_deterministic(nasty: NastyFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = SourceSettings(max_file_bytes=64 * 1024)
    _, first = _outcomes(nasty, monkeypatch, settings)
    _, second = _outcomes(nasty, monkeypatch, settings)
    assert first == second
    files = [r for r in first if not r.startswith("links/")]
    assert files.index("code/app.py") < files.index("enc/bom.md") < files.index("notes/install.md")


def test_source_file_fields(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("hello\n")
    os.utime(tmp_path / "a.md", (1_700_000_000, 1_700_000_000))
    (item,) = list(walk(tmp_path, SourceSettings()))
    assert item == SourceFile(tmp_path / "a.md", tmp_path, 6, 1_700_000_000.0)


def test_size_limit_is_configurable(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 2000)
    (tmp_path / "small.txt").write_text("x" * 10)
    items = {p.path.name: p for p in walk(tmp_path, SourceSettings(max_file_bytes=1000))}
    assert isinstance(items["big.txt"], Skipped)
    assert items["big.txt"].reason is SkipReason.too_large
    assert "limit" in items["big.txt"].detail
    assert isinstance(items["small.txt"], SourceFile)
    items = {p.path.name: p for p in walk(tmp_path, SourceSettings(max_file_bytes=5000))}
    assert isinstance(items["big.txt"], SourceFile)


def test_include_and_exclude_globs(tmp_path: Path) -> None:
    for rel in ("a.md", "b.txt", "docs/c.md", "docs/drafts/d.md", "src/e.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("text\n")
    settings = SourceSettings(include=("*.md",), exclude=("drafts/",))
    names = sorted(os.path.relpath(i.path, tmp_path) for i in walk(tmp_path, settings))
    assert names == ["a.md", "docs/c.md"]
    settings = SourceSettings(exclude=("docs/**", "*.py"))
    names = sorted(os.path.relpath(i.path, tmp_path) for i in walk(tmp_path, settings))
    assert names == ["a.md", "b.txt"]


def test_gitignore_can_be_turned_off(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.md\n")
    (tmp_path / "a.md").write_text("text\n")
    assert list(walk(tmp_path, SourceSettings())) == []
    assert [i.path.name for i in walk(tmp_path, SourceSettings(respect_gitignore=False))] == [
        "a.md"
    ]


def test_file_deleted_during_walk_is_vanished(tmp_path: Path) -> None:
    for name in ("a.md", "b.md", "c.md"):
        (tmp_path / name).write_text(f"{name}\n")
    walker = walk(tmp_path, SourceSettings())
    first = next(walker)
    assert isinstance(first, SourceFile)
    (tmp_path / "b.md").unlink()
    rest = list(walker)
    assert isinstance(rest[0], Skipped)
    assert rest[0].reason is SkipReason.vanished
    assert isinstance(rest[1], SourceFile)


def test_missing_root_is_reported_not_raised(tmp_path: Path) -> None:
    (item,) = list(walk(tmp_path / "gone", SourceSettings()))
    assert isinstance(item, Skipped)
    assert item.reason is SkipReason.vanished
    (tmp_path / "file.md").write_text("x\n")
    (item,) = list(walk(tmp_path / "file.md", SourceSettings()))
    assert isinstance(item, Skipped)
    assert item.reason is SkipReason.not_a_file


def test_unreadable_folder_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "a.md").write_text("x\n")
    (tmp_path / "open.md").write_text("x\n")
    real_scandir = os.scandir

    def scandir(path: os.PathLike[str] | str) -> object:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    items = list(walk(tmp_path, SourceSettings()))
    assert [(type(i).__name__, i.path.name) for i in items] == [
        ("Skipped", "locked"),
        ("SourceFile", "open.md"),
    ]
    skipped = items[0]
    assert isinstance(skipped, Skipped) and skipped.reason is SkipReason.unreadable


def test_symlinked_root_keeps_the_given_path(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.md").write_text("x\n")
    (real / "inner.md").symlink_to(real / "a.md")  # inside the real root: not a duplicate
    link = tmp_path / "link"
    link.symlink_to(real)
    items = list(walk(link, SourceSettings()))
    assert [i.path for i in items] == [link / "a.md"]
    assert all(isinstance(i, SourceFile) and i.root == link for i in items)


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("notes/install.md", False),
        ("app.log", True),
        ("keep.log", False),
        ("secret-notes/plan.md", True),
        ("generated.md", True),
        ("sub/generated.md", False),
        ("sub/local.md", True),
        ("other/local.md", False),
        (".git/config", True),
        ("node_modules/left-pad/index.js", True),
        ("myenv/lib/python3.11/site.py", True),
        (".obsidian/workspace.json", True),
        ("build/output.txt", True),
        ("__pycache__/x.pyc", True),
        ("brand/new/file.md", False),  # need not exist: the watcher asks about deleted files too
    ],
)
def test_is_ignored_matches_walk(nasty: NastyFolder, rel: str, expected: bool) -> None:
    settings = SourceSettings()
    assert is_ignored(nasty.root / rel, nasty.root, settings) is expected


def test_is_ignored_outside_root_and_with_globs(tmp_path: Path) -> None:
    settings = SourceSettings(include=("*.md",), exclude=("drafts/",))
    assert is_ignored(tmp_path.parent / "x.md", tmp_path, settings)
    assert is_ignored(tmp_path / "a.txt", tmp_path, settings)
    assert is_ignored(tmp_path / "drafts" / "a.md", tmp_path, settings)
    assert not is_ignored(tmp_path / "notes" / "a.md", tmp_path, settings)


def test_file_that_becomes_ignored(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("x\n")
    assert not is_ignored(tmp_path / "a.md", tmp_path, SourceSettings())
    (tmp_path / ".gitignore").write_text("a.md\n")
    assert is_ignored(tmp_path / "a.md", tmp_path, SourceSettings())
    assert list(walk(tmp_path, SourceSettings())) == []


def test_git_info_exclude_is_respected(tmp_path: Path) -> None:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("private.md\n*.tmp\n")
    (tmp_path / ".gitignore").write_text("!keep.tmp\n")
    for name in ("private.md", "public.md", "x.tmp", "keep.tmp"):
        (tmp_path / name).write_text("x\n")
    assert sorted(i.path.name for i in walk(tmp_path, SourceSettings())) == [
        "keep.tmp",
        "public.md",
    ]
    assert is_ignored(tmp_path / "private.md", tmp_path, SourceSettings())


def test_is_ignored_for_folders(tmp_path: Path) -> None:
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "notes").mkdir()
    settings = SourceSettings(include=("*.md",))
    assert is_ignored(tmp_path / "node_modules", tmp_path, settings)
    assert not is_ignored(tmp_path / "notes", tmp_path, settings)


def test_gitignore_in_every_folder_of_a_wide_tree(tmp_path: Path) -> None:
    for d in range(10):
        sub = tmp_path / f"dir{d}"
        sub.mkdir()
        (sub / ".gitignore").write_text("*.tmp\n")
        for f in range(20):
            (sub / f"file{f}.md").write_text("x\n")
            (sub / f"file{f}.tmp").write_text("x\n")
    items = list(walk(tmp_path, SourceSettings()))
    assert len(items) == 200
    assert all(isinstance(i, SourceFile) and i.path.suffix == ".md" for i in items)
