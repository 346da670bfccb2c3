"""Health checks behind `brain doctor`: is everything the app needs present and working?

Each check answers one question with a one-line detail and, when it fails, a fix the user can
type. Checks run concurrently in daemon threads and the whole report is bounded by the
configured request timeout (at least MIN_CHECK_SECONDS): a dead Ollama (connection refused or a
black-holed host) is reported at once, and a slow model load cannot hide the other results.
"""

from __future__ import annotations

import functools
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from assistant.config import Config, ConfigError
from assistant.config_load import load_config
from assistant.context import AppContext
from assistant.errors import UserError
from assistant.paths import DIR_MODE, AppPaths, resolve_paths
from indexing.threads import start_daemon

LOW_DISK_BYTES = 1_000_000_000
# Opening Chroma and reading the model's files take a moment even on an idle machine; a tiny
# request timeout must not turn that into false failures.
MIN_CHECK_SECONDS = 3.0


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    hint: str = ""
    essential: bool = True

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class DoctorReport:
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """True when every essential check passed (warnings allowed)."""
        return all(c.ok or not c.essential for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [c.as_dict() for c in self.checks]}


OnCheck = Callable[[Check], None]


def run_doctor(home: str | None = None, *, on_check: OnCheck | None = None) -> DoctorReport:
    """Run every check for `--home` (or $BRAIN_HOME / the platform dirs).

    Read-only: the doctor looks, it never creates the dirs or the config file, writes no
    probe file, no embedding cache and no model export (run in the real user dirs it must
    leave no trace). `on_check` sees each check as soon as it and all before it are known
    (stable order), so a terminal can print the Ollama verdict at once while the embedding
    model is still loading.
    """
    emit = on_check or (lambda check: None)
    paths = resolve_paths(home)
    try:
        config = load_config(paths.config_file)
        if config.source is None:
            config_check = Check("config", True, f"{paths.config_file} (not created yet: "
                                 "defaults in use; `brain config edit` creates it)")
        else:
            config_check = Check("config", True, str(paths.config_file))
    except ConfigError as exc:
        config = Config()
        config_check = Check("config", False, str(exc),
                             "fix the file with `brain config edit` (defaults used below)")
    emit(config_check)
    ctx = AppContext(paths=paths, config=config, read_only=True)
    return DoctorReport((config_check, *run_checks(ctx, on_check=emit)))


class _Slot:
    """Where a check group's thread leaves its result, or a partial one if it runs out of time."""

    def __init__(self, fallback: list[Check]) -> None:
        self.fallback = fallback
        self.result: list[Check] | None = None
        self.partial: list[Check] | None = None


