"""One evaluation of a candidate file on a task: its processes and what crosses between them.

- ``parent`` (the caller's process): builds, starts the trusted process, enforces time limits;
  ``decision`` turns the trusted process's frames into verdicts.
- ``trusted/``: inputs, reference, baseline, correctness, timing; no candidate code runs there.
- ``candidate/``: the only process that runs the candidate's code; it records its calls.
- ``replay/``: runs none of the candidate's code; replays its records; what it measures counts.
- ``sandbox/``: the operating system's confinement of the candidate and replay processes.
- ``protocol`` and ``channel``: the typed frames, the only thing that crosses; ``server``: what
  the processes that make calls share; ``processes``: how every process is started.
"""
