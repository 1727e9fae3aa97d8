"""loomc: a compiler and runtime for budgeted multi-model LLM inference pipelines."""

__version__ = "0.1.0"