def run_checks(ctx: AppContext, *, on_check: OnCheck | None = None) -> list[Check]:
    """All checks except the config file's, concurrently, in a stable order.

    The whole report is bounded by the request timeout (at least MIN_CHECK_SECONDS): a group
    still running then is reported from its partial result, or as not answering.
    """
    timeout = ctx.config.ollama.timeout
    limit = max(timeout, MIN_CHECK_SECONDS)
    groups: list[tuple[Callable[[_Slot], list[Check]], _Slot]] = [
        (lambda slot: _server_checks(ctx),
         _Slot([_unfinished(_server_check_name(ctx), limit),
                _unfinished("chat model", limit)])),
        (lambda slot: [_embedding_check(ctx, slot)], _Slot([_unfinished("embedding", limit)])),
        # One thread: the consistency counts open the same Chroma store right after.
        (lambda slot: [_vector_store_check(ctx), _consistency_check(ctx)],
         _Slot([_unfinished("vector store", limit),
                _unfinished("index consistency", limit, essential=False)])),
        (lambda slot: [_data_dir_check(ctx.paths), _disk_check(ctx.paths),
                       _log_check(ctx.paths), _removals_check(ctx.paths)],
         _Slot([_unfinished("data dir", limit),
                _unfinished("disk space", limit, essential=False),
                _unfinished("log", limit, essential=False),
                _unfinished("removals", limit)])),
        (lambda slot: [_guarded("databases", lambda: _databases_check(ctx.paths)),
                       _guarded("mcp", lambda: _mcp_check(ctx), essential=False)],
         _Slot([_unfinished("databases", limit), _unfinished("mcp", limit, essential=False)])),
    ]

    def runner(fn: Callable[[_Slot], list[Check]], slot: _Slot) -> None:
        try:
            slot.result = fn(slot)
        except BaseException as exc:  # a crashed group (a Rust panic too) reports each line
            slot.result = [
                Check(c.name, False, f"{type(exc).__name__}: {exc}",
                      "see `brain doctor --json` and report a bug if this persists", c.essential)
                for c in slot.fallback
            ]

    # The embedding and vector store checks both import numpy first thing; two threads doing
    # that first import at once can see a partially initialised numpy (ImportError 1 run in 3).
    import numpy  # noqa: F401

    deadline = time.monotonic() + limit
    threads = []
    for i, (fn, slot) in enumerate(groups):
        # Daemon threads: a hung check must not keep the process alive after the report.
        threads.append(start_daemon(f"doctor-{i}", functools.partial(runner, fn, slot)))
    checks: list[Check] = []
    for thread, (_, slot) in zip(threads, groups, strict=True):
        thread.join(max(0.0, deadline - time.monotonic()))
        group = slot.result or slot.partial or slot.fallback
        for check in group:
            if on_check is not None:
                on_check(check)
        checks.extend(group)
    return checks


def _mcp_check(ctx: AppContext) -> Check:
    from assistant.mcp.status import mcp_summary

    ok, detail, hint = mcp_summary(ctx)
    return Check("mcp", ok, detail, hint, essential=False)


def _unfinished(name: str, seconds: float, *, essential: bool = True) -> Check:
    return Check(name, False, f"no answer within {seconds:g} s",
                 "run `brain doctor` again; if it persists, see the check's log", essential)


def _guarded(name: str, fn: Callable[[], Check], *, essential: bool = True) -> Check:
    """A check that raised is a failed check, never a crashed doctor."""
    try:
        return fn()
    except BaseException as exc:  # a broken dependency (a Rust panic too) still gives a line
        if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
            raise  # KeyboardInterrupt, SystemExit
        from assistant.store_health import looks_like_damage

        if looks_like_damage(exc) and not isinstance(getattr(exc, "hint", None), str):
            detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]
            return Check(name, False, f"cannot be read: a database is damaged ({detail})",
                         "see the `databases` check: it names the file and how to recover",
                         essential)
        hint = getattr(exc, "hint", None)
        # UserError, and indexing's user-facing errors (which cannot subclass it), carry a hint.
        if isinstance(exc, UserError) or isinstance(hint, str):
            message = str(exc.args[0]) if exc.args else str(exc)
            return Check(name, False, message.split("\n", 1)[0], hint or "", essential)
        return Check(name, False, f"{type(exc).__name__}: {exc}",
                     "see `brain doctor --json` and report a bug if this persists", essential)


# --- the model server ---------------------------------------------------------------------------

def _server_check_name(ctx: AppContext) -> str:
    return "model server" if ctx.config.llm.provider == "openai" else "ollama"


def _server_checks(ctx: AppContext) -> list[Check]:
    if ctx.config.llm.provider == "openai":
        return _openai_checks(ctx)
    return _ollama_checks(ctx)


