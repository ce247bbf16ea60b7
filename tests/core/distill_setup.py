"""The tiny distillation set-up the distillation tests share: a tiny BIO corpus, the
run configuration they vary, and a registry holding only the tiny teacher (the
``trained`` fixture of ``conftest.py`` builds that teacher once per module)."""

from fastbioner.base.config import TeacherConfig, TrainingConfig
from fastbioner.train.distill.config import DistillConfig, StudentConfig
from fastbioner.train.distill.methods import MethodConfig
from fastbioner.models.registry import Registry
from fastbioner.train.teacher import train_teacher
from tests.tiny_models import make_tiny_model

SENTENCES = [
    [("naloxone", "B-Chemical"), ("reverses", "O"), ("hypertension", "B-Disease")],
    [("lithium", "B-Chemical"), ("carbonate", "I-Chemical"), ("induced", "O"), ("renal", "B-Disease"),
     ("failure", "I-Disease")],
    [("the", "O"), ("cocaine", "B-Chemical"), ("dose", "O"), ("was", "O"), ("increased", "O")],
    [("aspirin", "B-Chemical"), ("and", "O"), ("ibuprofen", "B-Chemical"), ("caused", "O"),
     ("acute", "B-Disease"), ("nephrotoxicity", "I-Disease")],
    [("clonidine", "B-Chemical"), ("effects", "O"), ("on", "O"), ("blood", "O"), ("pressure", "O")],
]


def write_bio(path, sentences=SENTENCES, repeat=3):
    blocks = ["\n".join(f"{w}\t{t}" for w, t in s) for s in sentences] * repeat
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


def train_tiny_teacher(root, data):
    """A tiny teacher fine-tuned on the tiny corpus, in a registry of its own at
    ``root``: (registry, the corpus file)."""
    bio = write_bio(data / "train.tsv")
    base = make_tiny_model(data / "base", layers=4, seed=3)
    registry = Registry(root)
    train_teacher(TeacherConfig(base_model=str(base), train_files=[str(bio)],
                                training=TrainingConfig(epochs=15, batch_size=4, learning_rate=3e-3,
                                                        warmup_ratio=0.0, seed=1)),
                  "tiny-teacher", registry=registry)
    return registry, bio


def config(bio, method="fastbioner", epochs=3, dev=True, lr=1e-3, **kw):
    student = kw.pop("student", None) or StudentConfig(source="teacher", layers=2)
    return DistillConfig(teacher="tiny-teacher", student=student, method=MethodConfig(name=method, **kw.pop("m", {})),
                         train_files=[str(bio)], dev_file=str(bio) if dev else None,
                         training=TrainingConfig(epochs=epochs, batch_size=5, learning_rate=lr,
                                                 warmup_ratio=0.0, seed=7, **kw.pop("t", {})), **kw)


def fresh_registry(trained, tmp_path):
    """A copy of the module's registry holding only the teacher (each test installs its own)."""
    import shutil
    registry, _ = trained
    root = tmp_path / "reg"
    shutil.copytree(registry.root / "tiny-teacher", root / "tiny-teacher")
    return Registry(root)


def registry_leftovers(registry):
    """Staging folders and teacher caches a run left in ``registry`` (none after a
    cancel or an estimate)."""
    return sorted(p.name for p in registry.root.iterdir() if p.name.startswith((".staging", ".teacher-cache")))
