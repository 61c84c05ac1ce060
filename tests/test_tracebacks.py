"""The candidate's traceback (arena.evaluation.tracebacks): failures of its code name the lines of its own
file, in the record, in ``arena eval``'s output and in the feedback text; the harness's frames
are left out; what the candidate process sends is bounded on arrival and decides no status."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from arena.evaluation.parent import Candidate, evaluate
from arena.evaluation.tracebacks import CODE_CHARS, MAX_ENTRIES, OMITTED, bounded, candidate_traceback, describe, render
from arena.records import ConfigResult, Status, TraceEntry, Verdict, dumps

FIX = Path(__file__).parent / "fixtures"
CANDS = FIX / "candidates"


def line_of(path: Path, text: str) -> int:
    """The number of the line of ``path`` that holds ``text``."""
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def _one(task, path, device):
    [v] = evaluate(task, Candidate(task, path, origin="test"), ["smoke"], device)
    return v


@pytest.fixture(scope="module")
def helper_verdict(axpy, cpu):
    return _one(axpy, CANDS / "raises_in_helper.py", cpu)


def _own(entries):
    return [e for e in entries if not e.elsewhere]


def test_runtime_error_names_the_helper_line_and_no_harness_frame(helper_verdict):
    v = helper_verdict
    path = CANDS / "raises_in_helper.py"
    assert v.status is Status.RUNTIME_ERROR, v.message
    assert v.message.startswith("IndexError")
    for c in v.configs:                                  # every config failed in its call: each has its traceback
        assert c.status is Status.RUNTIME_ERROR
        own = _own(c.traceback)
        assert [(e.file, e.line, e.function) for e in own] == [
            ("raises_in_helper.py", line_of(path, "block = _block_for(n)"), "axpy"),
            ("raises_in_helper.py", line_of(path, "return sizes[n // 256]"), "_block_for")]
        assert own[-1].code == "return sizes[n // 256]  # IndexError for n >= 768"
        names = [e.file or e.elsewhere for e in c.traceback]
        assert all("arena" not in n and "/" not in n for n in names), names   # no harness frame, no path


def test_the_record_keeps_the_traceback_and_older_records_load(helper_verdict):
    back = Verdict.from_dict(json.loads(dumps(helper_verdict)))
    assert back.configs[0].traceback == helper_verdict.configs[0].traceback
    assert isinstance(back.configs[0].traceback[0], TraceEntry)
    old = json.loads(dumps(helper_verdict))
    for c in old["configs"]:
        del c["traceback"]                                # a record written before the field existed
    assert Verdict.from_dict(old).configs[0].traceback == []
    assert ConfigResult.from_dict({"name": "a", "params": {}, "status": "PASSED"}).traceback == []


def test_feedback_and_eval_output_show_the_traceback(helper_verdict, capsys):
    from arena.cli import print_configs
    from arena.feedback import render as render_feedback
    from arena.feedback import summarize

    path = CANDS / "raises_in_helper.py"
    summary = summarize(helper_verdict)
    json.dumps(summary)                                   # the summary stays JSON
    assert summary["configs"][0]["traceback"][-1]["line"] == line_of(path, "return sizes[n // 256]")
    text = render_feedback(summary)
    where = f"raises_in_helper.py:{line_of(path, 'return sizes[n // 256]')} in _block_for"
    assert where in text and "return sizes[n // 256]" in text
    assert text.count(where) == 1                         # the same traceback of every config, printed once
    print_configs(helper_verdict)
    assert where in capsys.readouterr().out


def test_import_time_error_names_its_line(axpy, cpu):
    path = CANDS / "import_error.py"
    v = _one(axpy, path, cpu)
    assert v.status is Status.LOAD_ERROR
    [entry] = _own(v.configs[0].traceback)
    assert (entry.file, entry.line, entry.function) == ("import_error.py",
                                                        line_of(path, "import no_such_module_for_arena_tests"),
                                                        "<module>")


def test_kernel_error_under_the_interpreter_points_at_the_kernel_line(axpy, cpu):
    path = CANDS / "triton_compile_error.py"
    v = _one(axpy, path, cpu)
    assert v.status is Status.COMPILE_ERROR
    tb = v.configs[0].traceback
    own = _own(tb)
    assert own[0].function == "axpy" and own[0].line == line_of(path, "_k[(triton.cdiv(n, 1024),)]")
    assert (own[-1].function, own[-1].line) == ("_k", line_of(path, "undefined_name"))
    assert any(e.elsewhere == "triton" for e in tb)       # the launch's frames in Triton, one entry


def test_a_huge_message_and_line_are_cut(axpy, cpu, tmp_path):
    path = tmp_path / "huge.py"
    path.write_text("def axpy(x, y, out, n, alpha):\n"
                    f"    raise ValueError('x' * 1_000_000 + '{'y' * 5000}')\n")
    v = _one(axpy, path, cpu)
    assert v.status is Status.RUNTIME_ERROR
    c = v.configs[0]
    assert len(c.message) <= 4000 and len(v.message) <= 4000
    [entry] = c.traceback
    assert entry.line == 2 and len(entry.code) <= CODE_CHARS and entry.code.endswith("…")
    assert len(dumps(v)) < 40_000


def test_compile_error_of_the_triton_front_end_points_at_the_kernel_lines(tmp_path):
    """A GPU compiles a kernel on its first launch: Triton's CompilationError carries the kernel's
    source and the node's line within it. Its front end runs here without a GPU."""
    import triton
    from triton.backends.compiler import GPUTarget

    from arena.evaluation.sides import import_file

    path = tmp_path / "kernel.py"
    path.write_text(
        "import triton\nimport triton.language as tl\n\n\n"
        "@triton.jit\n"
        "def _helper(x):\n"
        "    return x + undefined_name\n\n\n"
        "@triton.jit\n"
        "def _k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(out_ptr + offs, _helper(tl.load(x_ptr + offs)), mask=offs < n)\n")
    module = import_file(path, "arena_test_compile_error")
    src = triton.compiler.ASTSource(fn=module._k, signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                                                             "BLOCK": "constexpr"}, constexprs={"BLOCK": 128})
    with pytest.raises(Exception) as info:
        triton.compile(src, target=GPUTarget("cuda", 90, 32))
    tb = candidate_traceback(info.value, {str(path)}, "kernel.py")
    own = [(e.file, e.line, e.function, e.code) for e in _own(tb)]
    assert own == [("kernel.py", line_of(path, "_helper(tl.load"), "_k",
                    "tl.store(out_ptr + offs, _helper(tl.load(x_ptr + offs)), mask=offs < n)"),
                   ("kernel.py", line_of(path, "undefined_name"), "_helper", "return x + undefined_name")]
    assert "^" in str(info.value)                          # Triton's own pointer stays in the message
    message = describe(info.value)                         # ... and the helper's error joins the call's
    assert message.startswith("CompilationError: at ") and "NameError" in message.splitlines()[-1]


