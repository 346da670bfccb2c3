"""Retrieval quality: hit@k and MRR@10 over eval cases with known answers.

An eval case is `{"query": str, "expected": [path suffixes or file stems], "lang"?: str}`.
A retrieved source matches an expected entry when the entry is a path suffix of it on a
component boundary (`pages/common/tar.md`) or equals its file stem (`tar`). Ranking is by
distinct source files: several chunks of one file count as one answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from assistant.errors import UserError

KS: tuple[int, ...] = (1, 3, 5, 10)
MRR_AT = 10


@dataclass(frozen=True, slots=True)
class EvalCase:
    query: str
    expected: tuple[str, ...]
    lang: str | None = None
    line: int = 0


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: EvalCase
    sources: tuple[str, ...]  # distinct sources in rank order
    rank: int | None  # 1-based rank of the first relevant source, None when missed

    def hit_at(self, k: int) -> bool:
        return self.rank is not None and self.rank <= k


@dataclass(frozen=True, slots=True)
class Metrics:
    count: int
    hit_at: dict[int, float]
    mrr: float  # MRR@10

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"count": self.count}
        out.update({f"hit@{k}": round(v, 4) for k, v in self.hit_at.items()})
        out[f"mrr@{MRR_AT}"] = round(self.mrr, 4)
        return out


@dataclass(frozen=True, slots=True)
class EvalReport:
    overall: Metrics
    by_lang: dict[str, Metrics] = field(default_factory=dict)
    results: tuple[CaseResult, ...] = ()

    @property
    def misses(self) -> list[CaseResult]:
        return [r for r in self.results if not r.hit_at(max(KS))]


def matches(source: str, expected: str) -> bool:
    want = expected.strip().replace("\\", "/").strip("/")
    if not want:
        return False
    path = PurePosixPath(source.replace("\\", "/"))
    if "/" in want or "." in want:
        wanted_parts = PurePosixPath(want).parts
        if len(wanted_parts) <= len(path.parts) and path.parts[-len(wanted_parts):] == wanted_parts:
            return True
    return path.stem == want or path.name == want


def distinct_sources(sources: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for s in sources:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def first_relevant_rank(sources: Sequence[str], expected: Sequence[str]) -> int | None:
    for position, source in enumerate(sources, start=1):
        if any(matches(source, e) for e in expected):
            return position
    return None


def score_case(case: EvalCase, ranked_sources: Sequence[str]) -> CaseResult:
    sources = tuple(distinct_sources(ranked_sources))
    return CaseResult(case, sources, first_relevant_rank(sources, case.expected))


def metrics(results: Sequence[CaseResult]) -> Metrics:
    n = len(results)
    if n == 0:
        return Metrics(0, {k: 0.0 for k in KS}, 0.0)
    hit = {k: sum(r.hit_at(k) for r in results) / n for k in KS}
    mrr = sum(1.0 / r.rank for r in results if r.rank is not None and r.rank <= MRR_AT) / n
    return Metrics(n, hit, mrr)


def evaluate(results: Sequence[CaseResult]) -> EvalReport:
    langs = sorted({r.case.lang for r in results if r.case.lang})
    by_lang = {lang: metrics([r for r in results if r.case.lang == lang]) for lang in langs}
    return EvalReport(metrics(results), by_lang, tuple(results))


def parse_cases(lines: Iterable[str], *, name: str = "eval file") -> tuple[list[EvalCase], int]:
    """Eval cases from JSON lines; returns (cases, skipped) where skipped counts cases with
    no expected sources (e.g. a 👎 export the user did not annotate). Malformed lines are a
    UserError naming the line, raised before anything runs.
    """
    cases: list[EvalCase] = []
    skipped = 0
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"{name}:{number}: not valid JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise UserError(f"{name}:{number}: expected a JSON object")
        query = obj.get("query")
        if not isinstance(query, str) or not query.strip():
            raise UserError(f"{name}:{number}: \"query\" must be a non-empty string")
        expected = obj.get("expected", [])
        if isinstance(expected, str):
            expected = [expected]
        if not isinstance(expected, list) or not all(isinstance(e, str) for e in expected):
            raise UserError(f"{name}:{number}: \"expected\" must be a list of strings")
        lang = obj.get("lang")
        if lang is not None and not isinstance(lang, str):
            raise UserError(f"{name}:{number}: \"lang\" must be a string")
        expected = [e for e in expected if e.strip()]
        if not expected:
            skipped += 1
            continue
        cases.append(EvalCase(query.strip(), tuple(expected), lang, number))
    return cases, skipped


def read_cases(path: Path) -> tuple[list[EvalCase], int]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UserError(f"{path}: no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from exc
    cases, skipped = parse_cases(text.splitlines(), name=str(path))
    if not cases and not skipped:  # only unlabeled cases: reported by the caller, not an error
        raise UserError(
            f"{path}: no eval cases with expected sources",
            hint='each line is {"query": "...", "expected": ["path/suffix.md" or "stem"]}',
        )
    return cases, skipped


def unindexed_expected(cases: Sequence[EvalCase], indexed: Sequence[str]) -> list[str]:
    """Expected sources that match no indexed file: their cases can never be hits."""
    missing: list[str] = []
    for case in cases:
        for want in case.expected:
            if want not in missing and not any(matches(src, want) for src in indexed):
                missing.append(want)
    return missing


def run_cases(
    cases: Sequence[EvalCase],
    ranked_sources: Callable[[str], Sequence[str]],
) -> EvalReport:
    """Evaluate `ranked_sources(query) -> sources best first` (chunk-level is fine: sources
    are de-duplicated) over `cases`.
    """
    return evaluate([score_case(case, ranked_sources(case.query)) for case in cases])
