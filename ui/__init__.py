"""Streamlit-side pieces shared by the pages: the cached engine, the sidebar picker, error display, figures."""
