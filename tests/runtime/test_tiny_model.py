"""Tiny local checkpoints: loadable offline, deterministic, shaped for vLLM's CPU kernels."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from specfleet.demo.tiny_model import MIN_HEAD_DIM, build_tiny_llama
from tests.fixtures.deps import require_module
from tests.fixtures.vllm import TinyModels

pytestmark = pytest.mark.slow


def safetensors_dtypes(folder: Path) -> set[str]:
    raw = (folder / "model.safetensors").read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + header_len])
    return {tensor["dtype"] for name, tensor in header.items() if name != "__metadata__"}


def test_same_seed_gives_identical_files(tiny_models: TinyModels, tmp_path: Path) -> None:
    again = build_tiny_llama(tmp_path / "again")
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (again / name).read_bytes() == (tiny_models.target / name).read_bytes(), name


def test_target_and_draft_share_the_tokenizer_and_vocabulary(tiny_models: TinyModels) -> None:
    target = json.loads((tiny_models.target / "config.json").read_text())
    draft = json.loads((tiny_models.draft / "config.json").read_text())
    folders = (tiny_models.target, tiny_models.draft)
    tokenizers = {(folder / "tokenizer.json").read_bytes() for folder in folders}
    assert len(tokenizers) == 1
    assert target["vocab_size"] == draft["vocab_size"]
    assert draft["hidden_size"] < target["hidden_size"]
    assert draft["num_hidden_layers"] < target["num_hidden_layers"]
    for config in (target, draft):
        assert config["hidden_size"] // config["num_attention_heads"] >= MIN_HEAD_DIM
    assert safetensors_dtypes(tiny_models.target) == safetensors_dtypes(tiny_models.draft) == {"F32"}


def test_tokenizer_loads_offline_and_round_trips(tiny_models: TinyModels) -> None:
    require_module("transformers")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_models.target), local_files_only=True)
    text = "the cat sat on the mat and ran to the park"
    ids = tokenizer(text)["input_ids"]
    assert tokenizer.decode(ids) == text
    assert max(ids) < json.loads((tiny_models.target / "config.json").read_text())["vocab_size"]
    assert len(ids) < len(text.split()) * 2  # merges were learned, not just bytes


def test_heads_below_vllms_minimum_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="head_dim"):
        build_tiny_llama(tmp_path / "narrow", hidden_size=64, num_heads=4)
    assert not (tmp_path / "narrow").exists()
