"""Finding the right chunks: hybrid dense + keyword retrieval with explainable scores.

`hybrid.HybridRetriever` imports llama_index; import it lazily. The other modules are light.
"""
