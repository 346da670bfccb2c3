"""One full flow of the installed `brain` — index, search, ask, memory extraction — meant to run
inside a network namespace that has only loopback (`unshare -n`, see test_offline.py).

Run as `python -m tests.e2e.offline_flow WORKDIR`. It starts the fake Ollama on the namespace's
own loopback, runs each `brain` command as a subprocess with the default bundled embedding model
and WITHOUT the HF_*_OFFLINE variables (the app must not need them), and prints one line
`RESULT {json}` for the test to check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fake_ollama import FakeOllamaServer

NOTE = (
    "# Restoring backups\n\nBackups run nightly with restic. To restore a file, run "
    "`restic restore latest --target /tmp/restore` and copy it back.\n"
)
EXTRACTED = {"memories": [{
    "type": "fact", "key": "nas_name", "text": "The user's NAS is called vaultbox.",
    "confidence": 0.95, "importance": 0.7,
}]}


def interfaces() -> list[str]:
    """The network interfaces of this process's namespace (/sys may still show the host's)."""
    lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    return sorted(line.split(":", 1)[0].strip() for line in lines)


def main(workdir: Path) -> dict[str, Any]:
    home, notes = workdir / "home", workdir / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    (notes / "restore.md").write_text(NOTE, encoding="utf-8")
    fake = FakeOllamaServer().start()
    try:
        (home / "config").mkdir(parents=True, exist_ok=True)
        (home / "config" / "config.toml").write_text(
            f'[ollama]\nhost = "{fake.url}"\ntimeout = 60.0\n\n'
            # Extract after every turn: a one-shot `brain ask` is a whole session.
            "[memory]\nextract_every_turns = 1\n",
            encoding="utf-8",
        )
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("HF_", "TRANSFORMERS_", "BRAIN_", "OLLAMA_"))}
        brain = str(Path(sys.executable).with_name("brain"))

        def run(*args: str) -> dict[str, Any]:
            done = subprocess.run([brain, "--home", str(home), *args], capture_output=True,
                                  text=True, env=env, timeout=300)
            return {"code": done.returncode, "out": done.stdout, "err": done.stderr[-3000:]}

        result: dict[str, Any] = {"interfaces": interfaces()}
        result["index"] = run("index", str(notes))
        result["search"] = run("search", "--json", "how do I restore a file from backup")
        fake.script_chat("Run restic restore latest [1].",
                         match=lambda body: not body.get("format"))
        fake.script_chat(format_json=EXTRACTED, match=lambda body: bool(body.get("format")))
        result["ask"] = run("ask", "--wait", "my NAS is called vaultbox. How do I restore a file?")
        result["memories"] = run("memory", "list")
        result["extraction_requests"] = sum(
            1 for body in fake.chat_requests if isinstance(body, dict) and body.get("format")
        )
        return result
    finally:
        fake.stop()


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(Path(sys.argv[1]))), flush=True)
