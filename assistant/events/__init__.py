"""The agent event log: what AI agents did (actions, observations, decisions, goals, errors,
notes), written through `brain mcp`'s `log_event`, searched by meaning, words, time, type and
importance, summarised per run, shown and removed by `brain events` and the TUI."""
