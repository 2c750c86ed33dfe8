"""The dashboard's screens, one per file, run by Streamlit from app.py's navigation (a package so that an installed
memlens finds them: ``ui.nav.page_file``)."""
