"""The trusted process (``process``): inputs, reference, baseline, comparison, timing. It
imports nothing of ``candidate/`` or ``replay/``: what it knows of them comes as frames."""
