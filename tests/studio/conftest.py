from __future__ import annotations

import sys
from pathlib import Path

# the replay server (a real OpenAI-compatible upstream on 127.0.0.1) lives with the provider tests
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "providers"))
