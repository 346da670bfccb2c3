"""The real-model lane reads each request's counts from llama-cpp-python's verbose log
(bench/real_server.py): the lines as that server prints them."""

from __future__ import annotations

from bench.real_server import ServedRequest, parse_log

LOG = """\
INFO:     127.0.0.1:50412 - "GET /v1/models HTTP/1.1" 200 OK
llama_perf_context_print:        load time =     530.16 ms
llama_perf_context_print: prompt eval time =     349.16 ms /    23 tokens (   15.18 ms per token)
llama_perf_context_print:        eval time =    6852.83 ms /   127 runs   (   53.96 ms per token)
llama_perf_context_print:       total time =    7237.84 ms /   150 tokens
Llama.generate: 512 prefix-match hit, remaining 8 prompt tokens to eval
llama_perf_context_print:        load time =     530.16 ms
llama_perf_context_print: prompt eval time =     210.11 ms /     8 tokens (   26.26 ms per token)
llama_perf_context_print:        eval time =     380.94 ms /     7 runs   (   54.42 ms per token)
llama_perf_context_print:       total time =    1980.44 ms /    15 tokens
"""


def test_each_request_with_its_cache_hit() -> None:
    assert parse_log(LOG) == [
        ServedRequest(cached_tokens=0, prompt_tokens=23, prompt_ms=349.16,
                      generated_tokens=127, generation_ms=6852.83),
        ServedRequest(cached_tokens=512, prompt_tokens=520, prompt_ms=210.11,
                      generated_tokens=7, generation_ms=380.94),
    ]


def test_an_unfinished_request_is_not_counted() -> None:
    assert parse_log(LOG.rsplit("llama_perf_context_print:       total", 1)[0])[1:] == []
