"""kernel-arena: measure GPU kernels written by agents, on seen and unseen shapes.

A task (``arena.taskdef``) and a candidate file go through one evaluation
(``arena.evaluation``: a parent, a trusted process, the candidate's process and a replay
process, talking in typed frames) and come out as Verdicts (``arena.records``), the only thing
later stages (``arena.runner``, ``arena.report``) read.
"""

__version__ = "0.1.0"
