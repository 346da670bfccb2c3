"""A LlamaIndex `BaseEmbedding` over our `Embedder`, so LlamaIndex components share its cache."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr


class DelegatingEmbedding(BaseEmbedding):
    """Every call goes to the wrapped embedder; async variants run it in a worker thread."""

    _embedder: Any = PrivateAttr()

    @classmethod
    def wrap(cls, embedder: Any) -> DelegatingEmbedding:
        instance = cls(model_name=embedder.model_id, embed_batch_size=64)
        instance._embedder = embedder
        return instance

    @classmethod
    def class_name(cls) -> str:
        return "SecondBrainEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._embedder.embed_query(query)]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed_documents(texts)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)
