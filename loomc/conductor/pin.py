"""Verify a learned planner's pinned base model before anything is loaded.

A LoRA adapter only means something on the exact base it was trained on. The adapter says which
(`adapter_config.json` → `base_model_name_or_path`); our configuration pins it (`base_model_id`)
and pins the base's bytes (`revision`):

* `revision` = a 40-hex commit: the base directory must be that hub snapshot
  (`.../snapshots/<commit>`), the only place a local directory carries its commit;
* `revision` = `sha256:<hex>`: the SHA-256 of the base's `config.json` and weight files
  (`*.safetensors`, `*.bin`, sorted by name), which any copied directory can be checked against.
  `python -m loomc.conductor.pin DIR` prints it.

Any mismatch is one line naming both values; nothing is loaded.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

SHA_COMMIT = re.compile(r"^[0-9a-f]{40}$")
SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")


class PinMismatch(ValueError):
    """The adapter, the base directory or its revision is not what the configuration pins."""


def adapter_base(adapter: Path) -> str:
    """`base_model_name_or_path` of an adapter directory."""
    path = adapter / "adapter_config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PinMismatch(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise PinMismatch(f"{path}: not valid JSON: {exc}") from None
    base = data.get("base_model_name_or_path") if isinstance(data, dict) else None
    if not isinstance(base, str) or not base:
        raise PinMismatch(f"{path} names no base_model_name_or_path")
    return base


def weights_digest(base: Path) -> str:
    """`sha256:<hex>` over config.json and the weight files of a model directory."""
    files = sorted(
        p
        for p in base.iterdir()
        if p.is_file() and (p.name == "config.json" or p.suffix in (".safetensors", ".bin"))
    )
    if not any(p.suffix in (".safetensors", ".bin") for p in files):
        raise PinMismatch(f"{base} holds no weight files (*.safetensors, *.bin) to hash")
    digest = hashlib.sha256()
    for p in files:
        digest.update(p.name.encode() + b"\0")
        with p.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def verify_pin(
    adapter: Path | None, base: Path | None, base_model_id: str | None, revision: str | None
) -> None:
    """Raise `PinMismatch` unless the adapter's base is `base_model_id` and the base directory
    (when local) is `revision`. An adapter without a full pin is refused."""
    if adapter is not None:
        declared = adapter_base(adapter)
        if base_model_id is None or revision is None:
            raise PinMismatch(
                f"adapter {adapter} was trained on {declared!r}: pin its base before loading "
                f"(--base-model-id {declared} --revision COMMIT|sha256:DIGEST)"
            )
        if declared != base_model_id:
            raise PinMismatch(
                f"adapter {adapter} was trained on {declared!r}, not the pinned base "
                f"{base_model_id!r}"
            )
    if revision is None or base is None:
        return
    if SHA_COMMIT.match(revision):
        if base.parent.name != "snapshots" or base.name != revision:
            raise PinMismatch(
                f"base model {base} is not snapshot {revision} (a commit pin needs the hub "
                "snapshot directory; pin sha256:DIGEST of a copied directory instead)"
            )
    elif SHA256.match(revision):
        found = weights_digest(base)
        if found != revision:
            raise PinMismatch(f"base model {base} is {found}, not the pinned {revision}")
    else:
        raise PinMismatch(f"revision {revision!r} is neither a 40-hex commit nor sha256:<64 hex>")


if __name__ == "__main__":  # python -m loomc.conductor.pin DIR
    for arg in sys.argv[1:] or ["."]:
        print(weights_digest(Path(arg)))
