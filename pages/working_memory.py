"""Placeholder until the dashboard issue fills this page in."""

import streamlit as st

st.info("This page is being built.")
