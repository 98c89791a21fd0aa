"""The aiter stand-in: the part of ROCm/aiter (pinned f3be04a12a) that amd-mixed-mla submissions call, in torch.

Child side only (imports torch and nothing of the parent). `loader.install()` serves `import aiter` from here when
the real aiter cannot be imported, and never otherwise. Calls follow the pinned commit's signatures, defaults and
argument checks, write into the caller's buffers in place, and refuse what the runner's asm kernels would not do
(errors.StandInRefusal). Every covered call appends one entry to the active journal recordings (journal.py).
Numbers from a stand-in run are correctness only: they say nothing about MI355X time.
"""
