"""Verdicts, the JSONL records file and the reward (arena/records.py)."""

from __future__ import annotations

import json
import math

import pytest

from arena.records import (
    RECORD_VERSION,
    ConfigResult,
    SideTiming,
    Status,
    Verdict,
    append,
    dumps,
    read,
    redoable,
    reward,
)


def full_verdict(i: int = 0) -> Verdict:
    """A Verdict with every field set to a non-default value."""
    passed = ConfigResult(
        name="n4M", params={"n": 4194304, "eps": 1e-6}, status=Status.PASSED, message="ok", seeds=[11, 12],
        max_abs_err=1.5e-6, max_rel_err=2.5e-7, norm_err=3e-8,
        where={"output": "y", "index": [1, 2], "candidate": 0.5, "reference": 0.5},
        mismatch_fraction=0.0,
        baseline=SideTiming(median_us=120.5, iqr_us=2.25, n=40, events_median_us=130.0, min_us=118.0),
        candidate=SideTiming(median_us=60.25, iqr_us=1.5, n=40),
        speedup=2.0, speedup_ci=(1.9, 2.1), roofline_fraction=0.75, flags=["events_below_device_span"])
    failed = ConfigResult(name="odd", params={"n": 7}, status=Status.INCORRECT_NUMERICAL,
                          message="y: 1 of 7 elements outside", mismatch_fraction=1 / 7)
    return Verdict(
        task_id="triton2triton/axpy", category="triton2triton", split="heldout", status=Status.INCORRECT_NUMERICAL,
        candidate={"path": "/x/cand.py", "sha256": "ab" * 32, "origin": "agent-a", "language": "triton"},
        device={"kind": "cuda", "name": "H100", "arch": "sm_90", "vendor": "nvidia"},
        stage="correctness", message=f"record {i}", configs=[passed, failed], build={"cached": True},
        speedup=1.25, speedup_ci=(1.125, 1.5), roofline_fraction=0.5, flags=["x"], run_id="run-1",
        agent="agent-a", repeat=i, seeds=[1, 2, 3], versions={"torch": "2.13"},
        started_at="2026-01-01T00:00:00Z", finished_at="2026-01-01T00:01:00Z", wall_s=60.5)


def test_round_trip_keeps_every_field(tmp_path):
    path = tmp_path / "sub" / "records.jsonl"      # the folder is created
    v = full_verdict()
    append(path, v)
    [back] = list(read(path))
    assert back == v
    assert back.status is Status.INCORRECT_NUMERICAL
    assert back.configs[0].status is Status.PASSED and back.configs[1].status is Status.INCORRECT_NUMERICAL
    assert isinstance(back.configs[0].baseline, SideTiming) and back.configs[0].baseline.min_us == 118.0
    assert back.configs[0].candidate == SideTiming(60.25, 1.5, 40)
    assert back.configs[1].baseline is None
    assert back.speedup_ci == (1.125, 1.5) and isinstance(back.speedup_ci, tuple)
    assert back.configs[0].speedup_ci == (1.9, 2.1) and isinstance(back.configs[0].speedup_ci, tuple)
    assert back.record_version == RECORD_VERSION


def test_the_line_is_json_with_enum_values_and_the_reward(tmp_path):
    path = tmp_path / "r.jsonl"
    append(path, full_verdict())
    text = path.read_text()
    assert text.endswith("\n") and text.count("\n") == 1
    d = json.loads(text)
    assert d["status"] == "INCORRECT_NUMERICAL"
    assert d["configs"][0]["status"] == "PASSED"
    assert d["reward"] == -2.0
    assert d["speedup_ci"] == [1.125, 1.5]
    assert dumps(full_verdict()) == text.rstrip("\n")


def test_minimal_verdict_round_trip(tmp_path):
    path = tmp_path / "r.jsonl"
    v = Verdict("hip2hip/softmax", "hip2hip", "seen", Status.PASSED, {"path": "c.hip"}, {"kind": "cpu"})
    append(path, v)
    assert list(read(path)) == [v]


def test_unknown_keys_are_ignored_on_reading(tmp_path):
    path = tmp_path / "r.jsonl"
    d = full_verdict().to_dict()
    d["added_in_a_later_version"] = 1
    path.write_text(json.dumps(d) + "\n")
    assert list(read(path)) == [full_verdict()]


def test_records_keep_their_order(tmp_path):
    path = tmp_path / "r.jsonl"
    for i in range(5):
        append(path, full_verdict(i))
    assert [v.repeat for v in read(path)] == [0, 1, 2, 3, 4]


def test_read_of_a_missing_file_is_empty(tmp_path):
    assert list(read(tmp_path / "none.jsonl")) == []


def test_blank_lines_are_skipped(tmp_path):
    path = tmp_path / "r.jsonl"
    append(path, full_verdict(0))
    with open(path, "a") as f:
        f.write("\n")
    append(path, full_verdict(1))
    assert [v.repeat for v in read(path)] == [0, 1]


def test_torn_last_line_is_skipped_then_cut(tmp_path):
    path = tmp_path / "r.jsonl"
    append(path, full_verdict(0))
    append(path, full_verdict(1))
    whole = path.read_bytes()
    torn = dumps(full_verdict(99)).encode()[:57]          # a killed writer's partial line
    with open(path, "ab") as f:
        f.write(torn)
    assert [v.repeat for v in read(path)] == [0, 1]       # skipped on reading
    append(path, full_verdict(2))                         # cut on the next append
    assert [v.repeat for v in read(path)] == [0, 1, 2]    # no record lost
    data = path.read_bytes()
    assert data == whole + (dumps(full_verdict(2)) + "\n").encode()     # the torn bytes are gone
    assert all(json.loads(line) for line in data.decode().splitlines())


