"""BEIR SciFact (train split only) as a second retrieval tuning set.

The corpus (5,183 abstracts) becomes one Markdown file per abstract (`# title`, then the text),
indexed through the product's own pipeline like any user folder. Only the 809 train claims and
their judgments are read: the test split is held out and never used (bench/data/README.md).
SciFact is CC BY-NC 2.0, evaluation only: nothing of it is copied into the repository.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.common import SHARED_ENV, MissingData, shared_dir

NDCG_AT = 10


@dataclass(frozen=True, slots=True)
class Claim:
    id: str
    text: str
    relevant: frozenset[str]  # corpus ids judged relevant


def scifact_dir() -> Path:
    path = shared_dir() / "datasets" / "scifact"
    if not (path / "corpus.jsonl").is_file() or not (path / "qrels_train.tsv").is_file():
        raise MissingData(
            f"SciFact not found at {path}; set {SHARED_ENV} to the folder holding datasets/"
        )
    return path


def write_corpus(dest: Path) -> int:
    """One `<id>.md` per abstract under `dest` (rewritten only when missing or different,
    so a re-run leaves mtimes and the index alone). Returns the number of files."""
    dest.mkdir(parents=True, exist_ok=True)
    count = 0
    with (scifact_dir() / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            doc = json.loads(line)
            body = f"# {doc['title'].strip()}\n\n{doc['text'].strip()}\n"
            path = dest / f"{doc['_id']}.md"
            if not path.is_file() or path.read_text(encoding="utf-8") != body:
                path.write_text(body, encoding="utf-8")
            count += 1
    return count


def train_claims() -> list[Claim]:
    """The train claims that have at least one judged abstract, in file order."""
    root = scifact_dir()
    relevant: dict[str, set[str]] = {}
    for row in (root / "qrels_train.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        parts = row.split("\t")
        if len(parts) >= 3 and float(parts[2]) > 0:
            relevant.setdefault(parts[0], set()).add(parts[1])
    claims = []
    for line in (root / "queries_train.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            if q["_id"] in relevant:
                claims.append(Claim(q["_id"], q["text"], frozenset(relevant[q["_id"]])))
    return claims


def doc_id(source: str) -> str:
    """The corpus id of an indexed abstract file (`…/4983.md` → `4983`)."""
    return Path(source).stem


def ndcg(ranked_docs: Sequence[str], relevant: frozenset[str], k: int = NDCG_AT) -> float:
    """Binary-relevance nDCG@k over distinct documents in rank order."""
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked_docs[:k]) if d in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


def recall(ranked_docs: Sequence[str], relevant: frozenset[str], k: int = NDCG_AT) -> float:
    return len(set(ranked_docs[:k]) & relevant) / len(relevant) if relevant else 0.0
