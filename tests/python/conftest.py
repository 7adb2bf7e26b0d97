"""Shared set-up: each test builds into fresh default programs, runs in a fresh global
scope and names layers from 0, so tests do not see each other's variables."""
import os
import subprocess
import sys

import pytest

import rill.fluid as fluid
from rill.fluid import executor, framework, unique_name


@pytest.fixture(autouse=True)
def fresh_programs():
    main, startup = fluid.Program(), fluid.Program()
    old_main = framework.switch_main_program(main)
    old_startup = framework.switch_startup_program(startup)
    old_scope = executor.switch_scope(fluid.core.Scope())
    with unique_name.guard():
        yield
    framework.switch_main_program(old_main)
    framework.switch_startup_program(old_startup)
    executor.switch_scope(old_scope)


@pytest.fixture
def exe():
    return fluid.Executor(fluid.CPUPlace())


def run_python(code, env=None, timeout=120, **kwargs):
    """Runs ``code`` in a new interpreter (this one), with this test run's PYTHONPATH."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], env=full_env, timeout=timeout, capture_output=True,
                          text=True, **kwargs)


def rill_binary():
    return os.environ["RILL_BINARY"]
