"""The bundled model through ONNX: which models qualify, where exports live, race-safe
publishing, and (slow) the same vectors as sentence-transformers without importing torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from indexing.embedder import make_inner_model
from indexing.embedders import onnx_store
from indexing.embedders.onnx_model import OnnxSentenceModel, ineligible_reason
from indexing.embedders.sentence import SentenceTransformerModel, bundled_model_path

ROOT = Path(__file__).resolve().parents[2]


def small_model(tmp_path: Path) -> Path:
    """A copy of the bundled model's small files (no weights needed to judge eligibility)."""
    source = bundled_model_path()
    folder = tmp_path / "model"
    for name in ("modules.json", "config.json", "tokenizer.json", "sentence_bert_config.json",
                 "config_sentence_transformers.json", "1_Pooling/config.json"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source / name, folder / name)
    (folder / "model.safetensors").write_bytes(b"weights v1")
    return folder


def edit_json(path: Path, **changes: Any) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


# -- eligibility -----------------------------------------------------------------------------


def test_the_bundled_model_qualifies_for_onnx() -> None:
    assert ineligible_reason(bundled_model_path()) is None


@pytest.mark.parametrize(
    ("file", "changes", "reason"),
    [
        ("1_Pooling/config.json", {"pooling_mode_mean_tokens": False,
                                   "pooling_mode_cls_token": True}, "not mean pooling"),
        ("1_Pooling/config.json", {"pooling_mode_max_tokens": True}, "several pooling modes"),
        ("config.json", {"model_type": "xlm-roberta"}, "not a BERT-family model"),
        ("config_sentence_transformers.json", {"prompts": {"query": "query: "}}, "uses prompts"),
    ],
)
def test_models_we_cannot_reproduce_stay_on_sentence_transformers(
    tmp_path: Path, file: str, changes: dict[str, Any], reason: str
) -> None:
    folder = small_model(tmp_path)
    assert ineligible_reason(folder) is None
    edit_json(folder / file, **changes)
    assert ineligible_reason(folder) == reason
    inner = make_inner_model(str(folder), model_dir=tmp_path / "models")
    assert isinstance(inner, SentenceTransformerModel)


def test_spec_resolution_picks_onnx_on_cpu_only(tmp_path: Path) -> None:
    cpu = make_inner_model("bundled", model_dir=tmp_path)
    assert isinstance(cpu, OnnxSentenceModel)
    assert cpu.model_id == "bundled:all-MiniLM-L6-v2"  # same id: caches and indexes stay valid
    assert cpu.known_dimension() == 384
    assert cpu.backend is None  # nothing loaded by resolving the spec
    gpu = make_inner_model("bundled", device="cuda")
    assert isinstance(gpu, SentenceTransformerModel)


# -- the export store ------------------------------------------------------------------------


def fake_build(folder: Path, out: Path) -> dict[str, Any]:
    (out / onnx_store.ONNX_FILE).write_bytes(b"onnx:" + (folder / "model.safetensors").read_bytes())
    return {"max_seq_length": 256, "dimension": 384}


def test_publish_then_find_by_signature_and_after_a_reinstall_by_content(tmp_path: Path) -> None:
    folder = small_model(tmp_path)
    root = tmp_path / "models"
    assert onnx_store.find_export(folder, [root]) is None
    made = onnx_store.publish(folder, root, fake_build)
    assert made.onnx_file.read_bytes() == b"onnx:weights v1"
    assert [p.name for p in root.iterdir() if not p.name.startswith(".")] == [made.directory.name]
    assert onnx_store.find_export(folder, [root]) == made

    # A reinstall rewrites the same bytes with new mtimes: found by content, and remembered.
    os.utime(folder / "model.safetensors", ns=(1, 1))
    assert onnx_store.find_export(folder, [root]) == made
    meta = json.loads((made.directory / onnx_store.META_FILE).read_text())
    assert len(meta["signatures"]) == 2

    # New weights are another model: no export until one is made.
    (folder / "model.safetensors").write_bytes(b"weights v2")
    assert onnx_store.find_export(folder, [root]) is None
    second = onnx_store.publish(folder, root, fake_build)
    assert second.directory != made.directory


