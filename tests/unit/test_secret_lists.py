"""Secrets in other words are refused, benign facts of the same shape kept (issue 22, finding 7).

Measured on two lists of our own (tests/data/secrets/): `dev.tsv`, which the detectors were
tuned on, and `heldout.tsv`, written before tuning and never tuned on. A line is a memory's
text, optionally with the user's turn it was extracted from (the grounding check). Targets:
refusals >= 95% of the secrets, false refusals <= 2% of the benign facts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.memory.secrets import find_secret_in

DATA = Path(__file__).resolve().parent.parent / "data" / "secrets"


def load(name: str) -> list[tuple[bool, str, tuple[str, ...]]]:
    rows = []
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, text, *said = line.split("\t")
        assert label in ("secret", "benign"), line
        rows.append((label == "secret", text, tuple(said)))
    return rows


def measure(name: str) -> tuple[float, float, list[str], list[str]]:
    rows = load(name)
    missed = [t for secret, t, said in rows if secret and not find_secret_in(t, said=said)]
    refused = [t for secret, t, said in rows if not secret and find_secret_in(t, said=said)]
    secrets = sum(1 for secret, _, _ in rows if secret)
    benign = len(rows) - secrets
    return 1 - len(missed) / secrets, len(refused) / benign, missed, refused


@pytest.mark.parametrize("name", ["dev.tsv", "heldout.tsv"])
def test_lists_are_big_enough(name: str) -> None:
    rows = load(name)
    assert sum(1 for s, _, _ in rows if s) >= (60 if name == "heldout.tsv" else 30)
    assert sum(1 for s, _, _ in rows if not s) >= (100 if name == "heldout.tsv" else 30)
    assert any("\u4e00" <= ch <= "\u9fff" for _, t, _ in rows for ch in t)  # Chinese too


@pytest.mark.parametrize("name", ["dev.tsv", "heldout.tsv"])
def test_refusals_and_false_refusals_meet_the_targets(name: str) -> None:
    caught, false, missed, refused = measure(name)
    assert caught >= 0.95, f"{caught:.1%} of secrets refused; missed: {missed}"
    assert false <= 0.02, f"{false:.1%} of benign facts refused: {refused}"
