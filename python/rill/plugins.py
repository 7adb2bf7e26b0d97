"""The plugins loaded into this process.

On import, the plugins in the directories ``RILL_PLUGIN_PATH`` names (colon-separated) are
loaded, else those shipped with Rill (``<prefix>/lib/rill/plugins``). ``load_plugin`` adds
one more; loading the same file again does nothing.
"""
import os

from rill import _config, _rill

_loaded_files = set()


def _default_dirs():
    env = os.environ.get("RILL_PLUGIN_PATH")
    if env is not None and env != "":
        dirs = [d for d in env.split(":") if d]
        if not dirs:
            raise ValueError("RILL_PLUGIN_PATH is %r, which names no directory: set it to DIR[:DIR...], or "
                             "unset it for the default" % env)
        return dirs
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.normpath(os.path.join(here, _config.PLUGIN_DIR_FROM_PACKAGE))]


def load_plugin(path):
    """Loads the plugin shared library at ``path``; returns its description (a dict)."""
    real = os.path.realpath(path)
    if real in _loaded_files:
        return next(p for p in plugins() if os.path.realpath(p["path"]) == real)
    infos = _rill.load_plugins([], [path])
    _loaded_files.add(real)
    return infos[0]


def plugins():
    """Every loaded plugin: name, version, path, abi_version, enabled, ops."""
    return _rill.plugins()


def _load_defaults():
    for info in _rill.load_plugins(_default_dirs(), []):
        if info["path"] != "(built in)":
            _loaded_files.add(os.path.realpath(info["path"]))


_load_defaults()
