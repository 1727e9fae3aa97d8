"""Static analyses over the IR: pure functions, no I/O, no providers."""

from loomc.checker.rules import check_pipeline
from loomc.checker.worstcase import WorstCase, worst_case

__all__ = ["WorstCase", "check_pipeline", "worst_case"]
