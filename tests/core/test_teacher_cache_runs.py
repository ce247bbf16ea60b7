"""The teacher cache in distillation runs on tiny random models: memory, disk and
shared caches give what the live teacher gives, a shared cache is read by later runs,
a build stopped half way is resumed, a second run builds privately, and a cache the
disk cannot hold is refused before it is written."""

import pytest

from fastbioner.train.distill.runner import distill
from fastbioner.base.jobs import Cancelled, CancelToken
from tests.core.distill_setup import config, fresh_registry, registry_leftovers

pytestmark = pytest.mark.usefixtures("one_thread")


def _first_step_losses(trained, tmp_path, name, **kw):
    registry = fresh_registry(trained, tmp_path / name)
    _, bio = trained
    events = []
    distill(config(bio, epochs=1, dev=False, **kw), name, registry=registry, on_event=events.append)
    return next(e.losses for e in events if e.stage == "distill" and e.losses), registry


def test_teacher_cache_gives_what_the_live_teacher_gives(trained, tmp_path):
    live, _ = _first_step_losses(trained, tmp_path, "live", teacher_cache="none")
    memory, _ = _first_step_losses(trained, tmp_path, "memory", teacher_cache="memory")
    disk, registry = _first_step_losses(trained, tmp_path, "disk", teacher_cache="disk")
    assert live.keys() == memory.keys() == disk.keys() >= {"soft", "hidden", "attention", "gold"}
    for k in live:  # the cache keeps half precision
        assert memory[k] == pytest.approx(live[k], rel=2e-2, abs=1e-4)
        assert disk[k] == memory[k]
    cache = registry.get("disk").manifest.training["teacher_cache"]
    assert cache["mode"] == "disk" and cache["bytes"] > 0 and "build_seconds" in cache


def _shared_cache_files(registry):
    from fastbioner.train.distill.teacher_cache import SHARED_CACHE_FOLDER

    root = registry.root / SHARED_CACHE_FOLDER
    return sorted(p.name for p in root.glob("*/*")) if root.exists() else []


def test_a_shared_teacher_cache_is_read_by_later_runs_instead_of_running_the_teacher(trained, tmp_path):
    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    runs = {}
    for name, method in (("first", "fastbioner"), ("again", "fastbioner"), ("logits-only", "hinton")):
        events = []
        distill(config(bio, method=method, epochs=1, dev=False, teacher_cache="shared"), name,
                registry=registry, on_event=events.append)
        runs[name] = events
    losses = {n: next(e.losses for e in ev if e.stage == "distill" and e.losses) for n, ev in runs.items()}
    memory, _ = _first_step_losses(trained, tmp_path, "memory", teacher_cache="memory")
    assert losses["again"] == losses["first"]
    for k in memory:  # the same half-precision values as a cache of the run's own
        assert losses["first"][k] == pytest.approx(memory[k], rel=1e-5, abs=1e-7)
    # Only the first run ran the teacher over the data; the others read its files
    # (hinton reads only the logits).
    assert [any(e.stage == "teacher-cache" for e in ev) for ev in runs.values()] == [True, False, False]
    info = [registry.get(n).manifest.training["teacher_cache"] for n in runs]
    assert [i.get("reused", False) for i in info] == [False, True, True]
    assert info[0]["mode"] == "shared" and info[0]["key"] == info[1]["key"] == info[2]["key"]
    files = _shared_cache_files(registry)
    assert "logits.f16" in files and "made-from.json" in files
    assert any(f.startswith("hidden") for f in files) and any(f.startswith("attention") for f in files)
    assert not [f for f in files if f.endswith(".part")]


def _cancel_while_caching(cfg, registry):
    """Run ``cfg`` and cancel it once the teacher's pass has cached its first batch."""
    token = CancelToken()

    def on_event(e):
        if e.stage == "teacher-cache" and e.step:
            token.cancel()

    with pytest.raises(Cancelled):
        distill(cfg, "s", registry=registry, on_event=on_event, cancel=token)


