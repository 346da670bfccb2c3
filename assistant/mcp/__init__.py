"""`brain mcp`: the Model Context Protocol server over knowledge, memory, conversations and the
agent event log, built on the official `mcp` SDK (lowlevel `Server`: our own tool schemas and
argument checks, so every bad input is a one-line tool error)."""
