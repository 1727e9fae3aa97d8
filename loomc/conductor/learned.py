"""The learned planner: a causal LM plus a PEFT LoRA adapter that writes v2 plans as JSON text.

Loading and decoding follow the published v2 run (CONDUCTOR-V2 §6): local directories only
(`local_files_only=True`; the revision is recorded, never passed to the loader), the raw v2
prompt with no chat template and no BOS (`encode(text, add_special_tokens=False)`), left padding
with `pad_id` (= pad token, else EOS), greedy decoding (`do_sample=False`, `use_cache=True`),
stop only on EOS, prediction = decode(new tokens up to the first EOS, skip specials).strip().

The training side (`loomc_research.train`, with `loomc_research.sft` for the §6.2 examples)
shares `encode_text` and the loaders so a model is fed exactly what it was trained on. torch, transformers and peft
are imported lazily inside methods, so importing `loomc` stays fast; without them every entry
point raises `LearnedPlannerUnavailable`.

A proposal is untrusted text: `parse_proposal` turns it into a `Plan` or a stable reason code
(`no_json` or a `PlanParseError.reason`); the guard, not the planner, decides what runs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loomc.conductor.plan import Plan, PlanParseError
from loomc.conductor.prompt_format import extract_first_json, prompt_of

__all__ = [
    "Generation",
    "LearnedPlanner",
    "LearnedPlannerError",
    "LearnedPlannerUnavailable",
    "encode_text",
    "load_base_model",
    "load_tokenizer",
    "parse_proposal",
    "prompt_of",
    "resolve_device",
    "resolve_dtype",
    "special_ids",
]

_EXTRA_HINT = (
    "install the 'conductor' extra: pip install torch==2.13.0 && pip install -e '.[conductor]'"
)


class LearnedPlannerError(RuntimeError):
    """The learned planner cannot be set up as asked (bad path, bad option, load failure)."""


class LearnedPlannerUnavailable(LearnedPlannerError, ImportError):
    """torch / transformers / peft are not installed."""


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise LearnedPlannerUnavailable(
            f"the learned planner needs {module.split('.')[0]!r} ({exc}); {_EXTRA_HINT}"
        ) from exc


# ------------------------------------------------------------------------------------------
# Shared text/token helpers (no torch needed except where noted)


def encode_text(tokenizer: Any, text: str) -> list[int]:
    """§6.1: `encode(text, add_special_tokens=False)` flattened to a list of ints (no BOS/EOS)."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    flat: list[int] = []
    for item in ids:
        if isinstance(item, list | tuple):
            flat.extend(int(x) for x in item)
        else:
            flat.append(int(item))
    return flat


def resolve_device(device: str = "auto") -> str:
    """`auto` → `cuda` when available, else `cpu`; anything else is passed through checked."""
    torch = _require("torch")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise LearnedPlannerError(f"device {device!r} requested but CUDA is not available")
    try:
        torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise LearnedPlannerError(f"unknown device {device!r}: {exc}") from None
    return device


_DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
}


def resolve_dtype(dtype: str, device: str) -> Any:
    """`auto` → bfloat16 on CUDA (the published dtype), float32 elsewhere."""
    torch = _require("torch")
    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    if dtype not in _DTYPES:
        raise LearnedPlannerError(f"unknown dtype {dtype!r} (auto, {', '.join(sorted(_DTYPES))})")
    return getattr(torch, _DTYPES[dtype])


def parse_proposal(
    text: str, worker_ids: Sequence[str] | None = None
) -> tuple[Plan | None, str | None]:
    """(plan, None) for a well-formed proposal, else (None, reason): `no_json` when no JSON
    object is found (§5.1), otherwise the strict parser's `PlanParseError.reason`."""
    obj = extract_first_json(text)
    if obj is None:
        return None, "no_json"
    try:
        return Plan.from_json(obj, worker_ids=worker_ids), None
    except PlanParseError as exc:
        return None, exc.reason


def load_tokenizer(base: str | Path) -> Any:
    """`AutoTokenizer` from a local directory (no hub access); errors name the directory."""
    transformers = _require("transformers")
    try:
        return transformers.AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise LearnedPlannerError(f"cannot load a tokenizer from {base}: {exc}") from exc


