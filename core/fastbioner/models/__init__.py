"""Models on disk and in memory: the manifest, folder checks, the registry, loading (the
light engine and transformers), precision modes, the shipped models, the architectures
and the encoding of words into subwords. Loading reads straight down:
registry -> loading -> modeling -> checks -> manifest -> folder."""
