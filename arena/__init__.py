"""kernel-arena: measure GPU kernels written by agents, on seen and unseen shapes.

The package is organised along one flow: a task (``arena.taskdef``) and a candidate file
go through the gates (``arena.evaluate`` in the parent; ``arena.trusted``, which holds the
task, the reference and the baseline, and ``arena.candidate``, which holds the candidate's
code, in processes of their own, talking in ``arena.protocol``'s typed frames) and come out
as Verdicts (``arena.records``), the only thing later stages read.
"""

__version__ = "0.1.0"
