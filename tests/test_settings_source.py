"""Settings have one source: each field declares its environment variable, the settings table (docs/settings.md,
checked by tests/test_docs.py) is generated from the declarations, and importing the configuration changes nothing in
the process (the entry points prepare it)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import Settings
from engine.process_env import PROCESS_ENV_DEFAULTS, prepare_process_environment
from engine.settings_doc import settings_markdown

ROOT = Path(__file__).resolve().parent.parent
ENV_VARS = {f.name: f.metadata["env"] for f in dataclasses.fields(Settings) if f.metadata["env"]}


def test_each_environment_variable_is_declared_on_its_setting():
    assert ENV_VARS["store"] == "MEMLENS_STORE"
    assert ENV_VARS["openai_api_key"] == "OPENAI_API_KEY"
    assert ENV_VARS["embed_precision"] == "MEMLENS_EMBED_PRECISION"
    assert len(set(ENV_VARS.values())) == len(ENV_VARS), "two settings read the same variable"


@pytest.mark.parametrize("name", sorted(ENV_VARS))
def test_from_env_reads_exactly_the_declared_variable(name):
    field = next(f for f in dataclasses.fields(Settings) if f.name == name)
    value = {"str": "x-" + name, "int": "3", "float": "2.5", "bool": "True"}[field.type]
    if field.metadata["choices"]:
        value = field.metadata["choices"][-1]
    assert str(getattr(Settings.from_env({ENV_VARS[name]: value}), name)) == value


def test_a_setting_without_a_declared_variable_ignores_the_environment():
    assert Settings.from_env({"MEMLENS_TOP_K": "7", "TOP_K": "7"}).top_k == Settings().top_k


def test_the_generated_table_has_a_row_per_setting_with_its_variable():
    table = settings_markdown()
    for d in Settings.describe():
        row = next(line for line in table.splitlines() if line.startswith(f"| `{d['name']}` |"))
        assert (f"`{d['env']}`" in row) == bool(d["env"])
    assert "/work/" not in table and str(ROOT) not in table  # the default store is shown relative to the project


@pytest.mark.subprocess
def test_importing_the_configuration_leaves_the_environment_alone():
    env = {k: v for k, v in os.environ.items() if k not in PROCESS_ENV_DEFAULTS}
    code = (
        "import os; before = dict(os.environ); import engine.config, engine; "
        "assert dict(os.environ) == before, set(os.environ.items()) ^ set(before.items()); "
        "import sys; assert 'lancedb' not in sys.modules and 'torch' not in sys.modules"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]


def test_preparing_the_process_sets_the_defaults_and_keeps_what_was_set(monkeypatch):
    for name in PROCESS_ENV_DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANCEDB_LOG", "debug")
    prepare_process_environment()
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    assert os.environ["LANCEDB_LOG"] == "debug"
