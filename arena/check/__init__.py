"""Correctness machinery: seeded structured inputs, poisoned outputs, comparison by dtype."""