def test_a_cancelled_shared_cache_build_is_resumed_by_the_next_run(trained, tmp_path):
    """A session's end or a cancel in the middle of the teacher's pass: no field is
    left looking whole, and the next run caches only the windows still missing,
    ending with the same files as an uninterrupted build."""
    import json

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    # Batches of 2 windows, so the build is cancelled with batches still to run.
    cfg = config(bio, epochs=1, dev=False, teacher_cache="shared", t={"eval_batch_size": 2})
    _cancel_while_caching(cfg, registry)
    files = _shared_cache_files(registry)
    assert [f for f in files if f.endswith(".f16")] == []          # nothing looks whole
    parts = [f for f in files if f.endswith(".part")]
    assert "logits.f16.part" in " ".join(parts) and ".progress.json" in files
    (folder,) = (registry.root / ".teacher-cache-shared").iterdir()
    done = json.loads((folder / ".progress.json").read_text())["windows_done"]
    assert set(done.values()) == {2} and len(done) == len(parts)     # one batch of 2, every field
    assert [n for n in registry_leftovers(registry) if n.startswith(".staging")] == []
    events = []
    distill(cfg, "s", registry=registry, on_event=events.append)
    caching = [e for e in events if e.stage == "teacher-cache"]
    assert "resumed after 2 windows" in (caching[0].message or "")
    assert registry.get("s").manifest.training["teacher_cache"].get("reused") is None
    # An uninterrupted build elsewhere: the same bytes in every field.
    whole = fresh_registry(trained, tmp_path / "whole")
    full = []
    distill(cfg, "s", registry=whole, on_event=full.append)
    assert caching[-1].total < max(e.total or 0 for e in full if e.stage == "teacher-cache")
    (other,) = (whole.root / ".teacher-cache-shared").iterdir()
    fields = sorted(p.name for p in other.glob("*.f16"))
    assert fields and fields == sorted(p.name for p in folder.glob("*.f16"))
    for name in fields:
        assert (folder / name).read_bytes() == (other / name).read_bytes(), name
    assert not list(folder.glob("*.part")) and not (folder / ".progress.json").exists()


def test_a_teacher_cache_the_disk_cannot_hold_is_refused_before_it_is_written(trained, tmp_path, monkeypatch):
    """A memory-mapped cache that meets a full disk kills the run with a bus error (and
    the app with it): the run says so first, in one line, and keeps what an earlier
    build cached for when space is freed."""
    import shutil
    from collections import namedtuple

    from fastbioner.base.errors import DiskSpaceError

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    # An earlier hinton run (logits only) stopped half way; this run's method reads
    # hidden states and attention too, which are not there yet.
    cfg = config(bio, epochs=1, dev=False, teacher_cache="shared", t={"eval_batch_size": 2})
    _cancel_while_caching(config(bio, method="hinton", epochs=1, dev=False, teacher_cache="shared",
                                 t={"eval_batch_size": 2}), registry)
    parts_before = sorted(f for f in _shared_cache_files(registry) if f.endswith(".part"))
    assert parts_before == [".logits.f16.part"]

    usage = namedtuple("usage", "total used free")
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(2**40, 2**40 - 2**20, 2**20))  # 1 MiB free
    for c in (cfg, config(bio, epochs=1, dev=False, teacher_cache="disk")):
        with pytest.raises(DiskSpaceError) as refused:
            distill(c, "s", registry=registry)
        assert "GiB are free" in str(refused.value) and "--teacher-cache none" in str(refused.value)
        assert not registry.exists("s")
    assert sorted(f for f in _shared_cache_files(registry) if f.endswith(".part")) == parts_before
    assert [n for n in registry_leftovers(registry) if n.startswith((".staging", ".teacher-cache-"))
            and n != ".teacher-cache-shared"] == []

    monkeypatch.setattr(shutil, "disk_usage", real)
    distill(cfg, "s", registry=registry)
    files = _shared_cache_files(registry)
    assert "logits.f16" in files and any(f.startswith("hidden") for f in files)
    assert not [f for f in files if f.endswith(".part")]


def test_a_second_run_building_the_same_shared_cache_builds_privately(trained, tmp_path):
    """The build lock is held: a run starting meanwhile neither reads nor writes the
    resumable parts, and still ends with a whole cache."""
    import filelock

    from fastbioner.train.distill.teacher_cache import SHARED_CACHE_FOLDER

    registry = fresh_registry(trained, tmp_path)
    _, bio = trained
    cfg = config(bio, epochs=1, dev=False, teacher_cache="shared")
    seen = []

    def hold_the_lock_once_the_folder_exists(e):
        if e.stage == "teacher-cache" and not seen:
            (folder,) = (registry.root / SHARED_CACHE_FOLDER).iterdir()
            seen.append(sorted(p.name for p in folder.iterdir()))

    root = registry.root / SHARED_CACHE_FOLDER
    # Another holder takes the build lock of every cache folder just before the run
    # tries it (a real lock on the same file, as another process's would be).
    real_lock, holders = filelock.FileLock, []

    def another_run_holds_it(path, *args, **kwargs):
        if str(path).endswith(".build.lock"):
            holders.append(real_lock(path))
            holders[-1].acquire()
        return real_lock(path, *args, **kwargs)

    filelock.FileLock = another_run_holds_it
    try:
        distill(cfg, "s", registry=registry, on_event=hold_the_lock_once_the_folder_exists)
    finally:
        filelock.FileLock = real_lock
        for holder in holders:
            holder.release()
    assert holders  # the run did ask for the build lock
    assert not [n for n in seen[0] if n.endswith(".f16.part") and n.count(".") == 3]  # no fixed-name part
    (folder,) = root.iterdir()
    assert (folder / "logits.f16").is_file() and not list(folder.glob("*.part"))
