"""Tools for task authors, apart from the code every evaluation loads: ``check`` (``arena tasks
check``: one row per task, its solution's speed and its formulas' sense on a device) and
``importers`` (``arena tasks import``: task folders drafted from other suites' problems)."""
