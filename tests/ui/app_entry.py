"""The entry script AppTest runs: executes app.py exactly as ``streamlit run app.py`` does.

Why not ``AppTest.from_file("app.py")``: next to app.py there is a ``pages/`` folder, and AppTest (Streamlit 1.67)
then treats the app as a legacy pages-folder app and, after the first run, reruns only the page script, never
app.py. The frame (sidebar picker, engine, error backstop) would go untested. From a folder without ``pages/``
AppTest runs the whole app on every rerun, as the real server does; app.py names its pages by absolute path.
"""

import runpy

from engine.cli.dashboard_cmd import app_path

runpy.run_path(app_path(), run_name="__main__")
