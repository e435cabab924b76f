"""Findings rendered as text: the readings decide (typed kinds and figures), words say.

Every function here takes a typed finding from `readings/` (or `metrics/`) and returns the
text a view shows; no decision is taken here, and no reading imports this package.
"""
