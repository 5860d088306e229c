"""bench: HOW runs are executed and measured (specs, runner, metrics, store, CLI)."""
