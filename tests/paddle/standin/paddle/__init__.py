"""A stand-in `paddle` package for running Paddle's own tests on Rill (run_op_tests.py).

It is not Paddle: `paddle.fluid` is rill.fluid (Fluid's static-graph API on Rill's
runtime) with the few `core` queries Paddle's tests ask (no CUDA here, no XPU, ...);
Paddle 2.x's static API (`paddle.add`, `paddle.nn`, `paddle.static`, ...) is rill.paddle;
`paddle.reader` and `paddle.batch` are rill's, `paddle.dataset` gives synthetic data of
the real datasets' shapes, and op_test.py beside this package is our OpTest. Every other
name a test may reach resolves to a placeholder: importing it works, and using it skips that test with
unittest.SkipTest naming the API and its group (skip_reason: dygraph, Fluid API rill.fluid
lacks, Paddle's internals, Paddle 2.x's own API), so the runner can report what was not
run and why instead of failing the whole file. A name Paddle's own module lacks too (read
from Paddle's sources, where PADDLE_SRC has them) is an AttributeError, as in Paddle.
"""
import ast
import functools
import importlib
import importlib.abc
import importlib.util
import importlib.machinery
import os
import sys
import types
import unittest


def skip_reason(name):
    """Why a test using Paddle name `name` skips, by what the name is: dynamic graph API
    rill.fluid.dygraph lacks; Fluid API that rill.fluid lacks (a gap to close);
    Paddle's C++ internals; or Paddle 2.x's own API (paddle.*, not Fluid's)."""
    if name.startswith(("paddle.fluid.dygraph", "paddle.to_tensor", "paddle.disable_static")) or \
            name in ("paddle.fluid.core.VarBase",):
        return "API dygraph: %s is dynamic graph API rill.fluid.dygraph does not have yet" % name
    if name.startswith(("paddle.fluid.core.", "Operator.desc")):
        return "API internals: %s is Paddle's C++ framework, not its API" % name
    if name.startswith(("paddle.fluid.", "paddle.dataset", "paddle.reader", "paddle.batch")):
        return "API fluid: %s is Fluid API rill.fluid does not have yet" % name
    return "API 2.x: %s is Paddle 2.x API (rill.fluid is Fluid's)" % name


class Unsupported(object):
    """A Paddle name the stand-in does not provide. Using it (calling it, reading a value
    from it) skips the test; it may be imported, decorated with or subclassed."""

    def __init__(self, name):
        self._name = name

    def _skip(self, *args, **kwargs):
        raise unittest.SkipTest(skip_reason(self._name))

    __call__ = _skip
    __iter__ = _skip
    __bool__ = _skip
    __len__ = _skip
    __getitem__ = _skip

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unsupported(self._name + "." + attr)

    def __mro_entries__(self, bases):
        return (_UnsupportedBase,)


class _UnsupportedBase(object):
    def __init__(self, *args, **kwargs):
        raise unittest.SkipTest("API 2.x: a subclass of Paddle API the stand-in does not provide")


@functools.lru_cache(maxsize=None)
def _paddle_module_names(name):
    """The names Paddle's own module `name` defines at its top level (functions, classes,
    assignments, imports, its submodules), read from its source in the Paddle checkout
    PADDLE_SRC names; None where that cannot be told: no source there, or names the module
    makes as it runs (a star import, globals())."""
    root = os.path.join(os.environ.get("PADDLE_SRC", ""), "python", *name.split("."))
    path = next((p for p in (root + ".py", os.path.join(root, "__init__.py")) if os.path.isfile(p)), None)
    if path is None:
        return None
    with open(path) as f:
        source = f.read()
    if "globals()" in source:
        return None
    names = set()
    if os.path.isdir(root):
        names.update(os.path.splitext(entry)[0] for entry in os.listdir(root))
    statements = list(ast.parse(source).body)
    while statements:
        node = statements.pop()
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                statements.extend(getattr(node, field, []))
        elif isinstance(node, ast.ExceptHandler):
            statements.extend(node.body)
    return names


def _missing(name, attr):
    """Attribute `attr` of paddle module `name`, which Rill lacks: an AttributeError where
    Paddle's own module lacks it too (as Paddle's tests of its API expect), otherwise a
    placeholder."""
    paddle_names = _paddle_module_names(name)
    if paddle_names is not None and attr not in paddle_names:
        raise AttributeError("module %r has no attribute %r (nor has Paddle's)" % (name, attr))
    return Unsupported(name + "." + attr)


