"""What a run's evidence means: per-server diagnosis, coverage, the path tests, comparisons
between servers, fleets, the stress reading and the ablation reading (docs/ARCHITECTURE.md)."""
