"""What can go wrong talking to the model server during a turn, as messages a user can act on.

Every failure of a turn becomes a `ChatError` (a `UserError`: the CLI prints it, the TUI shows it
as a banner) with a `kind` the UI can branch on and `retryable` saying whether trying the same
message again can help. The user's message and any partial answer are never lost: the engine
stores the turn before reporting the error.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Literal

from assistant.errors import HintedError, UserError
from assistant.logfile import log_hint
from assistant.ollama_host import host_setting
from indexing.errors import log_failure
from indexing.filesystem import full_or_read_only

log = logging.getLogger(__name__)

ErrorKind = Literal[
    "unavailable", "model_not_found", "timeout", "dropped", "context_overflow", "protocol",
    "server", "knowledge", "memory", "busy",
]


class ChatError(UserError):
    def __init__(
        self, kind: ErrorKind, message: str, hint: str | None = None, *, retryable: bool = True
    ) -> None:
        super().__init__(message, hint)
        self.kind = kind
        self.retryable = retryable


@dataclass(frozen=True, slots=True)
class ServerWords:
    """How the messages shared by both providers name the server and where they send the user:
    an OpenAI-compatible server (llama-server, LM Studio, vLLM) is not Ollama, and `ollama ps`
    means nothing to its user."""

    name: str  # "Ollama", "the model server"
    log_hint: str  # where to look when the stream breaks
    loaded_hint: str  # appended to the first-token timeout's hint ("" when there is no tool)
    check_host: str  # a reply the app cannot read: which setting to check ({setting}: where
    # the host came from, ollama_host.host_setting)


OLLAMA_WORDS = ServerWords(
    "Ollama", "check `ollama ps` and the Ollama server log", "; `ollama ps` shows what is loaded",
    "check that {setting} points at Ollama (`curl HOST/api/version`), update Ollama if it is "
    "old, and retry",
)
OPENAI_WORDS = ServerWords(
    "the model server", "check the model server's log", "",
    "check that llm.base_url points at an OpenAI-compatible server (`curl URL/models`) and retry",
)


def server_words(provider: str) -> ServerWords:
    """The words for `provider` ([llm] provider: "ollama" or "openai")."""
    return OPENAI_WORDS if provider == "openai" else OLLAMA_WORDS


def dropped(partial: bool, *, server: ServerWords = OLLAMA_WORDS) -> ChatError:
    kept = " (the partial answer is kept)" if partial else ""
    return ChatError(
        "dropped",
        f"the connection to {server.name} dropped in the middle of the answer{kept}",
        f"retry; if it keeps happening, {server.log_hint}",
    )


def stalled(seconds: float, *, partial: bool, server: ServerWords = OLLAMA_WORDS) -> ChatError:
    kept = " (the partial answer is kept)" if partial else ""
    return ChatError(
        "timeout",
        f"{server.name} stopped sending the answer: nothing for {seconds:g} s{kept}",
        "retry; if the machine is very busy, raise ollama.timeout (`brain config edit`)",
    )


def first_token_timeout(model: str, seconds: float, *, loading: bool,
                        server: ServerWords = OLLAMA_WORDS) -> ChatError:
    doing = "loading the model" if loading else "reading the prompt"
    return ChatError(
        "timeout",
        f"{model} did not start answering within {seconds:g} s ({server.name} was still "
        f"{doing})",
        "retry (a loaded model answers sooner), use a smaller or instruct model, or raise "
        f"ollama.first_token_timeout{server.loaded_hint}",
    )


def context_overflow(detail: str) -> ChatError:
    return ChatError(
        "context_overflow",
        f"the message does not fit in the model's context window: {detail}",
        "shorten the message, or raise ollama.num_ctx if the model supports a longer context",
        retryable=False,
    )


def protocol(detail: str, host: str, *, server: ServerWords = OLLAMA_WORDS) -> ChatError:
    return ChatError(
        "protocol",
        f"{server.name} at {host} sent a reply second-brain cannot read ({detail})",
        server.check_host.format(setting=host_setting(host)),
    )


def stage_failed(kind: ErrorKind, what: str, exc: BaseException) -> ChatError:
    """Knowledge search or memory recall failed before anything was sent to the model (the
    stage caught everything: a failure that is not a HintedError leaves its traceback here)."""
    log_failure(log, what + " failed", exc)
    flag = "--no-knowledge" if kind == "knowledge" else "--no-memory"
    return ChatError(
        kind,
        f"{what} failed: {_without_hint(exc)}",
        getattr(exc, "hint", None) or f"retry, or ask without it ({flag} / the toggle in the UI)",
    )


def not_saved(exc: BaseException, where: str | os.PathLike[str] | None = None) -> ChatError:
    """`where`: the sessions database, to name its filesystem when that is full or read-only
    (a read-only home: everything else of a turn works, only saving it cannot)."""
    reason = full_or_read_only(exc, where) if where not in (None, ":memory:") else None
    detail = f"{reason} ({_without_hint(exc)})" if reason else _without_hint(exc)
    return ChatError(
        "server",
        f"could not save the conversation: {detail}",
        getattr(exc, "hint", None) or "check the free disk space and the permissions of the "
        "data folder (`brain config path` shows where it is)",
    )


def _without_hint(exc: BaseException) -> str:
    """The message alone: the hint goes into the ChatError's own hint, not twice."""
    return exc.message if isinstance(exc, HintedError) else str(exc)


def _is_overflow(text: str) -> bool:
    text = text.lower()
    return "context" in text and any(w in text for w in ("exceed", "too long", "length", "window"))


def map_error(
    exc: BaseException, *, host: str, model: str, timeout_s: float, streaming: bool = False,
    server: ServerWords = OLLAMA_WORDS,
) -> ChatError:
    """Translate an exception raised while talking to the model server into a ChatError.

    `streaming`: the reply had started, so a cut connection is a dropped stream (retry) rather
    than a server that is not running. Transport failures are worded by Ollama's client only
    for Ollama (the OpenAI transport raises its own ChatErrors, assistant/llm/openai_errors.py).
    """
    import httpx
    import pydantic

    from assistant.llm import ollama_client as oc

    if isinstance(exc, ChatError):
        return exc
    if streaming and isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return dropped(partial=True, server=server)
    if _is_overflow(str(exc)):
        return context_overflow(str(getattr(exc, "error", exc)))
    mapped = oc.map_exception(exc, host, model, timeout=timeout_s) \
        if server is OLLAMA_WORDS else None
    if mapped is None:
        if isinstance(exc, pydantic.ValidationError | KeyError | TypeError | ValueError):
            first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
            return protocol(f"{type(exc).__name__}: {first}", host, server=server)
        # Not a transport failure, so most likely a bug: keep the traceback in the log, but
        # still fail the turn cleanly so the user's message is stored and can be retried.
        log.error("unexpected error during a chat turn", exc_info=exc)
        return ChatError(
            "server",
            f"unexpected error while talking to {server.name}: {type(exc).__name__}: {exc}",
            f"retry; if it persists: {log_hint()}",
        )
    kind: ErrorKind
    retryable = True
    if isinstance(mapped, oc.ModelNotFound):
        kind, retryable = "model_not_found", False
    elif isinstance(mapped, oc.OllamaTimeout):
        kind = "timeout"
    elif isinstance(mapped, oc.OllamaUnavailable):
        kind = "dropped" if streaming else "unavailable"
    elif isinstance(mapped, oc.OllamaProtocolError):
        kind = "protocol"
    else:
        kind = "server"
    return ChatError(kind, str(mapped.args[0]), mapped.hint, retryable=retryable)
