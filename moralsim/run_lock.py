"""One writer per run folder: a second run into a folder that is being written is refused.

Two runs started at once with the same name would each append every dialogue to the same
dialogues.jsonl. The first run holds an exclusive lock on `<run>/.lock` until it ends (the OS
drops it if the process dies, so a crash never leaves the folder locked); the second gets a
one-line error naming the folder and the holder's pid. A run refused before it wrote anything
leaves no folder behind.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class RunFolderBusy(RuntimeError):
    """Another process is writing this run folder."""


@contextmanager
def run_folder_lock(run_dir: Path) -> Iterator[None]:
    created = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / ".lock"
    with path.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise RunFolderBusy(
                f"{run_dir} is being written by another moralsim run (pid {holder}); wait for it "
                "to finish or choose another --name"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            if created and [p.name for p in run_dir.iterdir()] == [".lock"]:
                path.unlink()  # a run refused before writing anything leaves no folder
                run_dir.rmdir()