def _openai_checks(ctx: AppContext) -> list[Check]:
    """An OpenAI-compatible server: its key source, /v1/models, the chat model among them."""
    from assistant.llm.openai_wire import OpenAIClient
    from assistant.llm.provider import link

    server = link(ctx.config)
    model = ctx.config.chat_model
    try:
        with OpenAIClient(server.endpoint(), timeout=ctx.config.ollama.timeout) as client:
            models = client.models()
    except UserError as exc:
        return [Check("model server", False, str(exc.args[0]).split("\n", 1)[0],
                      exc.hint or ""),
                Check("chat model", False, f"{model}: not checked (server unreachable)",
                      "start the server, then set llm.model to one it lists")]
    key = (f", key from ${server.api_key_env}" if server.api_key_env.strip()
           else ", key from llm.api_key_file" if server.api_key_file.strip() else "")
    names = sorted(m.id for m in models)
    up = Check("model server", True, f"OpenAI-compatible API at {server.url} "
               f"({len(names)} model{'s' if len(names) != 1 else ''}{key})")
    found = next((m for m in models if m.id == model), None)
    if found is None:
        return [up, Check("chat model", False,
                          f"{model!r} is not served (it serves: {', '.join(names) or 'none'})",
                          "set llm.model to one of them in `brain config edit`")]
    context = f" (context {found.context_length})" if found.context_length else ""
    return [up, Check("chat model", True, f"{model}{context}")]


# --- Ollama -----------------------------------------------------------------------------------

def _ollama_checks(ctx: AppContext) -> list[Check]:
    from assistant.llm.ollama_client import OllamaClient, OllamaError
    from assistant.ollama_host import host_origin

    config = ctx.config.ollama
    model = config.model
    with OllamaClient(config.host, timeout=config.timeout) as client:
        try:
            version = client.version()
        except OllamaError as exc:
            return [
                Check("ollama", False, str(exc).split("\n", 1)[0], exc.hint or ""),
                Check("chat model", False, f"{model}: not checked (Ollama unreachable)",
                      f"start Ollama, then `ollama pull {model}` if it is missing"),
            ]
        up = Check("ollama", True, f"Ollama {version} at {client.host}{host_origin(client.host)}")
        checks = [up, _guarded("chat model",
                               lambda: _model_check(client, model, wants_tools=config.tools))]
        if checks[-1].ok:
            checks.append(_guarded("thinking", lambda: _thinking_check(client, model,
                                                                       config.think),
                                   essential=False))
        return checks


def _model_check(client: Any, model: str, *, wants_tools: bool = False) -> Check:
    if not client.has_model(model):
        installed = ", ".join(m.name for m in client.chat_models()) or "none"
        return Check("chat model", False, f"{model} is not pulled (chat models installed: "
                     f"{installed})",
                     f"ollama pull {model}")
    info = client.show(model)
    if not info.supports_chat:
        return Check("chat model", False, f"{model} cannot chat (it is an embedding model)",
                     "set [ollama] model to a chat model in `brain config edit`")
    traits = [info.parameter_size, f"context {info.context_length}" if info.context_length
              else "", "tools" if info.supports_tools else ""]
    detail = f"{model} ({', '.join(t for t in traits if t)})"
    if wants_tools and not info.supports_tools:
        detail += "; it cannot use tools, so [ollama] tools = true has no effect"
    return Check("chat model", True, detail)


FAST_MODELS = "qwen3:4b-instruct-2507, gemma3:4b or llama3.2:3b"


def _thinking_check(client: Any, model: str, think: str) -> Check:
    """How the model reasons, and what that costs: a thinking-only model (the default
    qwen3:4b is Qwen3-4B-Thinking-2507) reasons before every answer whatever `think` says —
    minutes per answer on a CPU — so suggest an instruct model."""
    info = client.show(model)
    if not info.supports_thinking:
        if think == "on":
            return Check("thinking", False, f"{model} cannot think, so ollama.think = on has "
                         "no effect", "choose a thinking model, or set ollama.think = auto",
                         essential=False)
        return Check("thinking", True, f"{model} answers without a reasoning phase",
                     essential=False)
    if info.thinking_only:
        return Check(
            "thinking", False,
            f"{model} is thinking-only: it reasons before every answer, even with "
            "ollama.think = off (shown apart, never stored as the answer), which takes "
            "minutes on a CPU",
            f"for faster answers: `ollama pull qwen3:4b-instruct-2507` (or {FAST_MODELS}) "
            "and set [ollama] model",
            essential=False,
        )
    state = "off (faster)" if think == "off" else "on, shown apart from the answer"
    return Check("thinking", True, f"{model} can think; thinking is {state} "
                 f"(ollama.think = {think})", essential=False)