def special_ids(tokenizer: Any, base: str | Path = "") -> tuple[int, int]:
    """(eos_id, pad_id) as in §6.1: pad = the pad token, else EOS."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise LearnedPlannerError(f"tokenizer in {base} has no EOS token")
    pad = tokenizer.pad_token_id
    return int(eos), int(pad) if pad is not None else int(eos)


def load_base_model(base: str | Path, dtype: Any, device: str = "cpu") -> Any:
    """The base LM from a local directory: `AutoModelForCausalLM`, or for configs that are no
    causal-LM auto class (Ministral 3's `mistral3` multimodal wrapper, the class the v2 adapter
    was trained on, §6.1) `AutoModelForImageTextToText`, which generates from text ids alone."""
    transformers = _require("transformers")
    kwargs: dict[str, Any] = {
        "local_files_only": True,
        "dtype": dtype,
        "low_cpu_mem_usage": True,
        "attn_implementation": "sdpa",
    }
    if device.startswith("cuda"):
        kwargs["device_map"] = device  # load shards straight onto the GPU
    try:
        try:
            return transformers.AutoModelForCausalLM.from_pretrained(str(base), **kwargs)
        except ValueError as exc:
            if "Unrecognized configuration class" not in str(exc):
                raise
            return transformers.AutoModelForImageTextToText.from_pretrained(str(base), **kwargs)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise LearnedPlannerError(f"cannot load the base model from {base}: {exc}") from exc


# ------------------------------------------------------------------------------------------
# The planner


@dataclass(frozen=True)
class Generation:
    """One decoded proposal and the record fields of §6.4."""

    text: str
    token_ids: tuple[int, ...]  # new tokens up to and including the first EOS
    input_tokens: int
    output_tokens: int
    elapsed_ms: float  # wall time of the whole batch (CUDA-synchronized), as in §6.4
    batch_size: int


def _check_dir(path: str | Path, what: str, required: Sequence[str]) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise LearnedPlannerError(f"{what} directory not found: {p}")
    if not p.is_dir():
        raise LearnedPlannerError(f"{what} must be a local directory, not a file: {p}")
    for name in required:
        if not (p / name).is_file():
            raise LearnedPlannerError(f"{what} directory {p} has no {name}")
    return p


_SHA_RE = re.compile(r"^[0-9a-f]{40}$")


def _check_revision(base: Path, revision: str | None) -> None:
    """The revision is recorded, not passed to the loader (§6.1); but a hub-cache snapshot
    directory (`.../snapshots/<commit>`) that names a different commit is refused."""
    if revision is None or not _SHA_RE.match(revision):
        return
    if base.parent.name == "snapshots" and _SHA_RE.match(base.name) and base.name != revision:
        raise LearnedPlannerError(
            f"base model {base} is snapshot {base.name}, not the requested revision {revision}"
        )


class LearnedPlanner:
    """A base causal LM (local directory) with an optional LoRA adapter (local directory)."""

    def __init__(
        self,
        base_model: str | Path,
        adapter: str | Path | None,
        *,
        revision: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        max_new_tokens: int = 512,
        merge_adapter: bool = False,
    ) -> None:
        if max_new_tokens < 1:
            raise LearnedPlannerError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        base = _check_dir(base_model, "base model", ("config.json",))
        adapter_dir = (
            _check_dir(adapter, "adapter", ("adapter_config.json",))
            if adapter is not None
            else None
        )
        _check_revision(base, revision)
        torch = _require("torch")
        _require("transformers")
        if adapter_dir is not None:
            peft = _require("peft")
        self.base_model = base
        self.adapter = adapter_dir
        self.revision = revision  # recorded only (§6.1): integrity is the caller's hash check
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.max_new_tokens = max_new_tokens
        self._torch = torch

        self.tokenizer = load_tokenizer(base)
        self.eos_id, self.pad_id = special_ids(self.tokenizer, base)

        model = load_base_model(base, self.dtype, self.device)
        if adapter_dir is not None:
            try:
                model = peft.PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=False)
            except (OSError, ValueError, KeyError, RuntimeError) as exc:
                raise LearnedPlannerError(
                    f"cannot load the LoRA adapter {adapter_dir} onto {base}: {exc}"
                ) from exc
            if merge_adapter:
                # Folds LoRA into the base weights: no extra adapter matmuls per layer and step.
                # On an H200 at the 14B shape, batch 96, it decoded 1.75x faster (27.3 -> 15.6 s
                # a batch, research/gpu_check.py); in bf16 the folded weights round differently,
                # so its greedy ids may differ from the unmerged lane's: off by default.
                model = model.merge_and_unload()
        self.adapter_merged = adapter_dir is not None and merge_adapter
        if not self.device.startswith("cuda"):  # on CUDA `device_map` already placed it
            model.to(self.device)
        model.eval()
        self.model = model

    @property
    def info(self) -> dict[str, Any]:
        """What to record in a prediction receipt (`.meta.json`)."""
        return {
            "lane": "trained_conductor" if self.adapter is not None else "base_model",
            "model": str(self.base_model),
            "revision": self.revision,
            "adapter": str(self.adapter) if self.adapter is not None else None,
            "device": self.device,
            "dtype": str(self.dtype).removeprefix("torch."),
            "max_new_tokens": self.max_new_tokens,
            "adapter_merged": self.adapter_merged,
        }

    # -- decoding -------------------------------------------------------------------------

    def generate_detailed(self, prompts: Sequence[str], batch_size: int = 8) -> list[Generation]:
        """Greedy, left-padded, batched decoding in input order; one `Generation` per prompt."""
        if batch_size < 1:
            raise LearnedPlannerError(f"batch_size must be >= 1, got {batch_size}")
        out: list[Generation] = []
        for start in range(0, len(prompts), batch_size):
            out.extend(self._generate_batch(prompts[start : start + batch_size]))
        return out

    def generate(self, prompts: list[str], batch_size: int = 8) -> list[str]:
        """Only the generated continuation text of each prompt (stripped), in input order."""
        return [g.text for g in self.generate_detailed(prompts, batch_size)]

    def propose(self, rows: Sequence[Mapping[str, Any]], batch_size: int = 8) -> list[str]:
        """`generate` on the v2 prompts of corpus rows (their `prompt`, else rebuilt)."""
        return self.generate([prompt_of(row) for row in rows], batch_size)

    def _generate_batch(self, prompts: Sequence[str]) -> list[Generation]:
        torch = self._torch
        encoded = [encode_text(self.tokenizer, p) for p in prompts]
        if any(not ids for ids in encoded):
            raise LearnedPlannerError("cannot decode from an empty prompt")
        width = max(len(ids) for ids in encoded)
        input_ids = [[self.pad_id] * (width - len(ids)) + ids for ids in encoded]
        mask = [[0] * (width - len(ids)) + [1] * len(ids) for ids in encoded]
        ids_t = torch.tensor(input_ids, dtype=torch.long, device=self.device)
        mask_t = torch.tensor(mask, dtype=torch.long, device=self.device)
        cuda = self.device.startswith("cuda")
        if cuda:
            torch.cuda.synchronize()
        started = time.perf_counter()
        with torch.inference_mode():
            generated = self.model.generate(
                input_ids=ids_t,
                attention_mask=mask_t,
                generation_config=self._generation_config(width),
            )
        if cuda:
            torch.cuda.synchronize()
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        new_tokens = generated[:, width:].tolist()
        results = []
        for ids, row in zip(encoded, new_tokens, strict=True):
            cut = row.index(self.eos_id) + 1 if self.eos_id in row else len(row)
            kept = row[:cut]
            text = self.tokenizer.decode(kept, skip_special_tokens=True)
            results.append(
                Generation(
                    text=text.strip(),
                    token_ids=tuple(int(t) for t in kept),
                    input_tokens=len(ids),
                    output_tokens=len(kept),
                    elapsed_ms=elapsed_ms,
                    batch_size=len(prompts),
                )
            )
        return results

    def _generation_config(self, width: int) -> Any:
        transformers = _require("transformers")
        # A fresh config, so sampling defaults shipped with a base model (temperature, top_p)
        # can neither switch sampling on nor warn; greedy, stop only on EOS (§6.4).
        return transformers.GenerationConfig(
            do_sample=False,
            num_beams=1,
            max_length=width + self.max_new_tokens,
            eos_token_id=self.eos_id,
            pad_token_id=self.pad_id,
            bos_token_id=self.tokenizer.bos_token_id,
            use_cache=True,
        )
