"""Token counts that match the server: the local estimate (tokens.py) scaled per model and
script by what the model's own tokenizer reported.

`tokens.count_tokens` cannot know the chat model's tokenizer. Measured against real servers it
over-counts English by a third to a half (app ÷ real 1.56 Qwen2.5, 1.37 gemma3, 1.24 SmolLM2 on
tldr pages) and under-counts Chinese under SmolLM2 (0.71) — the dangerous direction: the server
then silently drops the start of the prompt. Every reply reports the prompt's real size
(Ollama's `prompt_eval_count`, an OpenAI server's `usage.prompt_tokens`), so each reply is a
sample: real ÷ estimate, attributed to the prompt's Latin and CJK parts, kept per model.

Never under-count: a factor is the upper quantile (`QUANTILE`) of its recent samples, and until
`MIN_SAMPLES` samples exist it is the safe default (`DEFAULT`: the raw estimate for Latin text,
which over-counts on every model measured; half as much again for CJK, above SmolLM2's 1.41).

Persisted per model in the data dir (`token_calibration.json`, written atomically: a temporary
file renamed over the old one, re-read first so two processes' samples merge), so the first
turn of the next run is already calibrated. A damaged or foreign file is ignored (the defaults
again), never an error: the estimate is a convenience.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import statistics
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from assistant.llm.tokens import MESSAGE_OVERHEAD, SCALE, count_tokens

log = logging.getLogger(__name__)

Script = Literal["latin", "cjk"]
SCRIPTS: tuple[Script, ...] = ("latin", "cjk")

DEFAULT: dict[Script, float] = {"latin": 1.0, "cjk": 1.5}
QUANTILE = 0.9
MIN_SAMPLES = 3
MAX_SAMPLES = 50  # per model and script: recent replies only (the newest replace the oldest)
# A sample outside these bounds is a mismatch (a template we do not model, a truncated
# prompt), not a tokenizer: ignored.
RATIO_BOUNDS = (0.2, 5.0)
# A prompt part below this share of the estimate says too little about its script.
MIN_SHARE = 0.15
FILE_VERSION = 1

_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u3000-\u303f\uff00-\uffef]"
)


@dataclass(frozen=True, slots=True)
class Split:
    """An estimate (tokens.count_tokens units) by script."""

    latin: float
    cjk: float

    @property
    def total(self) -> float:
        return self.latin + self.cjk

    def __add__(self, other: Split) -> Split:
        return Split(self.latin + other.latin, self.cjk + other.cjk)


def split_estimate(text: str, *, overhead: int = 0) -> Split:
    """`count_tokens(text) + overhead` divided by script. The WordPiece estimate counts a CJK
    character as one piece (times `SCALE`), so the CJK part is read off the character count
    without tokenizing twice; template markers (`overhead`) are Latin."""
    total = count_tokens(text) + overhead
    cjk = min(float(total), len(_CJK.findall(text)) * SCALE) if text else 0.0
    return Split(total - cjk, cjk)


def prompt_split(contents: Iterable[str], tools: Sequence[Any] = ()) -> Split:
    """The estimate of a request as the server reads it: each message with its chat-template
    markers, and the tool specs the template renders into the system prompt."""
    total = Split(0.0, 0.0)
    for content in contents:
        total += split_estimate(content, overhead=MESSAGE_OVERHEAD)
    if tools:
        total += split_estimate(json.dumps(list(tools)))
    return total


def upper_quantile(samples: list[float], q: float = QUANTILE) -> float:
    """The `q` quantile, linearly interpolated (numpy's default), of a non-empty list."""
    ordered = sorted(samples)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


class TokenCalibration:
    """Per-model factors (real ÷ estimated tokens) by script; thread-safe. `path` None keeps
    the samples in memory only."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._samples: dict[str, dict[Script, list[float]]] = self._read()

    # --- reading ----------------------------------------------------------------------------

    def factor(self, model: str, script: Script) -> float:
        with self._lock:
            samples = self._samples.get(model, {}).get(script, [])
            if len(samples) < MIN_SAMPLES:
                return DEFAULT[script]
            return upper_quantile(samples)

    def typical(self, model: str, script: Script) -> float:
        """The median factor (the default until `MIN_SAMPLES`)."""
        with self._lock:
            samples = self._samples.get(model, {}).get(script, [])
            return statistics.median(samples) if len(samples) >= MIN_SAMPLES else DEFAULT[script]

    def calibrated(self, model: str) -> bool:
        """True once every script this model was seen with has its own factor."""
        with self._lock:
            seen = self._samples.get(model, {})
            return bool(seen) and all(len(s) >= MIN_SAMPLES for s in seen.values())

    def estimate(self, model: str, split: Split) -> int:
        return math.ceil(split.latin * self.factor(model, "latin")
                         + split.cjk * self.factor(model, "cjk"))

    def counter(self, model: str) -> Callable[[str], int]:
        """`count_tokens` for `model`: what its tokenizer will make of a text, or more."""
        latin, cjk = self.factor(model, "latin"), self.factor(model, "cjk")

        def count(text: str) -> int:
            split = split_estimate(text)
            return math.ceil(split.latin * latin + split.cjk * cjk)

        return count

    # --- learning ---------------------------------------------------------------------------

    def observe(self, model: str, split: Split, real: int) -> bool:
        """Learn from one reply: the server read `real` tokens for a prompt estimated as
        `split`. Returns False when the sample was unusable (and ignored)."""
        if real <= 0 or split.total <= 0 or not model:
            return False
        samples: list[tuple[Script, float]] = []
        if split.cjk < MIN_SHARE * split.total:
            samples.append(("latin", real / split.total))
        elif split.latin < MIN_SHARE * split.total:
            samples.append(("cjk", real / split.total))
        else:
            # Mixed (a Chinese conversation under English instructions): the Latin part at its
            # typical factor (the median: the upper quantile would leave the CJK part too little
            # and the sum below the truth), the rest is the CJK part's doing.
            latin = self.typical(model, "latin")
            samples.append(("cjk", (real - split.latin * latin) / split.cjk))
        low, high = RATIO_BOUNDS
        usable = [(script, ratio) for script, ratio in samples if low <= ratio <= high]
        if not usable:
            log.info("token calibration: sample for %s ignored (real %d, estimate %.0f)",
                     model, real, split.total)
            return False
        with self._lock:
            for script, ratio in usable:
                kept = self._samples.setdefault(model, {}).setdefault(script, [])
                kept.append(round(ratio, 4))
                del kept[:-MAX_SAMPLES]
            self._write(model)
        return True

    # --- the file ---------------------------------------------------------------------------

    def _read(self) -> dict[str, dict[Script, list[float]]]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("token calibration file %s unreadable (%s): using defaults",
                        self.path, exc)
            return {}
        return _parse(data)

    def _write(self, model: str) -> None:
        """Merge this process's samples for `model` into the file and replace it atomically."""
        if self.path is None:
            return
        on_disk = self._read()
        merged = on_disk.setdefault(model, {})
        for script in SCRIPTS:
            mine = self._samples.get(model, {}).get(script)
            if mine is not None:
                merged[script] = mine[-MAX_SAMPLES:]
        for name, by_script in on_disk.items():  # other models: keep theirs, learn them too
            if name != model:
                self._samples.setdefault(name, by_script)
        payload = {"version": FILE_VERSION, "models": on_disk}
        tmp: str | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".token_calibration.", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(payload, handle, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
            tmp = None
        except OSError as exc:
            log.warning("could not save token calibration to %s: %s", self.path, exc)
        finally:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)


def _parse(data: object) -> dict[str, dict[Script, list[float]]]:
    if not isinstance(data, dict) or data.get("version") != FILE_VERSION:
        return {}
    models = data.get("models")
    if not isinstance(models, dict):
        return {}
    low, high = RATIO_BOUNDS
    parsed: dict[str, dict[Script, list[float]]] = {}
    for name, by_script in models.items():
        if not isinstance(name, str) or not isinstance(by_script, dict):
            continue
        for script in SCRIPTS:
            values = by_script.get(script)
            if isinstance(values, list):
                good = [float(v) for v in values if isinstance(v, int | float)
                        and not isinstance(v, bool) and low <= v <= high]
                if good:
                    parsed.setdefault(name, {})[script] = good[-MAX_SAMPLES:]
    return parsed
