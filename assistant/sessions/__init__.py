"""The sessions floor: stored conversations, below the chat, memory and conversation recall.

`store.py` — `SessionStore` (SQLite at `paths.sessions_db`: sessions, turns, what each turn
used, summaries, extraction pointers); `schema.py` — its migrations (through
`indexing.sqlite_db`); `turn.py` — the turn types every layer above shares (`Turn`, `Source`,
`KnowledgeItem`, `MemoryItem`, `Session`, `Recollection`…); `service.open_sessions(ctx)`.
Nothing here imports `chat/`, `memory/` or `conversations/`.
"""
