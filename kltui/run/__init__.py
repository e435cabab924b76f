"""Starting a run: its configuration and presets, prompt sets, the runner that drives helpers
against servers and yields the event stream, and `--watch`'s server poll."""
