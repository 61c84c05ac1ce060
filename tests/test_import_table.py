"""scripts/import_table.py's rows for imports that never return: one past the timeout is killed and said to
have run past it; one the system killed within the timeout (out of memory) is said to be that, not a timeout."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "importers"


def test_an_import_killed_within_the_timeout_is_not_called_a_timeout(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    sys.modules.pop("import_table", None)
    import import_table

    text = (FIX / "kb_mse.py").read_text()
    assert "def get_inputs():\n" in text
    # the kernel's OOM killer, as the problem's first run sees it; and a problem that never ends
    killed, slow = tmp_path / "killed.py", tmp_path / "slow.py"
    killed.write_text(text.replace("def get_inputs():\n", "def get_inputs():\n    import os, signal\n"
                                                          "    os.kill(os.getpid(), signal.SIGKILL)\n"))
    slow.write_text(text.replace("def get_inputs():\n", "def get_inputs():\n    import time\n    time.sleep(600)\n"))
    rows = import_table.run_all("kernelbench", [str(killed), str(slow)], jobs=2, timeout=20)
    by = {Path(r["problem"]).name: r for r in rows}
    assert by["killed.py"]["why"].startswith("the import process was killed (SIGKILL) within the timeout"), by
    assert by["killed.py"]["seconds"] < 20
    assert by["slow.py"]["why"] == "TimeoutError: more than 20 s", by
    assert not any(r["complete"] for r in rows)
