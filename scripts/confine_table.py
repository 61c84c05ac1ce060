"""The table of a run of the shipped kernels with the candidate's process confined: statuses
by agent and split (the solutions must pass every split, the specialised kernels seen and
not held-out), the sandbox each verdict records, the system calls the seccomp filter's
learning mode let through, and the candidate processes' device memory at their checks
against their allowance. Usage: python3 scripts/confine_table.py RECORDS [LEARNED]"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena import records  # noqa: E402
from arena.timing.stats import quantile  # noqa: E402


def main() -> int:
    vs = list(records.read(Path(sys.argv[1])))
    rows: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    wrong = []
    for v in vs:
        kind = v.agent
        rows[(kind, v.split)][v.status.value] += 1
        ok = (v.status.value == "PASSED") if kind == "solution" else \
            (v.status.value == "PASSED" if v.split == "seen" else
             v.status.value != "PASSED" if v.split == "heldout" else True)
        if not ok or v.status.infra:
            wrong.append(f"| {kind} | {v.task_id} | {v.split} | {v.status.value} | {v.message[:160]!r} |")
    print("| agent | split | verdicts | statuses |\n|---|---|---|---|")
    for (kind, split), c in sorted(rows.items()):
        print(f"| {kind} | {split} | {sum(c.values())} | " + ", ".join(f"{k} {n}" for k, n in sorted(c.items())) + " |")
    print(f"\n{len(vs)} verdicts; {len(wrong)} not as required")
    if wrong:
        print("\n| agent | task | split | status | message |\n|---|---|---|---|---|")
        print("\n".join(wrong))
    sandboxes = collections.Counter(v.build.get("sandbox", "") for v in vs)
    print("\nsandbox recorded:", dict(sandboxes))
    missing = collections.Counter(str(v.build.get("sandbox_missing")) for v in vs if v.build.get("sandbox_missing"))
    if missing:
        print("missing defences:", dict(missing))
    shares = [(float(v.phases.get("device_share") or 0), v) for v in vs if v.phases.get("device_share")]
    if shares:
        xs = sorted(s for s, _ in shares)
        top = max(shares, key=lambda t: t[0])[1]
        print(
            f"\ncandidate device memory at its checks / allowance ({len(xs)} verdicts): "
            f"median {quantile(xs, 0.5):.3f}, "
            f"90% {quantile(xs, 0.9):.3f}, most {xs[-1]:.3f} ({top.task_id} {top.split}: "
            f"{top.phases.get('device_held_gib')} of {top.phases.get('device_allowance_gib')} GiB)"
        )
    if len(sys.argv) > 2:
        learned = collections.Counter(line.split()[0] for line in Path(sys.argv[2]).read_text().splitlines() if line)
        print(
            "\nsystem calls the filter would refuse, let through in learning mode:",
            dict(learned) if learned else "none",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
