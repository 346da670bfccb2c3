"""The chat engine's settings: one model and one context size per session, and the budgets of
a turn's prompt (`EngineSettings.from_config` reads them from the config file's sections)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assistant.llm.errors import ChatError
from assistant.llm.provider import link

if TYPE_CHECKING:
    from assistant.config import Config


@dataclass(frozen=True, slots=True)
class EngineSettings:
    host: str  # the Ollama host, or the OpenAI-compatible base URL
    model: str
    provider: str = "ollama"  # [llm] provider (assistant/llm/provider.py)
    api_key_env: str = ""  # where an OpenAI-compatible server's key is read, never the key
    api_key_file: str = ""
    timeout: float = 60.0  # silence allowed between two chunks of an answer
    first_token_timeout: float = 900.0  # the silent load + prompt reading before them
    think: str = "auto"  # auto | on | off (thinking.py)
    temperature: float = 0.3
    num_ctx: int = 0
    context_cap: int = 8192
    keep_alive: str = "10m"
    persona: str = "You are second-brain, a private assistant. Answer clearly and concisely."
    tools: bool = False
    history_turns: int = 8
    fold_batch: int = 4  # fold old turns into the summary this many at a time (summary.py)
    answer_reserve: int = 1024
    max_answer_tokens: int = 0  # num_predict of every answer; 0 = the answer reserve
    memory_share: float = 0.25
    knowledge_share: float = 0.45
    memory_top_k: int = 5
    extract_every_turns: int = 6
    top_k: int | None = None
    recall_top_k: int = 3  # earlier turns recalled per question (0 = off)
    conversation_share: float = 0.15
    summaries: bool = True  # write session summaries in idle time
    summarize_idle_seconds: float = 120.0  # idle this long after an answer: summarise (0 = off)

    @classmethod
    def from_config(cls, config: Config) -> EngineSettings:
        o = config.ollama
        server = link(config)
        return cls(
            host=server.url,
            model=config.chat_model,
            provider=server.provider,
            api_key_env=server.api_key_env,
            api_key_file=server.api_key_file,
            timeout=o.timeout,
            first_token_timeout=o.first_token_timeout,
            think=o.think,
            temperature=o.temperature,
            num_ctx=o.num_ctx,
            context_cap=o.context_window,
            keep_alive=o.keep_alive,
            persona=config.system_prompt(),
            tools=o.tools,
            history_turns=config.chat.history_turns,
            answer_reserve=config.chat.answer_reserve,
            max_answer_tokens=config.chat.max_answer_tokens,
            memory_share=config.memory.budget_share,
            memory_top_k=config.memory.top_k,
            extract_every_turns=config.memory.extract_every_turns,
            top_k=config.retrieval.top_k,
            recall_top_k=config.chat.recall_top_k,
            conversation_share=config.chat.recall_share,
            summaries=config.chat.session_summaries,
            summarize_idle_seconds=float(config.chat.summarize_idle_seconds),
        )


def checked_changes(settings: EngineSettings, changes: dict[str, Any]) -> dict[str, Any]:
    """`ChatEngine.configure`'s changes, checked against the settings' fields (an int for a
    float is taken as one); ChatError for an unknown name or a bad value."""
    current = {name: getattr(settings, name) for name in settings.__slots__}
    changes = {
        k: float(v) if isinstance(current.get(k), float) and type(v) is int else v
        for k, v in changes.items()
    }
    for name, value in changes.items():
        if name not in current or name in ("host", "provider", "api_key_env", "api_key_file"):
            raise ChatError("protocol", f"unknown chat option {name!r}", retryable=False)
        old = current[name]
        if old is not None and not isinstance(value, type(old)):
            raise ChatError(
                "protocol", f"{name} must be a {type(old).__name__}, got {value!r}",
                retryable=False,
            )
    if changes.get("temperature", 0) < 0 or changes.get("num_ctx", 0) < 0:
        raise ChatError("protocol", "temperature and num_ctx cannot be negative",
                        retryable=False)
    if changes.get("think", "auto") not in ("auto", "on", "off"):
        raise ChatError("protocol", "think must be auto, on or off", retryable=False)
    return changes
