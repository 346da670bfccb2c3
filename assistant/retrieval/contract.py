"""The stable JSON shape of `brain search --json` (scripts and evaluations depend on it).

Change it only by adding keys, never by renaming or retyping; the schema below is checked by
the tests against real output.
"""

from __future__ import annotations

from typing import Any

from assistant.retrieval.hit import RetrievalResult, SearchHit

SEARCH_RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["query", "low_confidence", "hits"],
    "additionalProperties": False,
    "properties": {
        "query": {"type": "string"},
        "low_confidence": {"type": "boolean"},
        # Added later (so not required of older output): the file dates searched, from
        # --since/--until or a time phrase in the query; `applied` false = nothing was
        # modified then and every date was searched.
        "time_range": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "required": ["since", "until", "phrase", "origin", "applied"],
            "properties": {
                "since": {"type": ["string", "null"]},
                "until": {"type": ["string", "null"]},
                "phrase": {"type": "string"},
                "origin": {"enum": ["flag", "query"]},
                "applied": {"type": "boolean"},
            },
        },
        "hits": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["rank", "source", "heading", "text", "score", "scores", "chunk_id"],
                "properties": {
                    "rank": {"type": "integer", "minimum": 1},
                    "source": {"type": "string", "pattern": "^/"},
                    "heading": {"type": "string"},
                    "text": {"type": "string"},
                    "score": {"type": "number", "minimum": 0, "maximum": 1},
                    "scores": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["vector", "keyword", "fused"],
                        "properties": {
                            "vector": {"type": ["number", "null"]},
                            "keyword": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
                            "fused": {"type": "number", "minimum": 0},
                        },
                    },
                    "chunk_id": {"type": "string", "minLength": 1},
                    # Added later (so not required of older output): the file's other
                    # matching chunks folded under this hit (0 on every hit but a file's best).
                    "more_from_file": {"type": "integer", "minimum": 0},
                    # PDF hits only: [first page, last page] (equal unless over a page break)
                    "pages": {"type": "array", "items": {"type": "integer", "minimum": 1},
                              "minItems": 2, "maxItems": 2},
                },
            },
        },
    },
}


def hit_to_json(hit: SearchHit) -> dict[str, Any]:
    chunk = hit.chunk
    return hit_json(
        rank=hit.rank, source=hit.source, heading=hit.heading, text=chunk.text,
        score=hit.score, vector=hit.cosine, keyword=hit.keyword, fused=hit.fused,
        chunk_id=hit.chunk_id, more_from_file=hit.more_from_file,
        pages=(chunk.page, chunk.last_page or chunk.page) if chunk.page is not None else None,
    )


def hit_json(
    *, rank: int, source: str, heading: str, text: str, score: float, vector: float | None,
    keyword: float | None, fused: float, chunk_id: str, more_from_file: int,
    pages: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """One hit object, from a live search or from a chat turn's source (`brain ask --json`)."""
    out: dict[str, Any] = {
        "rank": rank,
        "source": source,
        "heading": heading,
        "text": text,
        "score": score,
        "scores": {
            "vector": None if vector is None else round(vector, 6),
            "keyword": keyword,
            "fused": round(fused, 8),
        },
        "chunk_id": chunk_id,
        "more_from_file": more_from_file,
    }
    if pages is not None:
        out["pages"] = list(pages)
    return out


def result_to_json(
    result: RetrievalResult, *, time_range: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`time_range`: the dates searched (DatedResult.time_range_json), null when none."""
    return {
        "query": result.query,
        "low_confidence": result.low_confidence,
        "time_range": time_range,
        "hits": [hit_to_json(h) for h in result.hits],
    }
