"""The typed frames between the processes of an evaluation (arena.protocol): every frame
survives its codec, and what the protocol does not allow is refused, above all a candidate
process that claims a pass or a fault that is not its own."""

from __future__ import annotations

import json

import pytest

from arena.protocol import (CANDIDATE_REPLIES, CANDIDATE_STATUSES, REPORTS, REQUESTS, CandidateSpec, CorrectnessFrame,
                            CorrectnessResult, FailReply, MapRequest, PerformanceFrame, PerformanceResult,
                            ProtocolError, SessionReply, SetupRequest, StepSample, decode, dumps, encode, loads)
from arena.records import Status


def test_frames_round_trip_with_their_types():
    frames = [
        SetupRequest(candidate=CandidateSpec(language="triton", path="/k.py", entry="axpy", n_inputs=2, n_outputs=1,
                                             scalar_types=["int64", "float32"]), sandbox={"hide": ["/t"]}),
        MapRequest(slot=3, handle="{}", scalars=[2**40 + 1, 0.5]),
        CorrectnessFrame(split="seen", config="a", result=CorrectnessResult(
            status=Status.NAN_INF, seeds=[1, 2], where={"output": "y", "index": [3]}, max_abs_err=None)),
        PerformanceFrame(split="seen", config="a", result=PerformanceResult(
            status=Status.PASSED, spans_us={"baseline": [1.0, 2.5]}, timers={"baseline": "events"},
            incidental_share=0.02)),
        SessionReply(samples=[StepSample(span_us=3.0, events_us=4.0, activities={"k": 2.5})], warnings=["0: w"]),
        FailReply(status=Status.RUNTIME_ERROR, message="boom", context_lost=True),
    ]
    for f in frames:
        back = loads(dumps(f))
        assert back == f and type(back) is type(f)
    # integers stay integers (an int64 scalar past 2**53), statuses are the enum
    assert loads(dumps(frames[1])).scalars[0] == 2**40 + 1
    assert loads(dumps(frames[2])).result.status is Status.NAN_INF


def test_every_frame_type_is_in_exactly_one_direction():
    kinds = [set(REPORTS), set(REQUESTS), set(CANDIDATE_REPLIES)]
    for i, a in enumerate(kinds):
        for b in kinds[i + 1:]:
            assert not a & b


@pytest.mark.parametrize("raw, why", [
    ({"type": "nope"}, "unknown frame type"),
    ({"slot": 1}, "string 'type'"),
    ({"type": "map", "slot": 1, "handle": "h", "extra": 1}, "unknown fields"),
    ({"type": "map", "handle": "h"}, "missing field"),
    ({"type": "map", "slot": "1", "handle": "h"}, "expected an integer"),
    ({"type": "map", "slot": True, "handle": "h"}, "expected an integer"),
    ({"type": "map", "slot": 1, "handle": "h", "scalars": ["x"]}, "expected a number"),
])
def test_malformed_frames_are_refused(raw, why):
    with pytest.raises(ProtocolError, match=why):
        decode(raw)


@pytest.mark.parametrize("status", sorted({s.value for s in Status} - {s.value for s in CANDIDATE_STATUSES}))
def test_the_candidate_process_can_only_report_its_own_failures(status):
    """No pass, no timeout it was not given, no harness or task fault: those are the trusted
    process's to say."""
    raw = {"type": "fail", "status": status, "message": "m"}
    with pytest.raises(ProtocolError, match="may not carry"):
        decode(raw, CANDIDATE_REPLIES)


def test_a_candidate_process_frame_of_another_direction_is_refused():
    frame = encode(CorrectnessFrame(split="s", config="c", result=CorrectnessResult(status=Status.PASSED)))
    with pytest.raises(ProtocolError, match="not expected"):
        decode(frame, CANDIDATE_REPLIES)
    with pytest.raises(ProtocolError, match="not JSON"):
        loads(b"{not json", CANDIDATE_REPLIES)
    assert decode(json.loads(json.dumps(frame)), REPORTS).result.status is Status.PASSED
