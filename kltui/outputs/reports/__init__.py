"""Report files built from a store: JSON, HTML, Markdown, JUnit; `common` holds what they share."""
