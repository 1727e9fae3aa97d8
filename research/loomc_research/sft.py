"""Supervised fine-tuning examples of CONDUCTOR-V2 §6.2: the loss mask and the collator.

Tokens come from `loomc.conductor.learned.encode_text`, the same encoding the learned planner
decodes with, so a model is trained on exactly what it is later fed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = [
    "FRONT_KEEP",
    "IGNORE_INDEX",
    "MAX_LENGTH",
    "PAD_MULTIPLE",
    "build_example",
    "pad_examples",
]

IGNORE_INDEX = -100
MAX_LENGTH = 1536  # §6.2 training max length (prompt + target + EOS)
FRONT_KEEP = 160  # §6.2: tokens kept from the front of an over-long prompt
PAD_MULTIPLE = 8  # §6.2 collator: right-pad to a multiple of 8


def build_example(
    prompt_ids: Sequence[int],
    target_ids: Sequence[int],
    eos_id: int,
    max_length: int = MAX_LENGTH,
) -> dict[str, list[int]]:
    """§6.2: `input = prompt + target + [eos]`, `labels = [-100]*len(prompt) + target + [eos]`.

    An over-long prompt keeps its first `min(160, avail // 3)` and last `avail - front` tokens,
    `avail = max_length - len(target + eos)`; a target that alone exceeds `max_length` is an error.
    """
    completion = [*target_ids, eos_id]
    avail = max_length - len(completion)
    if avail <= 0:
        raise ValueError(f"target of {len(target_ids)} tokens does not fit max_length {max_length}")
    prompt = list(prompt_ids)
    if len(prompt) > avail:
        front = min(FRONT_KEEP, avail // 3)
        back = avail - front
        prompt = prompt[:front] + (prompt[-back:] if back else [])
    return {
        "input_ids": prompt + completion,
        "labels": [IGNORE_INDEX] * len(prompt) + completion,
        "attention_mask": [1] * (len(prompt) + len(completion)),
    }


def pad_examples(
    examples: Sequence[Mapping[str, Sequence[int]]], pad_id: int, multiple: int = PAD_MULTIPLE
) -> dict[str, list[list[int]]]:
    """§6.2 collator (as lists): right-pad to the batch max rounded up to `multiple`."""
    width = max(len(e["input_ids"]) for e in examples)
    if multiple > 1:
        width = -(-width // multiple) * multiple
    out: dict[str, list[list[int]]] = {"input_ids": [], "labels": [], "attention_mask": []}
    for e in examples:
        gap = width - len(e["input_ids"])
        out["input_ids"].append([*e["input_ids"], *([pad_id] * gap)])
        out["labels"].append([*e["labels"], *([IGNORE_INDEX] * gap)])
        out["attention_mask"].append([1] * len(e["input_ids"]) + [0] * gap)
    return out
