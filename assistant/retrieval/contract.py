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
    out: dict[str, Any] = {
        "rank": hit.rank,
        "source": hit.source,
        "heading": hit.heading,
        "text": hit.chunk.text,
        "score": hit.score,
        "scores": {
            "vector": None if hit.cosine is None else round(hit.cosine, 6),
            "keyword": hit.keyword,
            "fused": round(hit.fused, 8),
        },
        "chunk_id": hit.chunk_id,
        "more_from_file": hit.more_from_file,
    }
    chunk = hit.chunk
    if chunk.page is not None:
        out["pages"] = [chunk.page, chunk.last_page]
    return out


def result_to_json(result: RetrievalResult) -> dict[str, Any]:
    return {
        "query": result.query,
        "low_confidence": result.low_confidence,
        "hits": [hit_to_json(h) for h in result.hits],
    }
