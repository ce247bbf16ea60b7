"""The Ray engine: input files are parsed by Ray tasks (one CPU each, each writing its
input's document spool), and chunks are tagged by a pool of actors, each holding one
:class:`~fastbioner.infer.inference.Tagger` (the model loads once per actor, on a CPU or on a
GPU share). The driver reads the chunks to tag from the spools and shards, orders
results and writes shards.

Two things keep it from hanging or starving:

- actors claim a fraction of a CPU (at most ``(CPUs - 1) / workers``), so Ray always
  has a whole CPU left for the parsing tasks: actors that claim every CPU would
  starve them;
- only a few chunks per actor are in flight, so the object store holds a bounded
  amount.

The model's files travel through the object store, so a cluster needs no shared
model folder (each actor writes them to a temporary folder, loads the model and
removes the folder at once); the input files and the output folder must be at the
same path on every node (a shared file system), as Ray's parsing tasks run anywhere.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

from fastbioner.base.errors import FastBioNERError
from fastbioner.infer.inference import Tagger, TaggerConfig
from fastbioner.base.jobs import CancelToken
from fastbioner.scale.shards import ChunkResult, tag_chunk
from fastbioner.scale.updates import InputScan
from fastbioner.scale.work import ModelRef, parse_failure, parse_task

# Ray, the optional scale extra, is imported inside the methods that use it (see import_ray).


def import_ray():
    """Ray, imported when the engine starts (never at import: the module stays importable,
    and cheap to import, where the ``scale`` extra is not installed)."""
    try:
        import ray
    except ImportError:
        raise FastBioNERError('--engine ray needs Ray: pip install "fastbioner-studio[scale]"') from None
    return ray


CHUNKS_PER_WORKER = 2      # chunks in flight per actor
POLL_SECONDS = 0.5         # how often a wait looks at the cancel token


class TaggerWorker:
    """A Ray actor with one Tagger, loaded from the model files shipped to it."""

    def __init__(self, files: dict[str, bytes], config: dict):
        folder = Path(tempfile.mkdtemp(prefix="fastbioner-model-"))
        try:
            for rel, data in files.items():
                path = folder / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            self.tagger = Tagger.load(folder, TaggerConfig.from_dict(config))
        finally:
            # The weights are in memory now: no copy left behind (ray.kill runs no __del__).
            shutil.rmtree(folder, ignore_errors=True)

    def describe(self) -> dict:
        return self.tagger.describe()

    def tag(self, docs: list) -> ChunkResult:
        return tag_chunk(self.tagger, docs)


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
            try:
                ray.init(address=address, include_dashboard=False, logging_level="ERROR",
                         configure_logging=True)
            except Exception as exc:  # Ray raises bare Exceptions (a raylet that never starts, as under ulimit -v)
                with contextlib.suppress(Exception):
                    ray.shutdown()
                where = f" at {address}" if address else ""
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
                raise FastBioNERError(f"Ray could not start{where}: {first}") from None
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
        self._parse_task = ray.remote(num_cpus=1)(parse_task)

    # -- parsing --------------------------------------------------------------------

    def parse(self, items: Sequence[tuple[str, str]], input_format: str | None, cancel: CancelToken
              ) -> Iterator[tuple[int, InputScan | Exception]]:
        """Each (input, spool) parsed once by a task, results in order: ``(i, scan)`` or
        ``(i, error)`` for a bad input (the others go on)."""
        # Not cancelled when the run stops early: ray.cancel on a task that is finishing
        # at that moment can abort the driver (seen with Ray 2.60).
        refs = [self._parse_task.remote(path, input_format, spool) for path, spool in items]
        for i, ref in enumerate(refs):
            try:
                yield i, self._get(ref, cancel)
            except Exception as exc:
                yield i, parse_failure(items[i][0], exc)

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

    def tag(self, chunks: Iterator[list], cancel: CancelToken) -> Iterator[ChunkResult]:
        """The chunks tagged by the actor pool, results in the chunks' order; a few
        chunks per actor in flight."""
        from ray.util.actor_pool import ActorPool

        self._start_actors()
        pool = ActorPool(self._actors)
        in_pool, ahead = 0, CHUNKS_PER_WORKER * self.workers
        source = iter(chunks)
        exhausted = False
        while True:
            while not exhausted and in_pool < ahead:
                cancel.check()
                docs = next(source, None)
                if docs is None:
                    exhausted = True
                    break
                pool.submit(lambda actor, chunk: actor.tag.remote(chunk), docs)
                in_pool += 1
            if in_pool == 0:
                return
            yield self._next_result(pool, cancel)
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