# --- local checks -----------------------------------------------------------------------------

def _embedding_check(ctx: AppContext, slot: _Slot) -> Check:
    def check() -> Check:
        started = time.monotonic()
        try:
            embedder = ctx.embedder()
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("indexing"):
                return Check("embedding", False, "embedding support is not installed",
                             "reinstall second-brain (`make run` or `pip install .`)")
            raise
        # Found and sized from its files: what to report if loading outlasts the timeout.
        slot.partial = [Check(
            "embedding", True,
            f"{embedder.model_id} ({embedder.dimension}-d; found offline, still loading "
            f"after {max(ctx.config.ollama.timeout, MIN_CHECK_SECONDS):g} s)",
        )]
        vector = embedder.embed_query("second-brain doctor")
        if len(vector) != embedder.dimension:
            return Check("embedding", False,
                         f"{embedder.model_id} returned {len(vector)} numbers, "
                         f"expected {embedder.dimension}",
                         "set [embedding] model to a working model in `brain config edit`")
        took = time.monotonic() - started
        return Check("embedding", True,
                     f"{embedder.model_id} ({embedder.dimension}-d, ready in {took:.1f} s)")

    return _guarded("embedding", check)


def _vector_store_check(ctx: AppContext) -> Check:
    location = ctx.config.store.vector_store.strip()
    if location.startswith(("http://", "https://")):
        return _guarded("vector store", lambda: _chroma_server_check(location,
                                                                     ctx.config.ollama.timeout))
    if not ctx.paths.vectors_dir.exists():  # opening Chroma would create it
        return Check("vector store", True,
                     f"no vector store yet at {ctx.paths.vectors_dir} (the first `brain index` "
                     "creates it)")
    return _guarded("vector store", lambda: _chroma_embedded_check(ctx.paths.vectors_dir))


def _consistency_check(ctx: AppContext) -> Check:
    return _guarded("index consistency", lambda: _consistency(ctx), essential=False)


def _consistency(ctx: AppContext) -> Check:
    """Chunks in the manifest vs vectors in the knowledge collection, active memories vs
    memory vectors. Counts only (no model load): a deleted or emptied vector store otherwise
    goes unnoticed, search silently falling back to keywords."""
    from indexing.vectors import count_vectors

    location = ctx.config.store.vector_store.strip() or str(ctx.paths.vectors_dir)
    parts: list[str] = []
    problems: list[str] = []
    hints: list[str] = []
    chunks, collection = _indexed_chunks(ctx.paths.knowledge_db)
    if collection is not None:
        vectors = count_vectors(location, collection)
        parts.append(f"{chunks} chunks, {vectors} vectors")
        if vectors != chunks:
            problems.append(f"{chunks} indexed chunks but {vectors} vectors")
            hints.append("`brain index --sync`")
    rows = _memory_rows(ctx.paths.memory_db)
    if rows is not None:
        from assistant.memory.service import MEMORY_COLLECTION

        active, embedded, stale = rows
        vectors = count_vectors(location, MEMORY_COLLECTION)
        parts.append(f"{active} memories, {vectors} vectors")
        # New memories wait for their vector until next used, and a replaced one's vector
        # waits for removal: only vectors the store counts on yet lacks are a fault.
        if not embedded <= vectors <= embedded + stale:
            problems.append(f"{embedded} embedded memories but {vectors} memory vectors")
            hints.append("`brain memory reindex`")
    if problems:
        return Check("index consistency", False, "; ".join(problems),
                     "repair with " + " and ".join(hints), essential=False)
    detail = "; ".join(parts) if parts else "nothing indexed or remembered yet"
    return Check("index consistency", True, detail, essential=False)


