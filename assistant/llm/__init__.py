"""The model-server floor: one client per provider, below the chat, memory and doctor.

`provider.py` picks the provider from `[llm]` (`ollama` — Ollama's own API — or `openai`, any
OpenAI-compatible server) and builds what the rest of the app talks to: a chat transport
(streaming turns, the preload, background JSON completions), a model catalog (names, context
length, capabilities) and the embedding call. Options are generic where they enter (num_ctx,
num_predict, format = a JSON schema, think) and mapped per provider where they leave
(`openai_wire.py`: num_predict → max_tokens, format → response_format json_schema).
"""
