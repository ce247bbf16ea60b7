"""The Ray engine: input files are scanned and read by Ray tasks (one CPU each), and
chunks are tagged by a pool of actors, each holding one
:class:`~fastbioner.inference.Tagger` (the model loads once per actor, on a CPU or on a
GPU share). The driver only orders results and writes shards.

Two things keep it from hanging or starving:

- actors claim a fraction of a CPU (at most ``(CPUs - 1) / workers``), so Ray always
  has a whole CPU left for the reading tasks that feed them: actors that claim every
  CPU wait for chunks no task can be scheduled to read;
- only a few files are read ahead of the one being tagged, and only a few chunks per
  actor are in flight, so the object store holds a bounded amount.

The model's files travel through the object store, so a cluster needs no shared
model folder; the input files must be readable at the same path on every node (a
shared file system), as Ray's reading tasks run anywhere.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import deque
from pathlib import Path
from typing import Iterator, Sequence

from ..errors import FastBioNERError
from ..inference import TaggerConfig
from ..jobs import CancelToken
from .shards import ChunkResult
from .updates import InputScan
from .work import ModelRef, ShardJob, read_task, scan_task


def import_ray():
    """Ray, imported when the engine starts (never at import: the module stays importable,
    and cheap to import, where the ``scale`` extra is not installed)."""
    try:
        import ray
    except ImportError:
        raise FastBioNERError('--engine ray needs Ray: pip install "fastbioner-studio[scale]"') from None
    return ray


READ_AHEAD_FILES = 2       # files read ahead of the one being tagged
CHUNKS_PER_WORKER = 2      # chunks in flight per actor
POLL_SECONDS = 0.5         # how often a wait looks at the cancel token


class TaggerWorker:
    """A Ray actor with one Tagger, loaded from the model files shipped to it."""

    def __init__(self, files: dict[str, bytes], config: dict):
        from ..inference import Tagger

        self._folder = Path(tempfile.mkdtemp(prefix="fastbioner-model-"))
        for rel, data in files.items():
            path = self._folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        self.tagger = Tagger.load(self._folder, TaggerConfig.from_dict(config))

    def describe(self) -> dict:
        return self.tagger.describe()

    def tag(self, docs: list) -> ChunkResult:
        from .shards import tag_chunk

        return tag_chunk(self.tagger, docs)

    def __del__(self) -> None:
        shutil.rmtree(getattr(self, "_folder", ""), ignore_errors=True)


def _unwrap(exc: Exception) -> Exception:
    """A task's own error (bad input: one line naming the file), not Ray's wrapper."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, FastBioNERError) else exc


class RayEngine:
    name = "ray"

    def __init__(self, model: ModelRef, config: TaggerConfig, *, address: str | None = None,
                 workers: int | None = None, gpus_per_worker: float = 0.0):
        ray = import_ray()
        self.model, self.config = model, config
        self._started_ray = False
        if not ray.is_initialized():
            # Workers import fastbioner themselves: on a cluster it must be installed there.
            ray.init(address=address, include_dashboard=False, logging_level="ERROR",
                     configure_logging=True)
            self._started_ray = True
        resources = ray.cluster_resources()
        cpus = float(resources.get("CPU", 1))
        gpus = float(resources.get("GPU", 0))
        if gpus_per_worker > 0 and gpus < gpus_per_worker:
            raise FastBioNERError(f"--gpus-per-worker {gpus_per_worker:g}: the Ray cluster has {gpus:g} GPU(s)")
        if workers is None:
            workers = int(gpus // gpus_per_worker) if gpus_per_worker > 0 else max(1, int(cpus) - 1)
        self.workers = max(1, workers)
        self.gpus_per_worker = gpus_per_worker
        # Fractional CPUs: a whole CPU always stays free for the reading tasks.
        self.cpus_per_worker = max(0.05, min(1.0, (cpus - 1) / self.workers)) if cpus > 1 else 0.25
        self._actors: list = []
        self._scan_task = ray.remote(num_cpus=1)(scan_task)
        self._read_task = ray.remote(num_cpus=1, num_returns="streaming")(read_task)

    # -- scanning -------------------------------------------------------------------

    def scan(self, paths: Sequence[str], input_format: str | None, cancel: CancelToken
             ) -> Iterator[InputScan]:
        # Not cancelled when the run stops early: a scan is short, and ray.cancel on a
        # task that is finishing at that moment can abort the driver (seen with Ray 2.60).
        refs = [self._scan_task.remote(p, input_format) for p in paths]
        for ref in refs:
            yield self._get(ref, cancel)

    def _get(self, ref, cancel: CancelToken):
        import ray
        from ray.exceptions import RayTaskError

        while True:
            ready, _ = ray.wait([ref], timeout=POLL_SECONDS)
            if ready:
                try:
                    return ray.get(ref)
                except RayTaskError as exc:
                    raise _unwrap(exc) from None
            cancel.check()

    # -- tagging --------------------------------------------------------------------

    def start(self) -> None:
        """Start the actors and wait until each has loaded the model (so the tagging
        stage's clock measures tagging, not start-up)."""
        import ray

        self._start_actors()
        ray.get([a.describe.remote() for a in self._actors])

    def _start_actors(self) -> None:
        import ray

        if self._actors:
            return
        files = ray.put(self.model.files())
        config = self.config.to_dict()
        if config.get("threads") is None:
            config["threads"] = max(1, int(self.cpus_per_worker))
        actor = ray.remote(TaggerWorker).options(num_cpus=self.cpus_per_worker, num_gpus=self.gpus_per_worker)
        self._actors = [actor.remote(files, config) for _ in range(self.workers)]

    def stream(self, jobs: Sequence[ShardJob], cancel: CancelToken
               ) -> Iterator[tuple[int, ChunkResult | None]]:
        """Each job's tagged chunks in order, then ``(job, None)``; jobs in order."""
        from ray.util.actor_pool import ActorPool

        self._start_actors()
        pool = ActorPool(self._actors)
        readers: dict[int, object] = {}

        def reader(i: int):
            for j in range(i, min(len(jobs), i + 1 + READ_AHEAD_FILES)):
                if j not in readers and j >= i:
                    readers[j] = self._read_task.remote(jobs[j])
            return readers.pop(i)

        def submissions() -> Iterator[tuple[int, object | None]]:
            for i in range(len(jobs)):
                for ref in reader(i):
                    yield i, ref
                yield i, None

        order: deque[tuple[int, bool]] = deque()
        in_pool, ahead = 0, CHUNKS_PER_WORKER * self.workers
        source = submissions()
        exhausted = False
        while True:
            while not exhausted and in_pool < ahead:
                cancel.check()
                try:
                    i, ref = next(source)
                except StopIteration:
                    exhausted = True
                    break
                order.append((i, ref is not None))
                if ref is not None:
                    pool.submit(lambda actor, chunk: actor.tag.remote(chunk), ref)
                    in_pool += 1
            if not order:
                return
            i, has_chunk = order.popleft()
            if not has_chunk:
                yield i, None
                continue
            yield i, self._next_result(pool, cancel)
            in_pool -= 1

    def _next_result(self, pool, cancel: CancelToken) -> ChunkResult:
        from ray.exceptions import RayTaskError

        while True:
            try:
                return pool.get_next(timeout=POLL_SECONDS)
            except TimeoutError:
                cancel.check()
            except RayTaskError as exc:
                raise _unwrap(exc) from None

    def describe(self) -> dict:
        import ray

        return ray.get(self._actors[0].describe.remote()) if self._actors else {}

    def close(self) -> None:
        import ray

        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False
