"""The Textual dashboard. Only `kltui.cli` imports this package (Textual is heavy to import)."""
