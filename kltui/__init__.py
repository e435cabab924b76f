"""kltui: live numerical alignment of LLM inference engines."""

__version__ = "0.1.0"
