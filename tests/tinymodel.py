"""A tiny random causal LM for the learned-planner tests and benchmark, built offline.

A byte-level BPE tokenizer trained with `tokenizers` on a few v2-like strings (wrapped in
`PreTrainedTokenizerFast`, with `<pad>`, `<s>` and `</s>`) and a 2-layer, 64-wide Llama config
(~107 k parameters, ~0.4 MB), both saved to one directory that `AutoTokenizer`/`AutoModelForCausalLM`
load with `local_files_only=True`. Its weights are random (seeded): its output is random bytes,
so compare token ids or two runs, never readable text.

Usable from tests (`from tinymodel import build_tiny_model`, pytest puts this folder on
`sys.path`) and from `benchmarks/bench_learned.py` (which adds this folder itself).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TINY_CONFIG: dict[str, Any] = {
    "vocab_size": 512,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
}

# The seven projection names of Llama/Mistral blocks (the v2 LoRA target list).
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

_SPECIALS = ("<pad>", "<s>", "</s>")


def _training_text() -> list[str]:
    """A few strings the BPE merges learn from: the v2 instruction, schema and key names."""
    from loomc.conductor.plan import canonical_json
    from loomc.conductor.prompt_format import INSTRUCTION, OUTPUT_SCHEMA

    sample = (
        '{"access":{"finalizer":["writer","reviewer"],"reviewer":["writer"],"writer":[]},'
        '"estimated_credits":16.946,"estimated_latency_ms":181187,"estimated_pass_rate":0.8044,'
        '"estimated_quality":0.9336,"finalizer":"worker_b","independent_verification":true,'
        '"max_calls":3,"max_credits":20.669,"max_latency_ms":216855,"policy":"strict",'
        '"reason_codes":["high_consequence","independent_evidence"],"reviewer":"worker_a",'
        '"writer":"worker_c"}'
    )
    workers = (
        '{"constraints":{"max_calls":3,"max_credits":20.669,"max_latency_ms":216855,'
        '"minimum_quality":0.8086},"task":{"ambiguity":0.6532,"category":"health",'
        '"complexity":0.4228,"consequence":0.9992,"evidence_need":0.871,"family":"health_triage",'
        '"input_tokens":7120,"reversibility":0.0567,"risk":0.8147,"summary":"Review a draft."},'
        '"workers":[{"credits_per_call":3.498,"id":"worker_a","p95_latency_ms":74039,'
        '"pass_rate":0.8674,"provider_group":"provider_y","quality":0.8689,'
        '"strengths":["reasoning","review","writing"]}]}'
    )
    return [INSTRUCTION, canonical_json(OUTPUT_SCHEMA), sample, workers, "lean balanced strict"] * 4


def build_tiny_model(directory: str | Path, *, seed: int = 0) -> Path:
    """Write tokenizer + random-weight model to `directory` (created); returns the path."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TINY_CONFIG["vocab_size"],
        special_tokens=list(_SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_training_text(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>"
    )
    fast.save_pretrained(out)

    torch.manual_seed(seed)
    config = LlamaConfig(
        **TINY_CONFIG,
        pad_token_id=fast.pad_token_id,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        tie_word_embeddings=True,
        # Wider than the 0.02 default: at 0.02 a random 64-wide model emits one token forever,
        # which would make the determinism and batch-invariance tests vacuous.
        initializer_range=0.2,
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(out)
    return out


def attach_random_lora(base_dir: str | Path, adapter_dir: str | Path, *, seed: int = 1) -> Path:
    """A LoRA adapter on the seven projections with non-zero B (so it changes the output)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(str(base_dir), local_files_only=True)
    config = LoraConfig(
        r=4,
        lora_alpha=8,
        lora_dropout=0.0,
        target_modules=list(LORA_TARGETS),
        task_type="CAUSAL_LM",
    )
    peft_model = get_peft_model(model, config)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.05)
    peft_model.save_pretrained(str(adapter_dir))
    return Path(adapter_dir)