def test_an_export_in_a_later_root_is_used(tmp_path: Path) -> None:
    folder = small_model(tmp_path)
    shipped = onnx_store.publish(folder, tmp_path / "install", fake_build)
    assert onnx_store.find_export(folder, [tmp_path / "home", tmp_path / "install"]) == shipped


def test_a_failed_export_leaves_nothing_behind(tmp_path: Path) -> None:
    folder = small_model(tmp_path)
    root = tmp_path / "models"

    def broken(folder: Path, out: Path) -> dict[str, Any]:
        (out / onnx_store.ONNX_FILE).write_bytes(b"half")
        raise RuntimeError("verification failed")

    with pytest.raises(RuntimeError, match="verification failed"):
        onnx_store.publish(folder, root, broken)
    assert [p.name for p in root.iterdir()] == [onnx_store.LOCK_FILE]
    assert onnx_store.find_export(folder, [root]) is None


RACER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from indexing.embedders import onnx_store

    folder, root, go = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    onnx_store.EXPORT_LOCK_SECONDS = float(sys.argv[4])

    def build(folder, out):
        with open(root.parent / "builds.log", "a") as log:
            log.write("build\\n")
        with open(out / onnx_store.ONNX_FILE, "wb") as f:
            for _ in range(20):  # slow, chunked writes: a reader must never see a part
                f.write(b"x" * 100_000)
                f.flush()
                time.sleep(0.01)
        return {"max_seq_length": 256, "dimension": 384}

    while not go.exists():
        time.sleep(0.005)
    found = onnx_store.publish(folder, root, build)
    print(found.directory, found.onnx_file.stat().st_size)
""")


@pytest.mark.parametrize("lock_seconds", [600.0, 0.0], ids=["locked", "lock-timeout"])
def test_two_processes_exporting_at_once_agree_on_one_complete_export(
    tmp_path: Path, lock_seconds: float
) -> None:
    folder = small_model(tmp_path)
    root = tmp_path / "models"
    go = tmp_path / "go"
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    procs = [
        subprocess.Popen([sys.executable, "-c", RACER, str(folder), str(root), str(go),
                          str(lock_seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
        for _ in range(2)
    ]
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    lines = {out.strip() for out, _ in outputs}
    assert len(lines) == 1  # the same directory, complete (2,000,000 bytes) for both
    assert lines.pop().endswith(" 2000000")
    builds = (tmp_path / "builds.log").read_text().split()
    # With the lock the second process reuses the first one's export; without it (timeout)
    # both build, and the rename race still leaves exactly one complete export.
    assert len(builds) == 1 if lock_seconds else len(builds) in (1, 2)
    visible = [p for p in root.iterdir() if not p.name.startswith(".")]
    assert len(visible) == 1
    assert not [p for p in root.iterdir() if p.name.startswith(".export-")]


# -- the real model (slow) -------------------------------------------------------------------

TEXTS = [
    "git stash: save uncommitted changes away and restore them later",
    "tar: create and extract compressed archives",
    "  leading and trailing spaces  ",
    "",
    "如何压缩一个文件夹",
    "Emoji 🎉, ümlauts, café\tand\nnewlines",
    "def rotate(logs: list[Path]) -> None:  # snake_case camelCase ABC-001",
    "A very long paragraph about rotating logs with logrotate. " * 50,
]


@pytest.fixture(scope="module")
def exported_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root holding the bundled model's export: the install's (made by `make`), else one
    exported here (imports torch once)."""
    found = onnx_store.find_export(bundled_model_path(), [onnx_store.install_root()])
    if found is not None:
        return onnx_store.install_root()
    from indexing.embedders.onnx_export import export_model

    root = tmp_path_factory.mktemp("onnx")
    onnx_store.publish(bundled_model_path(), root, export_model)
    return root


