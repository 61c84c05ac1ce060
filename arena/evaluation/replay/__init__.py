"""The replay process (``process``): runs none of the candidate's code; checks the records of
its calls and replays them (``player``: Triton, ``native_player``: a HIP build's device code).
It imports nothing of ``candidate/``."""