def _indexed_chunks(db: Path) -> tuple[int, str | None]:
    """(chunks, the collection dense search reads) from the manifest; None: never indexed.
    Opened read-only: the manifest's own open would migrate (write) an older file."""
    if not db.exists():
        return 0, None
    import sqlite3

    from indexing.knowledge_types import META_COLLECTION

    conn = _read_only(db)
    try:
        chunks = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_COLLECTION,)).fetchone()
        return chunks, (str(row[0]) if row else None)
    except sqlite3.OperationalError:  # created but not set up yet
        return 0, None
    finally:
        conn.close()


def _read_only(db: Path) -> Any:
    """A connection that writes nothing, not even the -wal/-shm files a WAL database gets on
    open. While another process has the database open those files exist already and `mode=ro`
    reads its latest state; otherwise the file is at rest and `immutable=1` reads it as is."""
    import sqlite3
    from urllib.parse import quote

    busy = db.with_name(db.name + "-wal").exists()
    return sqlite3.connect(f"file:{quote(str(db))}?{'mode=ro' if busy else 'immutable=1'}",
                           uri=True)


def _memory_rows(db: Path) -> tuple[int, int, int] | None:
    """(active memories, rows whose vector is stored, rows whose vector awaits removal);
    None when there is no memory store yet."""
    if not db.exists():
        return None
    import sqlite3

    conn = _read_only(db)
    try:
        active, embedded, stale = conn.execute(
            "SELECT count(*) FILTER (WHERE status='active'), "
            "count(*) FILTER (WHERE vec_state='ok'), "
            "count(*) FILTER (WHERE vec_state='stale') FROM memories").fetchone()
        return int(active), int(embedded), int(stale)
    except sqlite3.OperationalError:  # created but not set up yet
        return None
    finally:
        conn.close()


def _chroma_embedded_check(directory: Path) -> Check:
    import chromadb
    from chromadb.config import Settings

    from indexing.vector_errors import VectorStoreError, check_store_file, recovery_hint

    # A damaged database is found in Python first: Chroma panics on it, sometimes in a thread
    # that aborts the process, and leaves locks behind that made every later check wait.
    try:
        check_store_file(directory)
    except VectorStoreError as exc:
        return Check("vector store", False, exc.message, exc.hint or "")
    # The same Settings as indexing/vectors.py: Chroma refuses a second client for one path
    # with different settings in the same process.
    from indexing.quiet_panics import rust_panics_silenced

    try:
        with rust_panics_silenced():  # Chroma's own panic report stays off the terminal
            client = chromadb.PersistentClient(
                path=str(directory),
                settings=Settings(anonymized_telemetry=False, allow_reset=True))
            client.heartbeat()
            count = len(client.list_collections())
    except BaseException as exc:  # chromadb raises many types (and Rust panics) for a bad store
        if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
            raise
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        return Check("vector store", False, f"the store at {directory} cannot be opened "
                     f"({detail})", f"if it is damaged, {recovery_hint(directory)}")
    return Check("vector store", True, f"embedded Chroma at {directory} ({count} collections)")


def _chroma_server_check(url: str, timeout: float) -> Check:
    import httpx

    base = url.rstrip("/")
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout, connect=min(timeout, 3.0)),
                          trust_env=False) as http:
            beat = http.get(f"{base}/api/v2/heartbeat")
            version = http.get(f"{base}/api/v2/version")
    except httpx.HTTPError as exc:
        return Check("vector store", False, f"no Chroma server at {base} ({type(exc).__name__})",
                     "start it with `chroma run --path DIR --port N`, or clear "
                     "[store] vector_store to use the embedded store")
    if beat.status_code != 200 or "heartbeat" not in beat.text:
        return Check("vector store", False, f"{base} is not a Chroma server "
                     f"(heartbeat answered {beat.status_code})",
                     "check [store] vector_store in `brain config edit`")
    server_version = version.text.strip().strip('"') if version.status_code == 200 else "?"
    return Check("vector store", True, f"Chroma server {server_version} at {base}")