def test_recursion_is_one_counted_entry():
    path = Path(__file__)

    def down(k):
        return down(k + 1) if k < 50 else [][0]

    with pytest.raises(IndexError) as info:
        down(0)
    tb = candidate_traceback(info.value, {str(path)}, "t.py")
    assert len(tb) <= MAX_ENTRIES
    frames = [e for e in tb if e.function == "down"]
    assert sum(e.frames for e in frames) == 51


def test_bounded_treats_what_the_candidate_says_as_data():
    hostile = [TraceEntry(file="\x1b[31mk.py\n" + "z" * 10_000, line=-5, function="[bold]f\r", code="c" * 10_000,
                          frames=-3)] + [TraceEntry(file="k.py", line=10**12, frames=10**12)] * 5000
    kept = bounded(hostile)
    assert len(kept) == MAX_ENTRIES
    assert any(e.elsewhere == OMITTED for e in kept)
    for e in kept:
        assert all(s.isprintable() for s in (e.file, e.function, e.code, e.elsewhere))
        assert len(e.file) <= 120 and len(e.code) <= CODE_CHARS and 0 <= e.line <= 10**7 and 1 <= e.frames <= 10**7
    lines = render(kept)
    assert all("\n" not in ln and "\x1b" not in ln for ln in lines)


