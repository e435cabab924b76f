"""The alignment helpers (match, the cache helpers, multiturn, cross_engine, ...). Each is an async generator of events (see kltui.session.events); the
registry (`registry.HELPERS`) says what each one is and how it runs."""
