"""Rill's Python front end.

``import rill.fluid as fluid`` gives Fluid 0.14's Python API, run in-process by Rill's C++
runtime and its plugins. The plugins shipped with Rill are loaded on import (or those in
the directories ``RILL_PLUGIN_PATH`` names); ``rill.load_plugin(path)`` adds another, whose
ops are then usable from ``LayerHelper.append_op`` at once. ``rill.empty`` makes arrays
that Executor.run feeds without a copy. ``rill.reader`` and ``rill.batch`` are Fluid's
reader decorators (paddle.reader, paddle.batch); ``rill.dataset`` reads the datasets Fluid's
book uses from files already on this machine (it downloads nothing).
"""
from rill.arrays import empty, is_borrowable
from rill.errors import Error
from rill.plugins import load_plugin, plugins
from rill import dataset, reader
from rill.reader import batch

__all__ = ["Error", "batch", "dataset", "empty", "is_borrowable", "load_plugin", "plugins", "reader"]
