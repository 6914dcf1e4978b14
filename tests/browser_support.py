"""Helpers for the browser tests (tests/test_browser.py): a Chromium to drive, a JupyterLab
server on a free loopback port, and shutting both down without leaving processes behind.

The browser is Debian's ``chromium`` package (``scripts/ensure_browser.sh``, run by
``make test``, installs it), driven by Playwright for Python through ``executable_path``;
Playwright's own browser downloads are never used. ``SPECNB_CHROMIUM`` names another binary.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

#: The JupyterLab launcher behind `make lab`.
LAB_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "lab.sh"

#: Flags for a headless Chromium on a machine without network (the background-networking
#: flags keep Chromium from dialling out; a closed network refuses those connections).
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]

#: Text that marks an error (not a warning) in a stderr-coloured output area.
ERROR_TEXT = re.compile(r"Traceback \(most recent call last\)|^\w*(Error|Exception)\b.*:|"
                        r"An Exception was encountered", re.MULTILINE)


def find_chromium() -> str | None:
    """Path of the Chromium to drive, or None: ``$SPECNB_CHROMIUM``, else Debian's."""
    wanted = os.environ.get("SPECNB_CHROMIUM")
    candidates = [wanted] if wanted else ["/usr/bin/chromium", shutil.which("chromium") or "",
                                          shutil.which("chromium-browser") or ""]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def browser_unavailable_reason() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[test]')"
    if find_chromium() is None:
        if os.environ.get("SPECNB_CHROMIUM"):
            return f"SPECNB_CHROMIUM={os.environ['SPECNB_CHROMIUM']} is not an executable file"
        return ("no Chromium: /usr/bin/chromium is missing and could not be installed "
                "(scripts/ensure_browser.sh needs root and apt-get; `make test` runs it)")
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _descendants(pid: int) -> list:
    try:
        import psutil  # a dependency of ipykernel
        return psutil.Process(pid).children(recursive=True)
    except Exception:  # noqa: BLE001 - gone already, or no psutil
        return []


def kill_tree(proc: subprocess.Popen, grace_s: float = 10.0, also=()) -> None:
    """Stop ``proc`` (started with ``start_new_session=True``), its process group and every
    descendant (Jupyter starts kernels in sessions of their own), plus the processes ``also``
    (psutil.Process objects seen earlier): SIGTERM, then SIGKILL."""
    kids = list(also) + _descendants(proc.pid)
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(5)
    try:  # the server's own group may be gone; make sure nothing of it is left
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for kid in kids:
        try:
            kid.kill()
        except Exception:  # noqa: BLE001 - already gone
            pass