def test_a_file_holding_only_a_torn_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"task_id": "triton2t')
    assert list(read(path)) == []
    append(path, full_verdict(5))
    assert [v.repeat for v in read(path)] == [5]
    assert path.read_bytes().count(b"\n") == 1


def test_nan_and_inf_fields_can_be_recorded(tmp_path):
    path = tmp_path / "r.jsonl"
    v = full_verdict()
    v.configs[0].speedup_ci = (1.5, float("inf"))
    v.configs[1].max_rel_err = float("nan")
    append(path, v)
    [back] = list(read(path))
    assert back.configs[1].max_rel_err is None or math.isnan(back.configs[1].max_rel_err)


# -- reward ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("status, value", [
    (Status.INCORRECT_SHAPE, -2.0), (Status.INCORRECT_NUMERICAL, -2.0), (Status.NAN_INF, -2.0),
    (Status.OUTPUT_UNWRITTEN, -2.0), (Status.INPUT_MUTATED, -2.0),
    (Status.RUNTIME_ERROR, -3.0), (Status.CRASHED, -3.0),
    (Status.LOAD_ERROR, -4.0), (Status.SIGNATURE_MISMATCH, -4.0),
    (Status.COMPILE_ERROR, -5.0), (Status.COMPILE_TIMEOUT, -5.0),
    (Status.TIMEOUT, -7.0), (Status.FORBIDDEN_CALL, -6.0), (Status.INTEGRITY_VIOLATION, -6.0),
    (Status.TASK_ERROR, None), (Status.HARNESS_ERROR, None),    # not the candidate's: no reward at all
    (Status.NOT_RUNNABLE, None),
])
def test_reward_of_failures(status, value):
    assert reward(status, None) == value
    assert reward(status, 3.0) == value          # a speedup never helps a failure


def test_reward_of_a_pass_is_speedup_minus_one():
    assert reward(Status.PASSED, 1.5) == pytest.approx(0.5)
    assert reward(Status.PASSED, 0.8) == pytest.approx(-0.2)
    assert reward(Status.PASSED, 1.0) == 0.0
    assert reward(Status.PASSED, None) == 0.0


def test_verdict_reward_property():
    v = full_verdict()
    assert v.reward == -2.0
    v.status, v.speedup = Status.PASSED, 2.5
    assert v.reward == pytest.approx(1.5)
    assert v.to_dict()["reward"] == pytest.approx(1.5)


def test_every_status_has_a_kind():
    kinds = {"compile", "init", "incorrect", "runtime", "timeout", "integrity", "not_runnable", "infra", "passed",
             "agent", "service"}
    for s in Status:
        assert s.kind in kinds
        assert isinstance(reward(s, 1.0), float) if s.scored else reward(s, 1.0) is None
    assert {s.kind for s in Status} == kinds
    assert [s for s in Status if s.passed] == [Status.PASSED]
    assert Status("NAN_INF") is Status.NAN_INF and Status.NAN_INF == "NAN_INF"
    assert reward(Status.INTEGRITY_VIOLATION, None) == reward(Status.FORBIDDEN_CALL, None) == -6.0
    # the agent's run: a crash is its failure (scored), a service that did not serve it is not scored and redone
    assert Status.AGENT_FAILED.scored and not Status.AGENT_FAILED.infra and reward(Status.AGENT_FAILED, None) == -6.0
    assert not Status.AGENT_UNAVAILABLE.scored and not Status.AGENT_UNAVAILABLE.infra
    assert redoable(Status.AGENT_UNAVAILABLE, 1, 2) and not redoable(Status.AGENT_FAILED, 1, 2)


def test_the_task_s_code_running_out_of_memory_is_the_harness_s_failure():
    import torch

    from arena.evaluation.trusted.correctness import out_of_memory, task_failure

    oom = task_failure("making inputs", torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert oom.status is Status.HARNESS_ERROR and out_of_memory(oom.message)     # the retries know it
    hip = task_failure("the reference", RuntimeError("HIP error: hipErrorOutOfMemory"))
    assert hip.status is Status.HARNESS_ERROR
    bad = task_failure("the reference", ValueError("shapes do not match"))
    assert bad.status is Status.TASK_ERROR and bad.message == "the reference failed: ValueError: shapes do not match"
    assert not Status.TASK_ERROR.scored and not Status.HARNESS_ERROR.scored and not Status.NOT_RUNNABLE.scored
    assert all(s.scored for s in Status if s.kind not in ("infra", "not_runnable", "service"))


def test_a_compressed_records_file_reads_as_its_records_and_one_cut_short_up_to_the_cut(tmp_path):
    """The records kept under reports/validation are gzip files: read like a plain one; one cut
    short (a copy that stopped) gives the records before the cut."""
    import gzip

    plain = tmp_path / "r.jsonl"
    for i in range(3):
        append(plain, full_verdict(i))
    packed = tmp_path / "r.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert [v.repeat for v in read(packed)] == [0, 1, 2]
    assert [dumps(v) for v in read(packed)] == [dumps(v) for v in read(plain)]
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed.read_bytes()[:-12])         # the end of the stream lost
    assert [v.repeat for v in read(cut)] == [0, 1, 2][:len(list(read(cut)))]
    assert len(list(read(cut))) >= 2
