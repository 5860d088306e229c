"""Per-paper report pages: one module per paper key (TITLE, SOURCE, RESOLUTIONS, build)."""