def test_the_trusted_side_bounds_a_failure_and_keeps_its_status():
    """A failure reply crosses the trust boundary bounded; its status is the reply's own."""
    from arena.evaluation.gpulock import GpuLock
    from arena.evaluation.protocol import CANDIDATE_REPLIES, FailReply, decode, encode
    from arena.evaluation.trusted.calls import CandidateHandle
    from arena.evaluation.trusted.correctness import GateFailure

    reply = decode(encode(FailReply(status=Status.RUNTIME_ERROR, message="m" * 1_000_000,
                                    traceback=[TraceEntry(file="k.py\x07", line=3, code="x" * 9000)] * 500)),
                   CANDIDATE_REPLIES)
    peer = SimpleNamespace(request=lambda frame, deadline, notice: reply)
    ev = SimpleNamespace(deadline=None, stage_name="correctness", stage_limit=1.0,
                         gpu_lock=GpuLock(None, None))     # no lock (the cpu's)
    with pytest.raises(GateFailure) as info:
        CandidateHandle(ev, peer).call(1)
    exc = info.value
    assert exc.status is Status.RUNTIME_ERROR and not exc.fatal
    assert len(exc.message) <= 4000
    assert len(exc.traceback) == MAX_ENTRIES and all(e.file in ("k.py?", "") for e in exc.traceback)
    assert all(len(e.code) <= CODE_CHARS for e in exc.traceback)


def test_the_transcript_page_says_why_a_verdict_did_not_pass_with_the_candidate_s_traceback(tmp_path):
    """An agent's transcript page (``arena transcript``) shows, for each verdict that did not
    pass, its message and its first failing config's traceback in the candidate's file."""
    from arena import records
    from arena.records import ConfigResult, Status, TraceEntry, Verdict
    from arena.transcript import render_transcript

    run = tmp_path / "run"
    art = run / "artifacts" / "someagent" / "triton2triton" / "axpy" / "0"
    art.mkdir(parents=True)
    (art / "transcript.raw").write_text("the agent's output\n")
    tb = [TraceEntry(file="kernel.py", line=12, function="axpy", code="raise ValueError('bad <n>')"),
          TraceEntry(elsewhere="triton", frames=5)]
    for split, status, cfgs in (
            ("seen", Status.PASSED, [ConfigResult("c1", {"n": 1}, Status.PASSED)]),
            ("heldout", Status.RUNTIME_ERROR,
             [ConfigResult("c1", {"n": 1}, Status.PASSED),
              ConfigResult("c2", {"n": 3}, Status.RUNTIME_ERROR, message="ValueError: bad <n>", traceback=tb)])):
        records.append(run / "records.jsonl", Verdict(
            task_id="triton2triton/axpy", category="triton2triton", split=split, status=status, candidate={},
            device={"kind": "cpu", "name": "test"}, configs=cfgs, agent="someagent", run_id="run",
            message="" if status is Status.PASSED else "1 of 2 configs failed"))
    page = render_transcript(art)
    why = page[page.index("Why it did not pass"):page.index("Transcript")]
    assert "heldout: RUNTIME_ERROR" in why and "seen:" not in why
    assert "config c2: ValueError: bad &lt;n&gt;" in why                  # escaped
    assert "kernel.py:12 in axpy" in why and "5 frames in triton" in why


@pytest.mark.parametrize("harness", [True, False])
def test_a_failure_is_the_task_baselines_only_when_the_replay_process_says_so(harness):
    """The replay process runs the task's baseline beside the candidate's replays, so its
    failure reply says whose the failure is; that word is believed only from the replay
    process, which runs none of the candidate's code. From the candidate's own process it
    changes nothing: a candidate cannot pass its failure off as the task's."""
    from arena.evaluation.gpulock import GpuLock
    from arena.evaluation.protocol import CANDIDATE_REPLIES, FailReply, decode, encode
    from arena.evaluation.trusted.calls import CandidateHandle
    from arena.evaluation.trusted.correctness import GateFailure

    reply = decode(encode(FailReply(status=Status.RUNTIME_ERROR, message="division by zero", baseline=True)),
                   CANDIDATE_REPLIES)
    peer = SimpleNamespace(request=lambda frame, deadline, notice: reply)
    ev = SimpleNamespace(deadline=None, stage_name="performance", stage_limit=1.0, gpu_lock=GpuLock(None, None))
    with pytest.raises(GateFailure) as info:
        CandidateHandle(ev, peer, harness=harness).call(1)
    if harness:
        assert info.value.status is Status.TASK_ERROR and not info.value.fatal
        assert info.value.message == "the task's baseline failed: division by zero"
    else:
        assert info.value.status is Status.RUNTIME_ERROR and info.value.message == "division by zero"
