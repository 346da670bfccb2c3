"""Wiring the memory layer to the app: `open_memory(ctx)` and the `MemoryService` facade.

The chat engine calls `recall`, `remember` (explicit "remember that …") and `extract_async`;
the TUI and CLI use `service.store` for list/edit/delete/pin/undo/history and subscribe to its
changes. Nothing here loads the embedding model or Chroma until a search or a write needs it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

from assistant.config import Config
from assistant.context import AppContext
from assistant.errors import UserError
from assistant.llm.models import configured_window
from assistant.llm.provider import link, ollama_chat_fn, openai_chat_fn
from assistant.memory import reconcile
from assistant.memory.clock import Clock, system_clock
from assistant.memory.decay import enforce_capacity
from assistant.memory.explicit import explicit_memory
from assistant.memory.extraction import NUM_PREDICT, ChatFn, extract_memories
from assistant.memory.model import Actor, Memory, MemoryType, NewMemory, RecalledMemory
from assistant.memory.profile import ProfileRefresh, refresh_profile
from assistant.memory.recall import RecallSettings, recall, search
from assistant.memory.restate import classify, in_third_person
from assistant.memory.scoring import DecaySettings, ScoreWeights
from assistant.memory.secrets import find_secret
from assistant.memory.statement_rule import RULE_VIA
from assistant.memory.store import (
    PROFILE_ID,
    MemoryStore,
    NotGrounded,
    SecretRejected,
    VectorIndex,
)
from assistant.private_embedding import PrivateEmbedder
from indexing.threads import start_daemon

log = logging.getLogger(__name__)

MEMORY_COLLECTION = "memories"


def recall_settings(ctx: AppContext) -> RecallSettings:
    cfg = ctx.config.memory
    return RecallSettings(
        top_k=cfg.top_k,
        weights=ScoreWeights(cfg.weight_similarity, cfg.weight_importance, cfg.weight_freshness),
        decay=DecaySettings(after_days=float(cfg.decay_after_days)),
    )


def chroma_vectors(ctx: AppContext) -> VectorIndex:
    """The `memories` collection, beside the knowledge collection (or on the Chroma server).
    One made by another model starts afresh (derived_index's model-switch rule): memory vectors
    are derived from SQLite, and the store re-embeds every active memory on first use."""
    from indexing.derived_index import open_vectors

    embedder = ctx.embedder()
    location = ctx.config.store.vector_store or str(ctx.paths.vectors_dir)
    return open_vectors(location, MEMORY_COLLECTION, model_id=embedder.model_id,
                        dimension=embedder.dimension, what="memory")


def open_memory(
    ctx: AppContext, *, clock: Clock = system_clock, eager_vectors: bool = True
) -> MemoryStore:
    """The user's memory store (SQLite at paths.memory_db, Chroma collection `memories`)."""
    ctx.paths.ensure()
    return MemoryStore(
        ctx.paths.memory_db,
        embedder=lambda: PrivateEmbedder(ctx.embedder()),
        vectors=lambda: chroma_vectors(ctx),
        clock=clock,
        eager_vectors=eager_vectors,
    )


@dataclass(frozen=True, slots=True)
class Proposed:
    """What became of a memory the assistant proposed: `memory` is the stored one (`stored`) or
    the one already known (not `stored`); None when the user changed it meanwhile."""

    memory: Memory | None
    stored: bool


@dataclass(frozen=True, slots=True)
class ExtractionOutcome:
    added: list[Memory] = field(default_factory=list)
    updated: list[Memory] = field(default_factory=list)  # new memories that superseded others
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (text, reason)
    error: str | None = None


def configured_chat_fn(config: Config) -> ChatFn:
    """Extraction/profile requests for the configured chat model, with the num_ctx a chat
    would use (so they do not make Ollama reload it). In a chat, the engine passes its own."""
    o = config.ollama
    server = link(config)
    if server.is_openai:
        return openai_chat_fn(server, config.chat_model, timeout=o.first_token_timeout,
                              num_predict=NUM_PREDICT)

    def num_ctx() -> int:
        return configured_window(o.host, o.model, num_ctx=o.num_ctx, cap=o.context_window,
                                 timeout=o.timeout)

    return ollama_chat_fn(o.host, o.model, timeout=o.first_token_timeout,
                          keep_alive=o.keep_alive, num_ctx=num_ctx, num_predict=NUM_PREDICT)


class MemoryService:
    def __init__(
        self,
        store: MemoryStore,
        *,
        settings: RecallSettings | None = None,
        capacity: int = 2000,
        chat_fn: ChatFn | None = None,
    ) -> None:
        self.store = store
        self.settings = settings or RecallSettings()
        self.capacity = capacity
        self.chat_fn = chat_fn
        self._extract_lock = threading.Lock()

    @classmethod
    def open(
        cls, ctx: AppContext, *, clock: Clock = system_clock, eager_vectors: bool = True,
        store: MemoryStore | None = None,
    ) -> MemoryService:
        """The service over `store` (the caller keeps closing it) or a store of its own."""
        cfg = ctx.config
        return cls(
            store or open_memory(ctx, clock=clock, eager_vectors=eager_vectors),
            settings=recall_settings(ctx),
            capacity=cfg.memory.capacity,
            chat_fn=configured_chat_fn(cfg),
        )

    # --- recall -------------------------------------------------------------------------------

    def recall(self, query: str, *, top_k: int | None = None) -> list[RecalledMemory]:
        """Memories for a chat prompt (profile + pinned + sure profile facts + `top_k` relevant,
        memory.top_k by default), before the prompt's token budget; see `mark_used`."""
        return recall(self.store, query, settings=self.settings, top_k=top_k)

    def mark_used(self, memory_ids: Sequence[str]) -> None:
        """The memories a prompt really included (what decay and freshness count as used)."""
        self.store.mark_used([i for i in memory_ids if i != PROFILE_ID])

    def search(self, query: str, top_k: int | None = None) -> list[RecalledMemory]:
        k = self.settings.top_k if top_k is None else top_k
        return search(self.store, query, top_k=k, settings=self.settings)

    # --- writing ------------------------------------------------------------------------------

    def remember(self, utterance: str, *, session_id: str | None = None,
                 source: str | None = None) -> Memory | None:
        """If `utterance` is an explicit "remember that …", store it and return the memory.

        Raises SecretRejected (a UserError with a clear message) if it contains a secret.
        """
        text = explicit_memory(utterance)
        if text is None:
            return None
        finding = find_secret(utterance)
        if finding:
            raise SecretRejected(f"not remembered: {finding.message()}")
        # Stored as extraction would store it: "The user prefers …", typed as a preference.
        text = in_third_person(text)
        candidate = NewMemory(text=text, type=classify(text), importance=0.7, source=source,
                              session_id=session_id, source_text=utterance)
        return self._reconcile(candidate, Actor.USER).memory

    def remember_proposed(
        self,
        text: str,
        *,
        type: MemoryType,
        said: Sequence[str],
        session_id: str | None = None,
        source: str = "chat-tool",
    ) -> Proposed:
        """A memory the model asks to store (the `remember` tool). Stored only if grounded in
        `said` — the user's own messages of this conversation — and free of secrets; raises
        NotGrounded / SecretRejected (UserErrors with the reason) otherwise."""
        candidate = self.store.vet(
            NewMemory(text=text, type=type, importance=0.6, source=source,
                      session_id=session_id, evidence=tuple(said)),
            actor=Actor.ASSISTANT,
        )
        candidate = replace(candidate, evidence=tuple(said))
        return self._reconcile(candidate, Actor.ASSISTANT)

    def remember_for_agent(
        self, text: str, *, type: MemoryType, key: str | None, via: str
    ) -> Proposed:
        """A memory an outside agent stores through `brain mcp` (the user allowed it with
        mcp.allow_writes): the same secret filter, dedup/supersede and history as the chat,
        recorded as Actor.AGENT `via` the client, undoable like any change."""
        candidate = NewMemory(text=text, type=type, key=key, importance=0.6, source=via)
        with self.store.on_behalf_of(via):
            return self._reconcile(self.store.vet(candidate, actor=Actor.AGENT), Actor.AGENT)

    def _reconcile(self, candidate: NewMemory, actor: Actor) -> Proposed:
        """The one way a memory asked for in the chat is stored, whoever asked: what is already
        known is not stored twice, a new value for a key supersedes the old one."""
        decision = reconcile.decide(self.store, candidate)
        if decision.action is reconcile.Action.SKIP:
            return Proposed(decision.target, stored=False)
        stored = reconcile.apply(self.store, candidate, decision, actor=actor)
        return Proposed(stored, stored=stored is not None)

    def extract(
        self,
        user_turns: Sequence[str],
        *,
        session_id: str | None = None,
        turn_ids: Sequence[str] | None = None,
        chat_fn: ChatFn | None = None,
    ) -> ExtractionOutcome:
        """Extract memories from the session's user turns and reconcile them. Never raises."""
        chat = chat_fn or self.chat_fn
        if chat is None:
            return ExtractionOutcome(error="no chat model configured for extraction")
        with self._extract_lock:
            try:
                return self._extract(user_turns, session_id, turn_ids, chat)
            except Exception as exc:  # never into the chat
                log.exception("memory extraction failed")
                return ExtractionOutcome(error=str(exc) or type(exc).__name__)

    def _extract(self, user_turns: Sequence[str], session_id: str | None,
                 turn_ids: Sequence[str] | None, chat: ChatFn) -> ExtractionOutcome:
        # Read what is known *before* the slow model call; writes later check these versions,
        # so anything the user edits while the model runs is kept as the user wrote it.
        snapshot = {m.id: m for m in self.store.list()}
        known = [(m.key, m.text) for m in snapshot.values() if m.key]
        result = extract_memories(user_turns, chat_fn=chat, known=known)
        outcome = ExtractionOutcome(skipped=list(result.rejected), error=result.error)
        turns = [t for t in user_turns if t and t.strip()]
        for item in result.memories:
            source = None
            if turn_ids is not None and item.source_turn is not None:
                kept_ids = [i for t, i in zip(user_turns, turn_ids, strict=False)
                            if t and t.strip()]
                if item.source_turn < len(kept_ids):
                    source = kept_ids[item.source_turn]
            candidate = NewMemory(
                text=item.text, type=item.type, key=item.key, confidence=item.confidence,
                importance=item.importance, source=source, session_id=session_id,
                source_text=item.source_text if item.source_text in turns else None,
                evidence=tuple(turns),
            )
            decision = reconcile.decide(self.store, candidate, snapshot=snapshot)
            if decision.action is reconcile.Action.SKIP:
                outcome.skipped.append((item.text, decision.reason))
                continue
            try:
                with self.store.on_behalf_of(RULE_VIA) if item.by_rule else nullcontext():
                    stored = reconcile.apply(self.store, candidate, decision,
                                             actor=Actor.ASSISTANT)
            except SecretRejected as exc:
                outcome.skipped.append(("[redacted]", str(exc)))
                continue
            except NotGrounded as exc:
                outcome.skipped.append((item.text, str(exc)))
                continue
            if stored is None:
                outcome.skipped.append((item.text, "changed by the user meanwhile"))
            elif decision.action is reconcile.Action.UPDATE:
                outcome.updated.append(stored)
            else:
                outcome.added.append(stored)
        self.maintain()
        return outcome

    def extract_async(
        self,
        user_turns: Sequence[str],
        *,
        session_id: str | None = None,
        turn_ids: Sequence[str] | None = None,
        on_done: Callable[[ExtractionOutcome], None] | None = None,
    ) -> threading.Thread:
        """Run `extract` in a daemon thread so the chat reply is never delayed."""

        def work() -> None:
            outcome = self.extract(user_turns, session_id=session_id, turn_ids=turn_ids)
            if on_done is not None:
                on_done(outcome)

        return start_daemon("memory-extraction", work)

    def maintain(self) -> list[str]:
        """Enforce the capacity limit; returns the ids archived. Also restates what earlier
        versions stored for "remember that I …" in the first person (`restate_explicit`)."""
        self.restate_explicit()
        return enforce_capacity(self.store, self.capacity, self.settings)

    def restate_explicit(self) -> int:
        """Rewrite explicit memories stored by earlier versions as the user said them ("I
        prefer short answers.") into the form they get now ("The user prefers short
        answers."): only a memory whose text is still exactly what the old rule made of its
        `source_text` (one the user edited since says something else). A recorded, undoable
        update (history shows it). Runs after extraction, off the chat's path: the rewrite is
        re-embedded."""
        rewritten = 0
        for memory in self.store.list():
            said = memory.source_text
            if not said or explicit_memory(said) != memory.text:  # edited since: the user's
                continue
            text = in_third_person(memory.text)
            if text == memory.text:
                continue
            try:
                self.store.edit(memory.id, text, actor=Actor.ASSISTANT,
                                expected_version=memory.version, evidence=(said,))
            except UserError as exc:  # changed meanwhile, or refused: keep it as it is
                log.info("explicit memory %s not restated: %s", memory.id, exc)
                continue
            rewritten += 1
        return rewritten

    def refresh_profile(self, *, chat_fn: ChatFn | None = None) -> ProfileRefresh:
        chat = chat_fn or self.chat_fn
        if chat is None:
            raise UserError("no chat model configured to write the profile")
        return refresh_profile(self.store, chat_fn=chat)

    def close(self) -> None:
        self.store.close()
