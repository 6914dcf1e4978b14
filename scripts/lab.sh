#!/bin/sh
# JupyterLab on the notebooks, with live widgets: what `make lab` runs.
#
#   sh scripts/lab.sh [JupyterLab options...]     e.g. --ServerApp.port=8890 --no-browser
#
# - listens on 127.0.0.1 only (the URL with its token is printed; open it in a browser);
# - runs the project's environment: the kernel "python3" the notebooks ask for is the one in
#   .venv (JUPYTER_PREFER_ENV_PATH puts the environment's kernels before a user's own), so it
#   imports this specnb; ipywidgets 8 and its JupyterLab 4 extension come from the `lab` extra;
# - serves notebooks/ (SPECNB_LAB_ROOT overrides), so each notebook runs in its own folder as
#   under `make run`;
# - saves notebooks WITHOUT outputs: a contents-manager pre-save hook
#   (specnb.nb.strip_outputs_hook) strips outputs, prompt numbers and widget state from every
#   save and autosave, so using the lab leaves the repository clean (the committed notebooks
#   have no outputs; executed copies with outputs come from `make run`, in build/). Edits to
#   cells are saved as usual; the outputs live in the browser tab until it closes;
# - no "get notified about Jupyter news?" pop-up and no news fetch: scripts/lab-settings/
#   overrides.json sets fetchNews false (JupyterLab's settings overrides), news_url None;
# - drops SPECNB_HEADLESS, which would turn the widgets into static tables.
# SPECNB_PYTHON names the interpreter (default .venv/bin/python). The browser tests start
# JupyterLab through this script too.
set -eu
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${SPECNB_PYTHON:-$here/.venv/bin/python}"
root="${SPECNB_LAB_ROOT:-$here/notebooks}"
unset SPECNB_HEADLESS
export JUPYTER_PREFER_ENV_PATH=1
if [ "$(id -u)" = 0 ]; then
    set -- --ServerApp.allow_root=True "$@"   # containers often run as root
fi
exec "$python" -m jupyterlab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir="$root" \
    --ContentsManager.pre_save_hook=specnb.nb.strip_outputs_hook \
    --LabApp.app_settings_dir="$here/scripts/lab-settings" --LabApp.news_url=None "$@"
