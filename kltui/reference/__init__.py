"""kltui's embedded reference server: a tiny real Llama behind SGLang 0.5.23's native HTTP API.

Importing this package (or `launcher`, or `cli_entry`) does not import torch; only the server
process does.
"""

from pathlib import Path

# The shipped checkpoint (an HF Llama folder that SGLang and vLLM can also serve).
CHECKPOINT_DIR = Path(__file__).with_name("checkpoint")
