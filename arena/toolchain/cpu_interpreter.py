"""What a process that runs Triton kernels in the interpreter (the cpu backend) installs first: an autotuner
runs its first config (the interpreter cannot benchmark), libdevice's common functions get implementations
of the interpreter's own operations, fp8 conversions are done as a GPU does them, a launcher's
``torch.cuda.device`` of a CPU tensor's device selects nothing, and a kernel's ``tl.multiple_of`` that is false on
its values fails the call, as a GPU's misaligned access would (``interpreter_hints``), and a launch's grid function
gets the launch's arguments as a GPU's launcher gives them (``interpreter_grid``). The candidate's process
on the cpu backend and the importers' probe of a starting kernel (``arena.authoring.importers.kernel_probe``)
both call ``install``."""

from __future__ import annotations


def install() -> None:
    from arena.toolchain import (
        interpreter_cuda,
        interpreter_fp8,
        interpreter_grid,
        interpreter_hints,
        interpreter_libdevice,
    )
    from arena.toolchain.autotune import first_config_only

    first_config_only()
    interpreter_libdevice.install()
    interpreter_fp8.install()
    interpreter_cuda.install()
    interpreter_hints.install()
    interpreter_grid.install()
