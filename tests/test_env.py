"""The run_kernel / finish environment (arena/env): an episode through the Python API on the
cpu backend with a Triton task under the interpreter, the exact rewards of each outcome,
what finish records, the named splits, and the MCP server answering a real MCP client."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from arena import records
from arena.env import KernelEnv
from arena.env.splits import task_ids, verified_ids
from arena.errors import ArenaError

FIX = Path(__file__).parent / "fixtures" / "tasks"
TASK = "triton2triton/axpy"
GOOD = (FIX / "triton2triton" / "axpy" / "baseline.py").read_text()
WRONG = GOOD.replace("alpha * x + y", "alpha * x - y")
SYNTAX = "def axpy(x, y, out, n, alpha:\n    pass\n"
NO_ENTRY = GOOD.replace("def axpy(", "def not_axpy(")
RAISES = GOOD + "\n\ndef axpy(x, y, out, n, alpha):\n    raise RuntimeError('boom')\n"
SLOW = "import time\n\n\ndef axpy(x, y, out, n, alpha):\n    time.sleep(60)\n"


@pytest.fixture
def env(tmp_path):
    return KernelEnv(TASK, device="cpu", tasks_dir=FIX, run_dir=tmp_path / "run")


def test_episode_rewards_and_final_record(env, tmp_path):
    prompt = env.reset()
    assert prompt["task_id"] == TASK and prompt["kernel_filename"] == "kernel.py"
    assert prompt["starting_kernel"] == GOOD
    assert prompt["reference"] == (FIX / "triton2triton" / "axpy" / "reference.py").read_text()
    assert prompt["feedback_split"] == "smoke" and [c["name"] for c in prompt["configs"]] == ["small", "odd"]
    assert "heldout" not in json.dumps(prompt).lower()

    r = env.run_kernel(SYNTAX)
    assert (r["status"], r["reward"]) == ("COMPILE_ERROR", -5.0)
    assert "kernel.py:1" in r["message"]
    r = env.run_kernel(WRONG)
    assert (r["status"], r["reward"]) == ("INCORRECT_NUMERICAL", -2.0)
    first = r["configs"][0]
    assert first["status"] == "INCORRECT_NUMERICAL" and first["first_mismatch"]["output"] == "out"
    r = env.run_kernel(GOOD)
    assert (r["status"], r["reward"], r["passed"]) == ("PASSED", 0.0, True)   # no timing on the cpu backend

    final = env.finish()
    assert final["submission"] == 2 and final["submissions"] == 3 and final["correct"] == {"smoke": True}
    recs = list(records.read(tmp_path / "run" / "records.jsonl"))
    assert [(v.agent, v.task_id, v.split, v.status.value) for v in recs] == [("env", TASK, "smoke", "PASSED")]
    kept = tmp_path / "run" / "artifacts" / "env" / TASK / "0" / "kernel.py"
    assert kept.read_text() == GOOD
    events = [json.loads(x)["event"] for x in (kept.parent / "episode.jsonl").read_text().splitlines()]
    assert events == ["run_kernel"] * 3 + ["finish"]
    # a second episode of the same task gets the next number
    assert env.reset()["episode"] == 1


def test_init_and_execution_failures(env):
    env.reset()
    assert (env.run_kernel(NO_ENTRY)["reward"]) == -4.0
    r = env.run_kernel(RAISES)
    assert (r["status"], r["reward"]) == ("RUNTIME_ERROR", -3.0)
    assert "boom" in json.dumps(r)


def test_call_time_limit_is_minus_seven(tmp_path):
    env = KernelEnv(TASK, device="cpu", tasks_dir=FIX, run_dir=tmp_path / "run", time_limit_s=12)
    env.reset()
    r = env.run_kernel(SLOW)
    assert (r["status"], r["reward"]) == ("TIMEOUT", -7.0)


def test_a_harness_failure_earns_no_reward_and_is_never_the_best(tmp_path, monkeypatch):
    import arena.env as env_module

    env = KernelEnv(TASK, device="cpu", tasks_dir=FIX, run_dir=tmp_path / "run", select="best")
    env.reset()
    wrong = env.run_kernel(WRONG)
    real = env_module.assess

    def broken(*args, **kwargs):
        raise RuntimeError("the harness broke")

    monkeypatch.setattr(env_module, "assess", broken)
    r = env.run_kernel(GOOD)
    assert (r["status"], r["reward"], r["scored"], r["passed"]) == ("HARNESS_ERROR", None, False, False)
    assert "the harness broke" in r["message"]
    monkeypatch.setattr(env_module, "assess", real)
    assert wrong["scored"] is True and wrong["reward"] == -2.0
    # best: a scored submission, even a wrong one, stands above one the harness failed on
    assert env.finish()["submission"] == 0


def test_best_submission_is_scored_when_asked(tmp_path):
    env = KernelEnv(TASK, device="cpu", tasks_dir=FIX, run_dir=tmp_path / "run", select="best")
    env.reset()
    env.run_kernel(GOOD)
    env.run_kernel(WRONG)
    final = env.finish()
    assert final["submission"] == 0 and final["correct"] == {"smoke": True}


def test_finish_without_a_submission_scores_the_starting_kernel(env):
    env.reset()
    assert env.finish()["correct"] == {"smoke": True}


def test_bad_arguments_name_the_key(tmp_path):
    with pytest.raises(ArenaError, match="select"):
        KernelEnv(TASK, device="cpu", tasks_dir=FIX, run_dir=tmp_path / "r", select="median")
    with pytest.raises(ArenaError, match="no task matches"):
        KernelEnv("triton2triton/nope", device="cpu", tasks_dir=FIX, run_dir=tmp_path / "r")


# -- splits ----------------------------------------------------------------------------------


def test_named_splits():
    assert set(task_ids("hip2hip")) == {i for i in task_ids("all") if i.startswith("hip2hip/")}
    levels = task_ids("level1") + task_ids("level2") + task_ids("level3")
    assert sorted(levels) == sorted(task_ids("all"))
    assert set(task_ids("dev")) <= set(task_ids("all")) and task_ids("dev")
    with pytest.raises(ArenaError, match="unknown split"):
        task_ids("easy")


def _record(task_id, agent, split, status, sha):
    return {"task_id": task_id, "agent": agent, "split": split, "status": status, "finished_at": "2026-01-01",
            "candidate": {"sha256": sha}, "device": {"kind": "cuda"}}


def test_verified_needs_the_same_solution_passing_on_a_gpu(tmp_path):
    root = tmp_path / "tasks"
    shutil.copytree(FIX / "triton2triton" / "axpy", root / "triton2triton" / "axpy")
    shutil.copytree(FIX / "triton2triton" / "axpy", root / "triton2triton" / "axpy2")
    for name in ("axpy", "axpy2"):
        t = root / "triton2triton" / name
        text = (t / "task.yaml").read_text()
        (t / "task.yaml").write_text(text.replace("triton2triton/axpy", f"triton2triton/{name}"))
        shutil.copy2(t / "baseline.py", t / "solution.py")
    sha = hashlib.sha256((root / "triton2triton" / "axpy" / "solution.py").read_bytes()).hexdigest()
    val = tmp_path / "validation"
    val.mkdir()
    rows = [
        _record(f"triton2triton/{n}", a, s, "PASSED", sha)
        for n in ("axpy", "axpy2")
        for a in ("baseline", "solution")
        for s in ("seen", "heldout")
    ]
    with gzip.open(val / "x-records.jsonl.gz", "wt") as f:
        f.write("\n".join(json.dumps(r) for r in rows) + "\n")
    assert verified_ids(root, val) == ["triton2triton/axpy", "triton2triton/axpy2"]
    # the solution changed since it was validated: no longer verified
    (root / "triton2triton" / "axpy2" / "solution.py").write_text(GOOD + "\n# tuned\n")
    assert verified_ids(root, val) == ["triton2triton/axpy"]
    # a cpu record does not count
    for r in rows:
        r["device"] = {"kind": "cpu"}
    (val / "x-records.jsonl.gz").unlink()
    (val / "y-records.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert verified_ids(root, val) == []


def test_a_shipped_kernel_stands_checked_only_as_it_is_at_the_configs_it_has(tmp_path):
    """A kernel file no GPU record evaluated, one whose newest check was at other configs than the task has now, one
    whose newest check failed, and a specialised kernel that passed its held-out configs each stand unvalidated, with
    why; a CPU record counts for nothing."""
    from arena.env.splits import unvalidated_kernels
    from arena.taskdef.loader import load_task

    root = tmp_path / "tasks"
    t = root / "triton2triton" / "axpy"
    shutil.copytree(FIX / "triton2triton" / "axpy", t)
    shutil.copy2(t / "baseline.py", t / "specialised.py")
    task = load_task(t, validate=False)
    sha = hashlib.sha256((t / "baseline.py").read_bytes()).hexdigest()
    val = tmp_path / "validation"
    val.mkdir()

    def write(rows):
        for f in val.iterdir():
            f.unlink()
        with gzip.open(val / "x-records.jsonl.gz", "wt") as f:
            f.write("\n".join(json.dumps(r) for r in rows) + "\n")

    def checked(agent, split, status, configs=None):
        r = _record("triton2triton/axpy", agent, split, status, sha)
        r["configs"] = [{"name": c.name, "params": dict(c.params)} for c in task.configs(split)] \
            if configs is None else configs
        return r

    good = [checked("baseline", "seen", "PASSED"), checked("baseline", "heldout", "PASSED"),
            checked("specialised", "seen", "PASSED"), checked("specialised", "heldout", "INCORRECT_NUMERICAL")]
    write(good)
    assert unvalidated_kernels(root, val) == []
    write([{**r, "device": {"kind": "cpu"}} for r in good])
    assert unvalidated_kernels(root, val) == [
        ("triton2triton/axpy", "baseline", "no GPU record evaluated it as it is"),
        ("triton2triton/axpy", "specialised", "no GPU record evaluated it as it is")]
    moved = [{"name": "old", "params": {k: v + 1 for k, v in task.configs("heldout")[0].params.items()}}]
    newer = {"finished_at": "2026-02-01"}
    write([*good, {**checked("baseline", "heldout", "PASSED", moved), **newer},
           {**checked("specialised", "heldout", "PASSED"), **newer},
           {**checked("baseline", "seen", "INCORRECT_NUMERICAL"), **newer}])
    assert unvalidated_kernels(root, val) == [
        ("triton2triton/axpy", "baseline", "INCORRECT_NUMERICAL on its seen configs at its last check"),
        ("triton2triton/axpy", "baseline", "its heldout configs changed since its last check"),
        ("triton2triton/axpy", "specialised", "PASSED on its heldout configs at its last check")]
    write(good)
    (t / "specialised.py").write_text((t / "specialised.py").read_text() + "\n# tuned\n")
    assert unvalidated_kernels(root, val) == [
        ("triton2triton/axpy", "specialised", "no GPU record evaluated it as it is")]

# -- MCP ---------------------------------------------------------------------------------------


def test_mcp_server_answers_a_client(tmp_path):
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    run = tmp_path / "run"
    tasks = tmp_path / "tasks"
    shutil.copytree(FIX, tasks)
    broken = tasks / "triton2triton" / "broken"  # a task with a missing key is not offered
    shutil.copytree(FIX / "triton2triton" / "axpy", broken)
    (broken / "task.yaml").write_text(
        (broken / "task.yaml")
        .read_text()
        .replace("triton2triton/axpy", "triton2triton/broken")
        .replace("entry: axpy\n", "")
    )

    def is_error(res) -> bool:
        return bool(getattr(res, "is_error", None) or getattr(res, "isError", None))

    async def episode():
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "arena", "--tasks-dir", str(tasks), "serve", "--mcp", "--run-dir", str(run), "--device", "cpu"],
            cwd=str(Path(__file__).resolve().parents[1]),
        )
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                tools = {t.name: t.description for t in (await s.list_tools()).tools}

                async def call(name, **args):
                    res = await s.call_tool(name, args)
                    assert not is_error(res), res
                    return json.loads(res.content[0].text)

                listed = await call("list_tasks", split="triton2triton")
                task = await call("get_task", task_id=TASK)
                wrong = await call("run_kernel", task_id=TASK, code=WRONG)
                good = await call("run_kernel", task_id=TASK, code=GOOD)
                final = await call("finish", task_id=TASK)
                errors = [
                    await s.call_tool("get_task", {"task_id": "hip2hip/nope"}),
                    await s.call_tool("get_task", {"task_id": "triton2triton/broken"}),
                    await s.call_tool("list_tasks", {"split": "nope"}),
                ]
                return tools, listed, task, wrong, good, final, errors

    tools, listed, task, wrong, good, final, errors = asyncio.run(asyncio.wait_for(episode(), 240))
    assert {"list_tasks", "get_task", "run_kernel", "finish"} <= set(tools)
    # on the cpu backend finish scores the smoke configs: its description promises nothing more
    assert "smoke configs only" in tools["finish"] and "need a GPU" in tools["finish"]
    assert "nothing is timed" in tools["run_kernel"]
    assert [t["task_id"] for t in listed["tasks"]] == [TASK]
    assert task["starting_kernel"] == GOOD
    assert (wrong["status"], wrong["reward"]) == ("INCORRECT_NUMERICAL", -2.0)
    assert (good["status"], good["reward"]) == ("PASSED", 0.0)
    assert final["correct"] == {"smoke": True}
    # user errors are MCP tool errors (isError: true) naming what is wrong
    assert all(is_error(res) for res in errors)
    texts = [res.content[0].text for res in errors]
    assert "no task matches 'hip2hip/nope'" in texts[0]
    assert str(broken / "task.yaml") in texts[1] and "entry: required key is missing" in texts[1]
    assert "unknown split 'nope'" in texts[2]
    recs = list(records.read(run / "records.jsonl"))
    assert [(v.agent, v.split, v.status.value) for v in recs] == [("mcp", "smoke", "PASSED")]


def test_mcp_descriptions_say_what_the_device_scores():
    """finish promises held-out and random shapes only where they are scored (a GPU); on the
    cpu backend it says it scores the smoke configs."""
    from arena.devices import Device
    from arena.env.mcp_server import finish_description, instructions

    cpu = Device(kind="cpu", name="x86_64", vendor="cpu", arch="x86_64")
    gpu = Device(kind="cuda", name="H100", vendor="nvidia", arch="sm_90")
    assert finish_description(gpu, "last") == (
        "End the episode: your last submission is scored on the seen, heldout "
        "and random splits (held-out and random: shapes you have not seen) "
        "and recorded."
    )
    on_cpu = finish_description(cpu, "best")
    assert on_cpu.startswith(
        "End the episode: your best submission (highest run_kernel reward) is scored on the smoke configs only"
    )
    assert "scores your submission on the seen configs and on held-out and random shapes" in instructions(gpu)
    assert "held-out and random shapes are scored on a GPU only" in instructions(cpu)
    assert "shapes you have not seen" not in instructions(cpu)


def test_every_shipped_kernel_was_run_on_a_gpu():
    """Each committed baseline, solution and specialised file (and torch2hip reference) is, byte
    for byte, one that a GPU validation record under reports/validation/ evaluated, and the newest
    such record of each split was at the task's seen and held-out configs as they are and passed
    (a specialised kernel failed its held-out configs)."""
    from arena.env.splits import unvalidated_kernels

    assert unvalidated_kernels() == []
