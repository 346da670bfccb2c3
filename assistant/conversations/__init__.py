"""Conversation recall: every stored turn (and session summary) searchable by meaning, words
and date. `service.open_conversations(ctx)` is the entry point."""
