"""One CPU description (fastbioner.base.cpu) for the speed figures, the bf16 check and the
research records; a system without /proc/cpuinfo still gets a name."""

from __future__ import annotations

from pathlib import Path

from fastbioner.base.cpu import describe_cpu

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9554 64-Core Processor
flags\t\t: fpu vme sse avx512f avx512_bf16

processor\t: 1
model name\t: AMD EPYC 9554 64-Core Processor
flags\t\t: fpu vme sse avx512f avx512_bf16
"""


def test_the_first_processors_name_and_flags(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    cpu = describe_cpu(path)
    assert cpu.model == "AMD EPYC 9554 64-Core Processor"
    assert cpu.has_any("amx_bf16", "avx512_bf16") is True and cpu.has_any("amx_bf16") is False


def test_without_cpuinfo_the_name_comes_from_platform_and_flags_are_unknown(tmp_path, monkeypatch):
    import platform

    monkeypatch.setattr(platform, "processor", lambda: "Apple M2")
    cpu = describe_cpu(tmp_path / "missing")
    assert cpu.model == "Apple M2" and cpu.flags is None and cpu.has_any("avx512_bf16") is None


def test_every_reader_of_the_cpu_goes_through_the_helper():
    """No other module parses /proc/cpuinfo (the precision check and hardware name, the
    research scripts' records) or locks a file with fcntl (filelock instead, which
    also locks on Windows)."""
    repo = Path(__file__).resolve().parents[2]
    offenders = []
    for folder in ("core", "fastbioner_gui", "benchmarks", "experiments", "scripts"):
        for path in (repo / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8", errors="replace")
            if "/proc/cpuinfo" in text and path.name != "cpu.py":
                offenders.append(f"{path.relative_to(repo)}: /proc/cpuinfo")
            if "import fcntl" in text:
                offenders.append(f"{path.relative_to(repo)}: fcntl")
    assert not offenders
