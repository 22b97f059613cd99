"""Tiny random Llama checkpoints that the real vLLM engine can load offline.

I/O shell: writes a Hugging Face model folder (config, float32 safetensors weights, a BPE tokenizer trained on
the spot). Used by the tests and by the demo's real-engine mode, where no model can be downloaded. Everything
is deterministic given the seed, so two builds give byte-identical weights and tokenizer.
"""

from __future__ import annotations

import itertools
from pathlib import Path

DRAFT_HIDDEN_SIZE = 32
DRAFT_NUM_LAYERS = 1
DRAFT_NUM_HEADS = 1
# vLLM's CPU attention kernels refuse smaller heads.
MIN_HEAD_DIM = 32
MAX_POSITIONS = 2048
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<pad>")
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)

_PROSE = (
    "Speculative decoding lets a cheap draft propose tokens that the target model verifies in one pass.",
    "At low load the accelerator is memory bound, so verifying several tokens costs about as much as one.",
    "At high concurrency the step is compute bound and the extra verification work makes decoding slower.",
    "The operator measures acceptance on live traffic and turns speculation on or off as the regime changes.",
    "Kubernetes keeps the pods running, Prometheus keeps the counters, and the policy keeps its reasons.",
)
_WORDS = ("the", "cat", "sat", "on", "mat", "dog", "ran", "to", "park", "and", "back", "again", "one", "two")


def training_corpus() -> list[str]:
    """Prose plus highly repetitive lines, so prompt-lookup (n-gram) drafts find matches and get accepted."""
    repetitive = [" ".join(itertools.islice(itertools.cycle(_WORDS[i:] + _WORDS[:i]), 60)) for i in range(14)]
    counting = [" ".join(str(n) for n in range(start, start + 40)) for start in range(0, 400, 40)]
    code = [f"def f{i}(x):\n    return x * {i} + {i}\n" * 3 for i in range(20)]
    return list(_PROSE) * 4 + repetitive + counting + code


def build_tokenizer(dest: Path, vocab_size: int) -> None:
    """Train a byte-level BPE tokenizer and save it in Hugging Face's fast-tokenizer format."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(training_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tokenizer,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=MAX_POSITIONS,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(dest))


def build_tiny_llama(
    dest: Path,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 2,
    vocab_size: int = 1024,
    seed: int = 0,
) -> Path:
    """Write a random float32 Llama with its tokenizer to `dest` and return `dest`."""
    _check_shape(hidden_size, num_heads)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    dest.mkdir(parents=True, exist_ok=True)
    build_tokenizer(dest, vocab_size)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 4,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=SPECIAL_TOKENS.index("<s>"),
        eos_token_id=SPECIAL_TOKENS.index("</s>"),
        pad_token_id=SPECIAL_TOKENS.index("<pad>"),
        tie_word_embeddings=False,
        dtype="float32",
    )
    torch.manual_seed(seed)
    # torch's default dtype is float32, which the config also records.
    model = LlamaForCausalLM(config)  # type: ignore[no-untyped-call]
    model.save_pretrained(str(dest), safe_serialization=True)
    return dest


def build_tiny_draft(dest: Path, *, vocab_size: int = 1024, seed: int = 1) -> Path:
    """A smaller Llama sharing the target's tokenizer and vocabulary, for `draft_model` speculation."""
    return build_tiny_llama(
        dest,
        hidden_size=DRAFT_HIDDEN_SIZE,
        num_layers=DRAFT_NUM_LAYERS,
        num_heads=DRAFT_NUM_HEADS,
        vocab_size=vocab_size,
        seed=seed,
    )


def _check_shape(hidden_size: int, num_heads: int) -> None:
    if num_heads < 1 or hidden_size % num_heads:
        raise ValueError(f"hidden_size {hidden_size} is not a multiple of num_heads {num_heads}")
    if hidden_size // num_heads < MIN_HEAD_DIM:
        head_dim = hidden_size // num_heads
        raise ValueError(f"head_dim {head_dim} is below {MIN_HEAD_DIM}, which vLLM's CPU kernels need")
