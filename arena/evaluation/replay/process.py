"""The replay process: runs none of the candidate's code, and what it measures is what counts.

The trusted process starts it beside the candidate's (``arena.evaluation.server``), with no file
of the candidate's and no sandbox folder. It runs the task's baseline (``candidate`` of its
setup: the task's own code, trusted), and where the candidate's calls are recorded
(``replay`` of its setup) it takes the records the candidate's process made of them
(``ReplayRequest``), checks every field and compiles or loads their kernels (``player`` for
Triton, ``native_player`` for a HIP build's device code), and replays a slot's record for each
call on that slot: the outputs checked and the times counted are the replay's. Both sides'
timed calls are made here, so a round of them is one request (``SampleRequest``).

Where the setup asks (``record``: a Triton or HIP baseline, on CUDA) the baseline is timed the
same way: its call is recorded here, on buffers of its own (``arena.evaluation.recorder``,
``arena.evaluation.native_recorder``), and its slots replay that record with a player of its
own. A call timed as it runs leaves the device idle while its host code works between
launches (a launcher that reads a size back from the device, many small launches from
Python); its record replayed does not, and the candidate's always is.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from arena.evaluation.protocol import LoadedReply, MapRequest, ReplayRequest, SetupRequest, TakenReply
from arena.evaluation.replay.player import Refused as RecordRefused
from arena.evaluation.server import CallServer, Refused, candidate_code, serve
from arena.evaluation.tracebacks import describe
from arena.records import Status


class BaselineFailed(Refused):
    """The task's baseline failed (its failure reaches the trusted process as the task's)."""

    baseline = True


class ReplayProcess(CallServer):
    """Serves the trusted process's requests with the task's baseline and by replaying records."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.runs_candidate_code = False
        self.player: Any = None               # replays the candidate's records
        self.base_player: Any = None          # replays the baseline's, where its calls are recorded
        self.baseline: Any = None             # the task's baseline (arena.evaluation.sides.Side), once loaded
        self.replayed: set[int] = set()       # the slots whose calls replay records
        self.records: dict[int, Any] = {}    # slot -> the record its calls replay (a baseline's slot: where one is)
        self.refs: dict[int, int] = {}       # slot -> the number of that record
        self.held: dict[int, tuple[Any, Any]] = {}  # number -> a record a slot replays, and the sizes it was checked on

    def prepare(self, req: SetupRequest) -> None:
        super().prepare(req)
        if self.gpu:
            self._watch_tuning()
        replay = req.replay if req.replay is not None else req.candidate if req.candidate.language == "replay" else None
        # (a failure here is the harness's: no candidate code has run in this process, nor ever will)
        if replay is not None:
            self.player = _player(replay, "replay")
        if req.record and self.gpu and req.candidate.language in ("triton", "hip"):
            # the baseline's calls recorded and replayed, as the candidate's are: its Triton launches wrapped before
            # it is loaded (a HIP library's recorder is linked into it: taken up as it loads)
            self.base_player = _player(req.candidate, "baseline")
            if req.candidate.language == "triton":
                from arena.evaluation.recorder import Recorder

                self.recorder = Recorder()

    def load(self) -> Any:
        """The task's baseline, where this process runs one (its failure is the task's)."""
        import time

        t0 = time.perf_counter()
        if self.spec.language != "replay":
            from arena.evaluation.sides import Side, SideError

            try:
                with candidate_code():
                    self.baseline = Side(self.spec, role="baseline")
            except SideError as exc:
                raise BaselineFailed(exc.status, exc.message) from None
            if self.base_player is not None and self.spec.language == "hip":
                from arena.evaluation.native_recorder import NativeRecorder

                try:
                    self.recorder = NativeRecorder(self.baseline.lib)
                except RuntimeError:        # a library built without it: the baseline's calls are made as they run
                    self.base_player = None
        self.side = self.baseline if self.baseline is not None else self.player
        return LoadedReply(seconds=round(time.perf_counter() - t0, 3))

    def map(self, req: MapRequest) -> Any:
        reply = super().map(req)
        if req.replayed:
            if self.player is None:
                raise RuntimeError("a replayed slot in a process that replays no records")
            self.replayed.add(req.slot)
        else:
            self.replayed.discard(req.slot)
        return reply

    def take_record(self, req: ReplayRequest) -> Any:
        """The record the calls on a slot replay from now on: sent with it (its kernels compiled
        and every field checked first; a refusal is the candidate's), or one held already, named
        by its number (checked again where this slot's buffers differ in size)."""
        from arena.evaluation.record import region

        ins, outs, _, _, _ = self._slot(req.slot)
        self.records.pop(req.slot, None)  # what it replayed before is no longer its record, whatever follows
        self.refs.pop(req.slot, None)
        if req.ref == 0 and req.record is None:     # none: a baseline's slot calls it as it runs from now on
            self._let_go()
            return TakenReply()
        player = self._player_of(req.slot)
        if player is None:
            raise RuntimeError(f"a record for slot {req.slot}, whose side this process does not replay")
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
        local = 0
        if checked != sizes:
            try:
                if req.record is not None:
                    player.load(record.kernels)
                player.check(record, regions)
            except RecordRefused as exc:
                raise Refused(Status.FORBIDDEN_CALL, f"the record of the {self._whose(req.slot)} call was refused: "
                                                     f"{exc}") from None
            if req.record is not None:
                try:
                    local = player.local_bytes(record)
                except Exception:  # noqa: BLE001 - a kernel that does not load (Triton's OutOfResources) fails where
                    local = 0      # it is launched, in the replay, as the candidate's failure, as before
        self.records[req.slot], self.refs[req.slot] = record, req.ref
        self.held[req.ref] = (record, sizes)
        self._let_go()
        return TakenReply(local_bytes=local)

    def release(self, slots: list[int]) -> None:
        super().release(slots)
        for s in slots:
            self.records.pop(s, None)
            self.refs.pop(s, None)
            self.replayed.discard(s)
        self._let_go()

    def _let_go(self) -> None:
        """The records no slot replays any more are let go (the trusted process counts alike)."""
        live = set(self.refs.values())
        for ref in [r for r in self.held if r not in live]:
            del self.held[ref]

    def _player_of(self, slot: int) -> Any:
        """What replays the records of ``slot``: the candidate's player on its slots, the baseline's on the others."""
        return self.player if slot in self.replayed else self.base_player

    def _whose(self, slot: int) -> str:
        return "candidate's" if slot in self.replayed else "task's baseline's"

    def invoke(self, slot: int, copy_out: bool, checked: bool = True) -> None:
        ins, outs, scalars, _, _ = self._slot(slot)
        record = self.records.get(slot)
        if record is None:
            if slot in self.replayed:     # a candidate's slot never calls the baseline
                raise RuntimeError(f"slot {slot} has no record to replay")
            self._call_baseline(ins, outs, scalars, copy_out)
            return
        try:
            self._player_of(slot).replay(record, (*ins, *outs), poison=checked)
        except Exception as exc:  # noqa: BLE001 - the candidate's kernels failed (or the baseline's)
            failed = Refused if slot in self.replayed else BaselineFailed
            raise failed(
                Status.RUNTIME_ERROR,
                f"the replay of the {self._whose(slot)} call failed: {describe(exc)}"[:2000],
                context_lost=self._lost(),
            ) from None

    def _call_baseline(self, ins: list, outs: list, scalars: list, copy_out: bool) -> None:
        from arena.evaluation.sides import call_status

        if self.baseline is None:
            raise RuntimeError("a call of the baseline in a process that runs none")
        try:
            with self.call_code():      # the task's own code: signals and the collector as for any side's
                self.baseline(ins, outs, scalars, copy_out=copy_out)
        except BaseException as exc:  # noqa: BLE001 - the task's code may raise anything
            raise BaselineFailed(call_status(exc), describe(exc)[:2000], context_lost=self._lost()) from None


def _player(spec: Any, name: str) -> Any:
    """A player of the records of one side (``spec``): a HIP build's device code, or Triton's
    kernels compiled from their IR in a cache of its own."""
    if spec.device_code:
        from arena.evaluation.replay.native_player import NativePlayer

        return NativePlayer(spec.device_code, spec.device_code_sha256)
    from arena.evaluation.replay.player import Player

    tmp = Path(os.environ.get("TMPDIR") or tempfile.mkdtemp(prefix="arena-replay-")) / name
    tmp.mkdir(parents=True, exist_ok=True)
    return Player(tmp, triton_cache=tmp / "triton")


def preload() -> None:
    """What the replay process imports, done while it waits for its job."""
    import torch  # noqa: F401

    import arena.evaluation.buffers  # noqa: F401
    import arena.evaluation.replay.player  # noqa: F401
    import arena.evaluation.sides  # noqa: F401


def main(argv: list[str]) -> int:
    """The replay process's main (``arena.evaluation.server.serve``)."""
    return serve(argv, ReplayProcess, preload)


if __name__ == "__main__":  # run as the package's module, not as __main__: one copy of its classes
    import sys

    from arena.evaluation.replay import process as _self

    sys.exit(_self.main(sys.argv[1:]))
