"""The local engine: this process scans, reads and tags the inputs one after the
other, with one :class:`~fastbioner.inference.Tagger`. Needs no extra."""

from __future__ import annotations

from typing import Iterator, Sequence

from ..inference import Tagger, TaggerConfig
from ..jobs import CancelToken
from .shards import ChunkResult, tag_chunk
from .work import ModelRef, ShardJob, read_kept_chunks
from .updates import InputScan, scan_input


class LocalEngine:
    name = "local"

    def __init__(self, model: ModelRef, config: TaggerConfig):
        self.model, self.config = model, config
        self.workers = 1
        self._tagger: Tagger | None = None

    def scan(self, paths: Sequence[str], input_format: str | None, cancel: CancelToken
             ) -> Iterator[InputScan]:
        for path in paths:
            cancel.check()
            yield scan_input(path, input_format, cancel)

    def start(self) -> None:
        """Load the model (before the clock of the tagging stage starts)."""
        if self._tagger is None:
            self._tagger = Tagger.load(self.model.folder, self.config)

    def stream(self, jobs: Sequence[ShardJob], cancel: CancelToken
               ) -> Iterator[tuple[int, ChunkResult | None]]:
        self.start()
        for i, job in enumerate(jobs):
            for docs in read_kept_chunks(job):
                cancel.check()
                yield i, tag_chunk(self._tagger, docs)
            yield i, None

    def describe(self) -> dict:
        return self._tagger.describe() if self._tagger is not None else {}

    def close(self) -> None:
        self._tagger = None
