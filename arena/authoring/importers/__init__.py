"""Task folders drafted from problems written for other harnesses (``arena tasks import``).

``import_kernelbench``: a KernelBench-style problem file (``class Model(nn.Module)``, module
constants, ``get_inputs()``, ``get_init_inputs()``) becomes a torch2hip task: the reference is
``Model.forward`` written as a function of its tensors, the model's parameters and buffers
(inputs of the signature, drawn like their init) and the problem's constants (scalars and
config parameters); the seen config is the problem's own.

``import_aka``: an AgentKernelArena-style task folder (a YAML naming the kernel source, the
source, a test script) becomes a triton2triton or hip2hip task: the kernel is kept as written
and a thin entry with the task's ABI is added to it; the reference, the signature and the
configs come from what the folder's test computes in torch, or from a PyTorch module file
beside it.

How the numbers become formulas: the problem is run again (on the meta device: no memory,
no arithmetic) with each constant doubled and tripled, and a dimension (or a module
attribute, or the FLOP count) that follows one constant linearly, or several as a product,
is written over their names; anything else stays a number and is listed. Every config the
importer drafts is run the same way and kept only where the original accepts it.

What is inferred is written; what is guessed is marked DRAFT in the files and listed; what
cannot be inferred is listed, never guessed. Both importers end with ``validate_task_dir``
(what ``arena tasks validate`` runs) and a numbered list of what the author must still decide.
"""
