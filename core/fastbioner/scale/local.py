"""The local engine: this process parses the inputs and tags chunks one after the
other, with one :class:`~fastbioner.infer.inference.Tagger`. Needs no extra."""

from __future__ import annotations

from typing import Iterator, Sequence

from fastbioner.infer.inference import Tagger, TaggerConfig
from fastbioner.base.jobs import CancelToken
from fastbioner.scale.shards import ChunkResult, tag_chunk
from fastbioner.scale.updates import InputScan
from fastbioner.scale.work import ModelRef, parse_input, parse_failure


class LocalEngine:
    name = "local"

    def __init__(self, model: ModelRef, config: TaggerConfig):
        self.model, self.config = model, config
        self.workers = 1
        self._tagger: Tagger | None = None

    def parse(self, items: Sequence[tuple[str, str]], input_format: str | None, cancel: CancelToken
              ) -> Iterator[tuple[int, InputScan | Exception]]:
        """Each (input, spool) parsed once, in order: ``(i, scan)``, or ``(i, error)`` for a
        bad input (the others go on)."""
        for i, (path, spool) in enumerate(items):
            cancel.check()
            try:
                yield i, parse_input(path, input_format, spool, cancel)
            except Exception as exc:
                yield i, parse_failure(path, exc)

    def start(self) -> None:
        """Load the model (before the clock of the tagging stage starts)."""
        if self._tagger is None:
            self._tagger = Tagger.load(self.model.folder, self.config)

    def tag(self, chunks: Iterator[list], cancel: CancelToken) -> Iterator[ChunkResult]:
        self.start()
        for docs in chunks:
            cancel.check()
            yield tag_chunk(self._tagger, docs)

    def describe(self) -> dict:
        return self._tagger.describe() if self._tagger is not None else {}

    def close(self) -> None:
        self._tagger = None
