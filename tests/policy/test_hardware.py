from __future__ import annotations

import pytest

from specfleet.operator.policy.hardware import gpu_profile, guess_size_billions, model_profile


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", 8.0),
        ("meta-llama/Meta-Llama-3-70B", 70.0),
        ("Qwen/Qwen2.5-0.5B", 0.5),
        ("mistralai/Mixtral-8x7B-v0.1", 56.0),
        ("org/some-70b-chat", 70.0),
        ("gpt2", None),
    ],
)
def test_size_from_name(name: str, size: float | None) -> None:
    assert guess_size_billions(name) == size


def test_model_profiles_match_calibration_constants() -> None:
    small, large = model_profile("Llama-3.1-8B"), model_profile("Llama-3-70B")
    assert small.weight_bytes == pytest.approx(16.1e9, rel=0.02)
    assert large.weight_bytes == pytest.approx(141e9, rel=0.02)
    assert small.kv_bytes_per_token == 128 * 1024
    assert large.kv_bytes_per_token == 320 * 1024


def test_declared_size_wins_over_the_name() -> None:
    assert model_profile("Llama-3.1-8B", size_billions=70).size_billions == 70


def test_gpu_lookup() -> None:
    assert gpu_profile("nvidia-h200-141gb").bandwidth_bytes_s == 4.8e12
    assert gpu_profile("H100").peak_flops == 989e12
    assert gpu_profile("unknown-accelerator").name == "H100"
