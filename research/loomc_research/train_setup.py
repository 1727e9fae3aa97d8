"""The model and `Trainer` set-up of the LoRA SFT run (§6.3), apart from `train.py`'s CLI.

Split out so that a measurement can put *the same* set-up on a model it built in memory:
`research/gpu_check.py` times training steps of a random model with the 14B base's shape on a
GPU, which no local directory holds, through these two functions rather than a copy of them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def attach_lora(model: Any, args: argparse.Namespace) -> Any:
    """Gradient checkpointing (non-reentrant, inputs require grads) and the LoRA adapter."""
    from peft import LoraConfig, get_peft_model

    model.config.use_cache = False
    if args.gradient_checkpointing:  # non-reentrant, inputs require grads (§6.3)
        ckpt_kwargs = {"use_reentrant": False}
        if hasattr(model, "activation_checkpointing_enable"):  # the transformers 5 name
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=ckpt_kwargs)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=ckpt_kwargs)
        model.enable_input_require_grads()
    lora = LoraConfig(
        r=args.lora_r,
        lora_alpha=args.lora_alpha,
        lora_dropout=args.lora_dropout,
        bias="none",
        task_type="CAUSAL_LM",
        target_modules=[m.strip() for m in args.target_modules.split(",") if m.strip()],
    )
    return get_peft_model(model, lora)


def training_arguments(
    args: argparse.Namespace, output: Path, *, cuda: bool, bf16: bool, has_eval: bool, warmup: int
) -> Any:
    """The `TrainingArguments` of the published run, from the parsed command line."""
    import transformers

    return transformers.TrainingArguments(
        output_dir=str(output),
        per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=args.eval_batch_size,
        gradient_accumulation_steps=args.grad_accum,
        num_train_epochs=args.epochs,
        max_steps=args.max_steps,
        learning_rate=args.learning_rate,
        lr_scheduler_type=args.scheduler,
        warmup_steps=warmup,
        weight_decay=args.weight_decay,
        max_grad_norm=args.max_grad_norm,
        optim=args.optim,
        bf16=bf16,
        tf32=True if cuda else None,
        logging_steps=args.logging_steps,
        eval_strategy="steps" if has_eval else "no",
        eval_steps=args.eval_steps if has_eval else None,
        save_strategy="steps",
        save_steps=args.save_steps,
        save_total_limit=args.save_total_limit,
        load_best_model_at_end=has_eval,
        metric_for_best_model="eval_loss" if has_eval else None,
        greater_is_better=False if has_eval else None,
        seed=args.seed,
        data_seed=args.seed,
        dataloader_num_workers=args.workers,
        dataloader_pin_memory=cuda,
        remove_unused_columns=False,
        report_to="none",
        disable_tqdm=not sys.stderr.isatty(),
        use_cpu=not cuda,
    )
