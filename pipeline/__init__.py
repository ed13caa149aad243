"""Orchestration only: prepare (convert, place, compose), generate, and the `grade` CLI.

Nothing below `pipeline` imports it; the foundation every stage shares lives in `core`.
"""
