"""Issue 15 target: `brain ask` with Ollama down says so at once (<= 3x `brain --help`): it loads
no embedding model, no Chroma, no torch — also after earlier conversations exist (indexing the
failed turn into the conversation index made the error wait for Chroma and the model)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import json, sys
    from assistant.cli.main import main
    code = main(sys.argv[1:])
    heavy = sorted({m.split(".")[0] for m in sys.modules}
                   & {"chromadb", "torch", "onnxruntime", "sentence_transformers", "jieba"})
    print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
""")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ask_with_ollama_down_loads_nothing_heavy(home: Path) -> None:
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[ollama]\nhost = "http://127.0.0.1:{_closed_port()}"\n',
                      encoding="utf-8")
    env = {**os.environ, "BRAIN_HOME": str(home), "PYTHONPATH": str(ROOT)}

    def ask(*argv: str) -> tuple[dict[str, object], str]:
        done = subprocess.run([sys.executable, "-c", SCRIPT, "ask", *argv], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        return json.loads(done.stderr.strip().splitlines()[-1]), done.stderr

    first, err = ask("is anyone there?")
    assert first == {"code": 1, "heavy": []}, err
    assert "Ollama is not running" in err
    # A second one, with a failed turn already stored (the conversation index has work now).
    session = err.split("saved in session ")[1].split(";")[0]
    again, err = ask("--session", session, "still nobody?")
    assert again == {"code": 1, "heavy": []}, err
