"""Long-term memory about the user: a store they can see, correct and audit.

Kept strictly apart from indexed knowledge: its own SQLite database (the source of truth, with a
history of every change), its own Chroma collection and its own keyword table.
"""
