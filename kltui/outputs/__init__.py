"""Everything that turns a store into something outside the TUI: the headless console view
(`headless`) and the report files (`reports`)."""
