"""Fluid 0.14's other way to say which programs a layer builds into: besides program_guard,
every layer took ``main_program=`` and ``startup_program=`` (its LayerHelper read them).
A layer wrapped by `accepting_programs` takes them too and builds under program_guard of
the programs given (the default for one not given)."""
import functools

from rill.fluid.framework import default_main_program, default_startup_program, program_guard


def accepting_programs(layer):
    """`layer`, taking main_program= and startup_program= as Fluid 0.14's layers did."""
    @functools.wraps(layer)
    def call(*args, **kwargs):
        main = kwargs.pop("main_program", None)
        startup = kwargs.pop("startup_program", None)
        if main is None and startup is None:
            return layer(*args, **kwargs)
        with program_guard(main or default_main_program(), startup or default_startup_program()):
            return layer(*args, **kwargs)
    return call
