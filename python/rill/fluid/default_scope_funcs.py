"""fluid.default_scope_funcs: a stack of scopes per thread, the global scope at its bottom,
for code that makes and finds variables outside a program (Fluid 0.14's).

get_cur_scope() is the top; enter_local_scope() pushes a child of it, leave_local_scope()
pops it (its variables go with it); var(name) makes a variable in the current scope,
find_var(name) looks it up there and in its ancestors (None if absent); scoped_function(f)
calls f inside a local scope.
"""
import threading

from rill.fluid.executor import global_scope

__all__ = ["get_cur_scope", "enter_local_scope", "leave_local_scope", "var", "find_var", "scoped_function"]

_local = threading.local()


def _stack():
    if not hasattr(_local, "scopes"):
        _local.scopes = [global_scope()]
    return _local.scopes


def get_cur_scope():
    return _stack()[-1]


def enter_local_scope():
    _stack().append(get_cur_scope().new_scope())


def leave_local_scope():
    if len(_stack()) == 1:
        raise RuntimeError("leave_local_scope: no local scope was entered")
    _stack().pop()


def var(name):
    return get_cur_scope().var(name)


def find_var(name):
    return get_cur_scope().find_var(name)


def scoped_function(func):
    enter_local_scope()
    try:
        func()
    finally:
        leave_local_scope()