def _data_dir_check(paths: AppPaths) -> Check:
    """Whether the data dir is (or could be created) writable and private, without writing."""
    data = paths.data_dir
    if data.exists() and not data.is_dir():
        return Check("data dir", False, f"cannot create {data}: a file of that name is in the way",
                     "move that file away, or choose another place with --home")
    if not data.exists():
        parent = _nearest_existing(data)
        if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
            return Check("data dir", True,
                         f"{data} (not created yet; the first command that stores data does)")
        return Check("data dir", False, f"cannot create {data}: {parent} is not writable",
                     f"fix the permissions of {parent}, or choose another place with --home")
    if not os.access(data, os.W_OK | os.X_OK):
        return Check("data dir", False, f"{data} is not writable",
                     f"fix its permissions (`chmod u+rwx {data}`) or use --home")
    mode = data.stat().st_mode & 0o777
    if mode & 0o077:
        return Check("data dir", False,
                     f"{data} is readable by other users (mode {mode:03o})",
                     f"chmod {DIR_MODE:o} {data}", essential=False)
    return Check("data dir", True, f"{data} (writable, mode {mode:03o})")


def _removals_check(paths: AppPaths) -> Check:
    """A removal recorded and not finished (`brain doctor` itself tries to finish it first,
    cli/main.py): what is still to erase, and why it could not be."""
    from assistant.erasure.intents import pending

    left = pending(paths.data_dir)
    if not left:
        return Check("removals", True, "none pending")
    return Check("removals", False,
                 "not finished: " + ", ".join(intent.what for intent in left),
                 "free disk space or make the home writable; the next command finishes them")


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _databases_check(paths: AppPaths) -> Check:
    """Every SQLite file of the home passes SQLite's own quick_check (store_health)."""
    from assistant.store_health import damaged_stores, store_files

    damaged = damaged_stores(paths)
    if damaged:
        store, reason = damaged[0]
        more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
        return Check("databases", False, f"the {store.label} {store.path} is damaged "
                     f"({reason}){more}", store.recovery)
    present = [s.label for s in store_files(paths) if s.path.exists()]
    return Check("databases", True,
                 f"{len(present)} intact ({', '.join(present)})" if present else "none yet")


def _log_check(paths: AppPaths, *, now: float | None = None) -> Check:
    """Where the log file is, and whether something failed lately (assistant/logfile.py)."""
    from assistant.logfile import log_file, recent_errors

    path = log_file(paths)
    if not path.exists():
        return Check("log", True, f"{path} (nothing logged yet)", essential=False)
    errors = recent_errors(path, now=now)
    size = f"{path.stat().st_size / 1024:.0f} KB"
    if errors:
        newest = errors[-1]
        return Check("log", False, f"{path} ({size}): {len(errors)} error"
                     f"{'s' * (len(errors) != 1)} in the last 24 h, newest: {newest}",
                     f"read the tracebacks in {path} (or F12 in the app); report a bug "
                     "with that file", essential=False)
    return Check("log", True, f"{path} ({size}; no error in the last 24 h)", essential=False)


def _disk_check(paths: AppPaths) -> Check:
    try:
        free = shutil.disk_usage(_nearest_existing(paths.data_dir)).free
    except OSError as exc:
        return Check("disk space", False, f"cannot read free space: {exc.strerror or exc}",
                     essential=False)
    detail = f"{free / 1e9:.1f} GB free in {paths.data_dir}"
    if free < LOW_DISK_BYTES:
        return Check("disk space", False, detail,
                     "free some space: indexes and the embedding cache grow with your folders",
                     essential=False)
    return Check("disk space", True, detail, essential=False)

