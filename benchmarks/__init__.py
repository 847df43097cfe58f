"""bench_context: a benchmark of how prompts are built over long conversations (not a timed test).

Imports no Django at package level; only the management command and office_strategy touch the ORM.
"""
