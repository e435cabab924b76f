"""HTTP clients, one per engine."""
