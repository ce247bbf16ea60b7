"""``transformers``, imported once, completely, before any other thread uses it.

Its lazy module is not safe to import from two threads at once: on the app's first launch
the tagging worker and another worker both reached ``from transformers import ...`` and one
got "cannot import name" from the half-imported package (the estimate of a distillation
failed so with ``PreTrainedModel``). Python runs this module's body once, and a thread that
imports it while another runs the body waits until the body is done; so every module that
imports names from transformers at its top imports this module first, and the names used
across the project are resolved here, before any of them is handed out. Importing it
imports transformers (heavy): the light paths never do.
"""

from __future__ import annotations

import importlib

transformers = importlib.import_module("transformers")
for _name in ("AutoConfig", "AutoModel", "AutoModelForTokenClassification", "AutoTokenizer",
              "PretrainedConfig", "PreTrainedModel"):
    getattr(transformers, _name)
importlib.import_module("transformers.modeling_outputs")
