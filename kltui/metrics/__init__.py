"""Numbers from logprobs, no I/O and no UI: k3 and per-run summaries (`k3`), cross-engine
comparison (`cross`, `alignment`), and the one k3 colour scale every view draws with (`scale`)."""