def stray_browsers(grace_s: float = 5.0) -> list[str]:
    """Chromium processes started by this process that outlive the browser; killed."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - ipykernel depends on psutil
        return []
    deadline = time.monotonic() + grace_s
    while True:
        found = []
        for p in psutil.Process().children(recursive=True):
            try:
                if "chrom" in p.name().lower() and p.status() != psutil.STATUS_ZOMBIE:
                    found.append(p)
            except psutil.Error:
                pass
        if not found or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    names = []
    for p in found:
        try:
            names.append(f"pid {p.pid} {p.name()}")
            p.kill()
        except psutil.Error:
            pass
    return names


class JupyterLab:
    """A JupyterLab server for one test module, as a subprocess.

    It listens on a free loopback port with a random token, serves ``root_dir``, keeps its
    config, data, runtime and settings in ``state_dir`` (nothing of the user's Jupyter setup is
    read or written) and runs without ``SPECNB_HEADLESS`` so the notebooks show live widgets.
    Use as a context manager; :meth:`stop` shuts down kernels and frees the port.
    """

    def __init__(self, root_dir: Path, state_dir: Path, python: str = sys.executable):
        self.root_dir = Path(root_dir)
        self.state_dir = Path(state_dir)
        self.python = python
        self.port = free_port()
        self.token = os.urandom(16).hex()
        self.proc: subprocess.Popen | None = None
        self._kids: list = []
        self.log_path = self.state_dir / "jupyterlab.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lab_url(self, path: str) -> str:
        return f"{self.url}/lab/tree/{path}?token={self.token}"

    def _env(self) -> dict:
        # A reader's environment: no SPECNB_HEADLESS (static tables instead of widgets) nor
        # the MPLBACKEND the runner sets, no Jupyter settings of this machine.
        env = {k: v for k, v in os.environ.items()
               if k not in ("SPECNB_HEADLESS", "MPLBACKEND")
               and not k.startswith(("JUPYTER", "JPY_"))}
        config, data, runtime = (self.state_dir / n for n in ("config", "data", "runtime"))
        for d in (config, data, runtime):
            d.mkdir(parents=True, exist_ok=True)
        # Render every cell and output in the DOM (JupyterLab 4 windows long notebooks
        # otherwise), so that "no error output anywhere" looks at all of them.
        # No "official Jupyter news?" pop-up over the page either (and no fetch for it).
        user_settings = config / "lab" / "user-settings" / "@jupyterlab"
        for plugin, values in [("notebook-extension/tracker", {"windowingMode": "none"}),
                               ("apputils-extension/notification", {"fetchNews": "false"})]:
            path = user_settings / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values), encoding="utf-8")
        env.update(SPECNB_PYTHON=self.python, SPECNB_LAB_ROOT=str(self.root_dir),
                   JUPYTER_CONFIG_DIR=str(config), JUPYTER_DATA_DIR=str(data),
                   JUPYTER_RUNTIME_DIR=str(runtime), JUPYTER_PREFER_ENV_PATH="1",
                   JUPYTERLAB_SETTINGS_DIR=str(config / "lab" / "user-settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(config / "lab" / "workspaces"),
                   IPYTHONDIR=str(self.state_dir / "ipython"), PYTHONUNBUFFERED="1")
        return env

    def start(self, timeout_s: float = 60.0) -> "JupyterLab":
        # The launcher `make lab` uses (loopback, project kernel, no SPECNB_HEADLESS), plus
        # what a test needs: its own port and token, no browser tab, nothing fetched online.
        cmd = ["sh", str(LAB_SCRIPT), "--no-browser",
               f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={self.token}", "--ServerApp.terminals_enabled=False",
               "--LabApp.news_url=None", "--LabApp.extension_manager=readonly",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               # a safety net should this process be killed before stop(): idle kernels
               # go after 5 minutes, and then the server
               "--MappingKernelManager.cull_idle_timeout=300",
               "--MappingKernelManager.cull_interval=60",
               "--ServerApp.shutdown_no_activity_timeout=300"]
        self.state_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self._log = log
        self.proc = subprocess.Popen(cmd, cwd=self.root_dir, env=self._env(), stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        raise RuntimeError(f"JupyterLab did not answer within {timeout_s:.0f} s:\n{self.log()}")

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(f"{self.url}/api/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def log(self, tail: int = 4000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-tail:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Shut kernels and server down (politely, then by signal); wait for the port."""
        if self.proc is None:
            return
        kids = self._kids = _descendants(self.proc.pid)  # kernels, before the server lets go
        try:
            if self.proc.poll() is None:
                try:
                    self.api("shutdown", method="POST")
                    self.proc.wait(15)
                except Exception:  # noqa: BLE001 - fall through to signals
                    pass
        finally:
            kill_tree(self.proc, also=kids)
            self._log.close()
            deadline = time.monotonic() + 10
            while not port_is_free(self.port) and time.monotonic() < deadline:
                time.sleep(0.2)

    def leftovers(self) -> list[str]:
        """What of this server is still alive after :meth:`stop` (should be nothing)."""
        alive = []
        if self.proc is not None and self.proc.poll() is None:
            alive.append(f"server pid {self.proc.pid}")
        for kid in getattr(self, "_kids", []):
            try:
                if kid.is_running() and kid.status() != "zombie":
                    alive.append(f"pid {kid.pid} {kid.name()}")
            except Exception:  # noqa: BLE001 - gone
                pass
        if not port_is_free(self.port):
            alive.append(f"port {self.port} still in use")
        return alive

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