@pytest.mark.slow
def test_onnx_vectors_equal_sentence_transformers(exported_root: Path, tmp_path: Path) -> None:
    onnx = OnnxSentenceModel(bundled_model_path(), "bundled:all-MiniLM-L6-v2", batch_size=64,
                             roots=[exported_root], export_root=None)
    ours_docs = onnx.encode_documents(TEXTS)
    ours_query = onnx.encode_query(TEXTS[0])
    assert onnx.backend == "onnx"
    torch_model = SentenceTransformerModel(bundled_model_path(), "bundled:all-MiniLM-L6-v2",
                                           device="cpu", batch_size=64)
    ref_docs = torch_model.encode_documents(TEXTS)
    ref_query = torch_model.encode_query(TEXTS[0])

    def unit(m: np.ndarray) -> np.ndarray:
        m = np.atleast_2d(m)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    cosines = np.sum(unit(ours_docs) * unit(ref_docs), axis=1)
    assert cosines.min() >= 0.99999, cosines
    assert float((unit(ours_query) @ unit(ref_query).T)[0, 0]) >= 0.99999
    # One text alone (no padding) gives the same vector as inside a padded batch.
    np.testing.assert_allclose(unit(onnx.encode_documents([TEXTS[1]]))[0],
                               unit(ours_docs)[1], atol=1e-5)


@pytest.mark.slow
def test_a_cached_embedder_reads_vectors_written_by_sentence_transformers(
    exported_root: Path, tmp_path: Path
) -> None:
    """The model id did not change: the embedding cache written before ONNX serves ONNX."""
    from indexing.embedder import CachedEmbedder

    torch_model = SentenceTransformerModel(bundled_model_path(), "bundled:all-MiniLM-L6-v2",
                                           device="cpu", batch_size=64)
    before = CachedEmbedder(torch_model, tmp_path / "cache")
    before.embed_documents(TEXTS[:3])
    before.close()
    onnx = OnnxSentenceModel(bundled_model_path(), "bundled:all-MiniLM-L6-v2", batch_size=64,
                             roots=[exported_root], export_root=None)
    after = CachedEmbedder(onnx, tmp_path / "cache")
    after.embed_documents(TEXTS[:3])
    assert (after.hits, after.misses) == (3, 0)
    assert onnx.backend is None  # never even loaded


PROBE = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from indexing.embedder import make_embedder
    emb = make_embedder("bundled", cache_dir=Path(sys.argv[1]))
    vector = emb.embed_query("how do I rotate the logs?")
    heavy = sorted({m.split(".")[0] for m in sys.modules}
                   & {"torch", "transformers", "sentence_transformers", "sklearn"})
    print(json.dumps({"backend": emb.inner.backend, "heavy": heavy, "dim": len(vector)}))
""")


@pytest.mark.slow
def test_embedding_a_query_never_imports_torch(exported_root: Path, tmp_path: Path) -> None:
    if exported_root != onnx_store.install_root():
        pytest.skip("needs the install's export (made by `make`)")
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"backend": "onnx", "heavy": [], "dim": 384}


@pytest.mark.slow
def test_without_any_export_the_first_load_exports_into_the_model_dir(tmp_path: Path) -> None:
    """No export anywhere (an install not made by `make`): the first use exports once, with
    torch, into the home's model cache; the next process finds it there."""
    model = OnnxSentenceModel(bundled_model_path(), "bundled:all-MiniLM-L6-v2", batch_size=64,
                              roots=[], export_root=tmp_path / "models")
    vector = model.encode_query("how do I rotate the logs?")
    assert model.backend == "onnx"
    assert vector.shape == (384,)
    found = onnx_store.find_export(bundled_model_path(), [tmp_path / "models"])
    assert found is not None
    meta = json.loads((found.directory / onnx_store.META_FILE).read_text())
    assert meta["verified_min_cosine"] >= 0.99999
    assert meta["max_seq_length"] == 256


@pytest.mark.slow
def test_an_unloaded_onnx_model_loads_again_with_the_same_vectors(exported_root: Path) -> None:
    """The idle release frees the session; the next call opens a new one, same vectors."""
    onnx = OnnxSentenceModel(bundled_model_path(), "bundled:all-MiniLM-L6-v2", batch_size=64,
                             roots=[exported_root], export_root=None)
    before = onnx.encode_query(TEXTS[0])
    assert onnx.unload() is True
    assert onnx.unload() is False  # nothing left to free
    after = onnx.encode_query(TEXTS[0])
    assert onnx.backend == "onnx"
    np.testing.assert_allclose(after, before, atol=1e-6)
