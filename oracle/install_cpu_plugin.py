"""Install a vLLM platform plugin that selects vLLM's own CpuPlatform.

vLLM releases before about 0.26 pick the CPU platform only when the installed wheel
is a CPU build (its version string names "cpu"); ``VLLM_TARGET_DEVICE=cpu`` is read
by newer ones only. vLLM's plugin mechanism (entry-point group
``vllm.platform_plugins``) lets a package name the platform class; this writes such
a package (``specnb_oracle_cpu``, one module and its dist-info) into the running
interpreter's site-packages. Usage: VENV/bin/python oracle/install_cpu_plugin.py
"""
import sysconfig
from pathlib import Path

site = Path(sysconfig.get_paths()["purelib"])
(site / "specnb_oracle_cpu.py").write_text(
    '"""specnb oracle: select vLLM\'s CpuPlatform (see oracle/install_cpu_plugin.py)."""\n\n\n'
    "def cpu():\n    return \"vllm.platforms.cpu.CpuPlatform\"\n")
info = site / "specnb_oracle_cpu-0.0.0.dist-info"
info.mkdir(exist_ok=True)
(info / "METADATA").write_text("Metadata-Version: 2.1\nName: specnb-oracle-cpu\nVersion: 0.0.0\n")
(info / "entry_points.txt").write_text("[vllm.platform_plugins]\ncpu = specnb_oracle_cpu:cpu\n")
(info / "RECORD").write_text("")
print(f"installed specnb_oracle_cpu into {site}")
