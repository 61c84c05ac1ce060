"""Task model: JSON Schema, loader into typed dataclasses, formulas, configs and splits."""

from arena.taskdef.loader import (  # noqa: F401
    Config,
    InputSpec,
    OutputSpec,
    ScalarSpec,
    Task,
    discover_tasks,
    load_configs,
    load_task,
    select_tasks,
)
