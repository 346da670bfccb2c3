"""What the user removes is gone from every file under the home.

The rule: after `brain folders rm PATH`, `brain memory forget-all`, `brain memory rm --forever`
and deleting a session, no text, heading, path, vector or embedding-cache entry derived from
what was removed remains in any file under the home (config, data and cache dirs), counting
free pages, journals and Chroma's segment files. Chat sessions keep their turns — the user's
messages and the answers — but a turn's stored sources and memories say "source removed" /
"memory forgotten".

How: each store deletes its rows and then scrubs its file (`indexing.scrub`: VACUUM + emptied
WAL; Chroma: `VectorStore.compact`/`drop` rewrite the collection and remove dead segments), and
`erase_traces` (traces.py) visits every other store that may hold a copy — the sessions, the
retrieval log, the embedding cache, and whatever another package registers with `register`
(e.g. a conversation index). The user-facing removals that do all of it are in actions.py.
"""
