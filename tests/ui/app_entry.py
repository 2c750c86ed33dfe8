"""The entry script AppTest runs: executes app.py exactly as ``streamlit run app.py`` does.

Why not ``AppTest.from_file("app.py")``: next to app.py there is a ``pages/`` folder, and AppTest (Streamlit 1.67)
then treats the app as a legacy pages-folder app and, after the first run, reruns only the page script, never
app.py. The frame (sidebar picker, engine, error backstop) would go untested. From a folder without ``pages/``
AppTest runs the whole app on every rerun, as the real server does; app.py names its pages by absolute path.
"""

import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `streamlit run app.py` puts app.py's folder on sys.path; do the same
    sys.path.insert(0, str(ROOT))
runpy.run_path(str(ROOT / "app.py"), run_name="__main__")
