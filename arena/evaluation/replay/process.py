"""The replay process: runs none of the candidate's code, and what it measures is what counts.

The trusted process starts it like the candidate's (``arena.evaluation.server``), with no file
of the candidate's and no sandbox folder. It takes the records the candidate's process made of
its calls (``ReplayRequest``), checks every field and compiles or loads their kernels
(``player`` for Triton, ``native_player`` for a HIP build's device code), and replays a slot's
record for each call on that slot: the outputs checked and the times counted are the replay's.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from arena.evaluation.protocol import AckReply, LoadedReply, ReplayRequest, SetupRequest
from arena.evaluation.replay.player import Refused as RecordRefused
from arena.evaluation.server import CallServer, Refused, serve
from arena.evaluation.tracebacks import describe
from arena.records import Status


class ReplayProcess(CallServer):
    """Serves the trusted process's requests by replaying records."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.player: Any = None
        self.records: dict[int, Any] = {}    # slot -> the record its calls replay
        self.refs: dict[int, int] = {}       # slot -> the number of that record
        self.held: dict[int, tuple[Any, Any]] = {}  # number -> a record a slot replays, and the sizes it was checked on

    def prepare(self, req: SetupRequest) -> None:
        super().prepare(req)
        # (a failure here is the harness's: no candidate code has run in this process)
        if self.spec.device_code:
            from arena.evaluation.replay.native_player import NativePlayer

            self.player = NativePlayer(self.spec.device_code, self.spec.device_code_sha256)
        else:
            from arena.evaluation.replay.player import Player

            tmp = Path(os.environ.get("TMPDIR") or tempfile.mkdtemp(prefix="arena-replay-"))
            # its kernels compiled in its own temporary folder: no cache another process can write
            os.environ["TRITON_CACHE_DIR"] = str(tmp / "triton")
            self.player = Player(tmp)

    def load(self) -> Any:
        self.side = self.player
        return LoadedReply(seconds=0.0)

    def take_record(self, req: ReplayRequest) -> Any:
        """The record the calls on a slot replay from now on: sent with it (its kernels compiled
        and every field checked first; a refusal is the candidate's), or one held already, named
        by its number (checked again where this slot's buffers differ in size)."""
        from arena.evaluation.record import region

        ins, outs, _, _, _ = self._slot(req.slot)
        self.records.pop(req.slot, None)  # what it replayed before is no longer its record, whatever follows
        self.refs.pop(req.slot, None)
        regions = [region(t) for t in (*ins, *outs)]
        sizes = [n for _, n in regions]
        if req.record is not None:
            if req.ref in self.held:
                raise RuntimeError(f"record {req.ref} sent twice")
            record, checked = req.record, None
        elif req.ref in self.held:
            record, checked = self.held[req.ref]
        else:
            raise RuntimeError(f"slot {req.slot} names record {req.ref}, which this process does not hold")
        if checked != sizes:
            try:
                if req.record is not None:
                    self.player.load(record.kernels)
                self.player.check(record, regions)
            except RecordRefused as exc:
                raise Refused(Status.FORBIDDEN_CALL, f"the record of the candidate's call was refused: {exc}") from None
        self.records[req.slot], self.refs[req.slot] = record, req.ref
        self.held[req.ref] = (record, sizes)
        self._let_go()
        return AckReply()

    def release(self, slots: list[int]) -> None:
        super().release(slots)
        for s in slots:
            self.records.pop(s, None)
            self.refs.pop(s, None)
        self._let_go()

    def _let_go(self) -> None:
        """The records no slot replays any more are let go (the trusted process counts alike)."""
        live = set(self.refs.values())
        for ref in [r for r in self.held if r not in live]:
            del self.held[ref]

    def invoke(self, slot: int, copy_out: bool, checked: bool = True) -> None:
        ins, outs, _, _, _ = self._slot(slot)
        try:
            self.player.replay(self.records[slot], (*ins, *outs), poison=checked)
        except Exception as exc:  # noqa: BLE001 - the candidate's kernels failed
            raise Refused(
                Status.RUNTIME_ERROR,
                f"the replay of the candidate's call failed: {describe(exc)}"[:2000],
                context_lost=self._lost(),
            ) from None


def preload() -> None:
    """What the replay process imports, done while it waits for its job."""
    import torch  # noqa: F401

    import arena.evaluation.buffers  # noqa: F401
    import arena.evaluation.replay.player  # noqa: F401


def main(argv: list[str]) -> int:
    """The replay process's main (``arena.evaluation.server.serve``)."""
    return serve(argv, ReplayProcess, preload)


if __name__ == "__main__":  # run as the package's module, not as __main__: one copy of its classes
    import sys

    from arena.evaluation.replay import process as _self

    sys.exit(_self.main(sys.argv[1:]))