def _forwarding_module(name, target):
    """Module `name` whose attributes are `target`'s (a module or None), and otherwise
    placeholders (or AttributeErrors, _missing)."""
    module = types.ModuleType(name)
    module.__path__ = []  # a package: its own submodules resolve through the finder too

    def __getattr__(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = getattr(target, attr, None) if target is not None else None
        if isinstance(value, types.ModuleType):  # forwarded too: what it lacks skips, naming it
            return importlib.import_module(name + "." + attr)
        return _missing(name, attr) if value is None else value
    module.__getattr__ = __getattr__
    if target is not None:  # `from paddle.fluid.X import *` takes the target's names
        module.__all__ = list(getattr(target, "__all__", [n for n in dir(target) if not n.startswith("_")]))
    return module


def _rill_equivalent(name):
    """Rill's module for paddle module `name`: rill.fluid's for paddle.fluid's
    (paddle.fluid.layers.nn is rill.fluid.layers.nn), rill.paddle's for Paddle 2.x's
    (paddle.nn.functional is rill.paddle.nn.functional), or None where Rill has none."""
    rill_name = ("rill." if name.startswith("paddle.fluid.") else "rill.paddle.") + name[len("paddle."):]
    try:
        return importlib.import_module(rill_name)
    except ImportError:
        return None


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Any paddle.* module the stand-in has no file for: a forwarding module."""

    # Paddle's tests import each other's helpers by their package path
    # (paddle.fluid.tests.unittests.test_lstm_op): those are the files of Paddle's test
    # directory, on the path as top-level modules. The stand-in's own (op_test) stays a
    # forwarding module, so that what it lacks skips rather than fails the import.
    _TESTS = "paddle.fluid.tests.unittests."
    _STANDIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith("paddle."):
            return None
        if fullname.startswith(self._TESTS):
            test = importlib.util.find_spec(fullname[len(self._TESTS):])
            if test is not None and test.origin and test.origin.endswith(".py") and \
                    not os.path.abspath(test.origin).startswith(self._STANDIN + os.sep):
                return importlib.util.spec_from_file_location(fullname, test.origin)
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        return _forwarding_module(spec.name, _rill_equivalent(spec.name))

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())


def _restore_numpy_aliases():
    """numpy's aliases of the builtin types (np.bool, np.int, ...), which Paddle 2.1's tests
    use and numpy 1.24 removed: the environment's difference, not the op's."""
    import builtins
    import numpy as np
    for alias in ("bool", "int", "float", "complex", "object", "str"):
        if alias not in np.__dict__:
            setattr(np, alias, getattr(builtins, alias))


_restore_numpy_aliases()


def _mark_framework_internals():
    """An op's OpDesc (op.desc) and a block's BlockDesc (block.desc): the part of Paddle's
    C++ desc API its op tests build gradient ops with (fluid/desc_api.py); the rest of it is
    Paddle's internals: a test reaching for them skips, naming them."""
    from rill.fluid import framework
    desc_api = importlib.import_module("paddle.fluid.desc_api")
    framework.Operator.desc = property(desc_api.OpDesc)
    framework.Block.desc = property(desc_api.BlockDesc)

    def tensor_method(self, attr):
        """Paddle 2.x gives its static Variable the Tensor's methods (x.add_, x.clip_, ...);
        a test calling one skips, naming it, as one asking for a dygraph gradient
        (_grad_ivar) does. Other private names stay AttributeErrors."""
        if attr == "_grad_ivar":
            return Unsupported("Variable._grad_ivar (Paddle's dygraph gradient)")
        if attr.startswith("_"):
            raise AttributeError(attr)
        return Unsupported("Variable.%s (Paddle 2.x's Tensor method)" % attr)
    framework.Variable.__getattr__ = tensor_method


_mark_framework_internals()

from paddle import fluid, static  # noqa: E402,F401
# Fluid's readers are rill's (rill.reader, rill.batch); paddle.dataset is the stand-in's own,
# synthetic (dataset/).
import rill.reader as reader  # noqa: E402
from rill.reader import batch  # noqa: E402,F401
sys.modules["paddle.reader"] = reader
from paddle import dataset  # noqa: E402,F401
from paddle.fluid import CPUPlace, CUDAPlace, CUDAPinnedPlace  # noqa: E402,F401
# The build queries, as the stand-in's core answers them (is_compiled_with_cuda: a GPU is here).
from paddle.fluid.core import (is_compiled_with_cuda, is_compiled_with_npu, is_compiled_with_rocm,  # noqa: E402,F401
                               is_compiled_with_xpu)

# Static and dynamic graph modes are rill.paddle's (dynamic: rill.fluid.dygraph).
from rill.paddle import disable_static, enable_static, in_dynamic_mode  # noqa: E402,F401


class _Generator(object):
    """What paddle.seed returns (Paddle's default Generator); tests only set flags on it."""


def seed(value):
    """rill.paddle's (the default programs and those made later take it as their random_seed,
    as Paddle's global generator makes random ops of seed 0 repeatable), returning Paddle's
    Generator."""
    import rill.paddle
    rill.paddle.seed(value)
    return _Generator()


def __getattr__(attr):
    """Paddle 2.x's functions and modules are rill.paddle's (paddle.add, paddle.nn, ...)."""
    if attr.startswith("__"):
        raise AttributeError(attr)
    import rill.paddle
    value = getattr(rill.paddle, attr, None)
    if isinstance(value, types.ModuleType):  # forwarded: what it lacks skips, naming it
        return importlib.import_module("paddle." + attr)
    return _missing("paddle", attr) if value is None else value
