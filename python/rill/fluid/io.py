"""fluid.io: saving and loading variables and inference models in Fluid's formats.

Variables are saved by running a program of ``save`` ops (one file per variable, named
after it) or one ``save_combine`` (``filename``: every variable in one file, in name
order), and loaded by ``load`` / ``load_combine``, as Fluid does. ``save_inference_model``
writes the pruned program, with feed and fetch ops and is_test set, as ``__model__`` (or
``model_filename``) and its persistable variables beside it; ``load_inference_model``
reads any layout Rill reads (Fluid's and Paddle 2.x's).
"""
import os

from rill import _rill
from rill.fluid import core
from rill.fluid.executor import global_scope
from rill.fluid.framework import Parameter, Program, Variable, default_main_program
from rill.proto import framework_pb2

__all__ = ["save_vars", "save_params", "save_persistables", "load_vars", "load_params", "load_persistables",
           "save_inference_model", "load_inference_model", "get_inference_program", "get_parameter_value",
           "get_parameter_value_by_name"]


def is_parameter(var):
    return isinstance(var, Parameter)


def is_persistable(var):
    if var.type in (core.VarDesc.VarType.FEED_MINIBATCH, core.VarDesc.VarType.FETCH_LIST,
                    core.VarDesc.VarType.RAW, core.VarDesc.VarType.CHANNEL, core.VarDesc.VarType.STEP_SCOPES):
        return False
    return var.persistable


def _clone_var(block, var):
    return block.create_var(name=var.name, shape=var.shape, dtype=var.dtype, type=var.type,
                            lod_level=var.lod_level, persistable=True)


def get_parameter_value(para, executor):
    """The current value of Parameter `para` in the executor's scope, as a numpy array."""
    if not is_parameter(para):
        raise TypeError("get_parameter_value takes a Parameter, got %r" % (para,))
    program = Program()
    var = _clone_var(program.global_block(), para)
    return executor.run(program, feed={}, fetch_list=[var])[0]


def get_parameter_value_by_name(name, executor, program=None):
    """get_parameter_value of the Parameter `name` of `program` (the default main program)."""
    program = default_main_program() if program is None else program
    var = program.global_block().var(name)
    return get_parameter_value(var, executor)


def _vars_of(main_program, vars, predicate):
    if vars is not None:
        return list(vars)
    program = default_main_program() if main_program is None else main_program
    if not isinstance(program, Program):
        raise TypeError("main_program must be a Program")
    return [v for v in program.list_vars() if predicate(v)]


def _run_file_ops(executor, dirname, vars, filename, one, combined, slot):
    """Runs a program of op ``one`` per variable (file dirname/<name>) or, with
    ``filename``, one op ``combined`` over all of them in name order; ``slot`` is where the
    variables go ("X" to save, "Out" to load)."""
    program = Program()
    block = program.global_block()
    variables = sorted((_clone_var(block, v) for v in vars), key=lambda v: v.name)
    kind = "inputs" if slot == "X" else "outputs"
    if filename is None:
        for v in variables:
            block.append_op(type=one, attrs={"file_path": os.path.join(dirname, v.name)}, **{kind: {slot: [v]}})
    elif variables:
        block.append_op(type=combined, attrs={"file_path": os.path.join(dirname, filename)},
                        **{kind: {slot: variables}})
    executor.run(program)


def _check_saveable(vars):
    """Every variable must hold a tensor before any file is written: a save that fails half
    way would leave a checkpoint of mixed ages."""
    scope = global_scope()
    for v in vars:
        var = scope.find_var(v.name)
        if var is None or not var.get_tensor()._is_initialized():
            raise ValueError("save: variable %r holds no tensor (has the startup program run?); nothing was written"
                             % v.name)


def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None):
    """Each file is replaced whole or not at all (the save ops write atomically)."""
    vars = _vars_of(main_program, vars, predicate)
    _check_saveable(vars)
    if not os.path.isdir(dirname):
        os.makedirs(dirname)
    _run_file_ops(executor, dirname, vars, filename, "save", "save_combine", "X")


def save_params(executor, dirname, main_program=None, filename=None):
    save_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


def save_persistables(executor, dirname, main_program=None, filename=None):
    save_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename)


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None):
    _run_file_ops(executor, dirname, _vars_of(main_program, vars, predicate), filename, "load", "load_combine", "Out")


def load_params(executor, dirname, main_program=None, filename=None):
    load_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


def load_persistables(executor, dirname, main_program=None, filename=None):
    load_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename)


def get_inference_program(target_vars, main_program=None):
    program = default_main_program() if main_program is None else main_program
    if isinstance(target_vars, Variable):
        target_vars = [target_vars]
    return program._prune(target_vars)._inference_optimize()


def _drop_unused_vars(program):
    block = program.global_block()
    used = set()
    for b in program.blocks:
        for op in b.ops:
            used.update(op.input_arg_names)
            used.update(op.output_arg_names)
    for name in list(block.vars):
        if name not in used:
            del block.vars[name]
    program._bump()


def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None):
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    if isinstance(target_vars, Variable):
        target_vars = [target_vars]
    for t in target_vars:
        if not isinstance(t, Variable):
            raise TypeError("save_inference_model: target_vars must be Variables, got %r" % (t,))
    program = default_main_program() if main_program is None else main_program
    copy = program.clone()
    block = copy.global_block()
    block.ops = [op for op in block.ops if op.type not in ("feed", "fetch")]
    inference = copy._prune(target_vars)._inference_optimize()
    _drop_unused_vars(inference)
    for name in feeded_var_names:
        if name not in inference.global_block().vars:
            raise ValueError("save_inference_model: feed %r is not used to compute the targets" % name)
    block = inference.global_block()
    feed = block.create_var(name="feed", type=core.VarDesc.VarType.FEED_MINIBATCH, persistable=True)
    fetch = block.create_var(name="fetch", type=core.VarDesc.VarType.FETCH_LIST, persistable=True)
    for i, name in enumerate(feeded_var_names):
        block.prepend_op(type="feed", inputs={"X": [feed]}, outputs={"Out": [name]}, attrs={"col": i})
    for i, t in enumerate(target_vars):
        block.append_op(type="fetch", inputs={"X": [t.name]}, outputs={"Out": [fetch]}, attrs={"col": i})
    if not os.path.isdir(dirname):
        os.makedirs(dirname)
    model_path = os.path.join(dirname, os.path.basename(model_filename) if model_filename else "__model__")
    # The parameters first: save_vars checks every one before writing anything, so a model
    # that cannot be saved leaves the directory as it was.
    save_persistables(executor, dirname, inference,
                      os.path.basename(params_filename) if params_filename else None)
    _rill.write_file(model_path, inference.serialize_to_string())
    return [t.name for t in target_vars]


def load_inference_model(dirname, executor, model_filename=None, params_filename=None, pserver_endpoints=None,
                         allow_files_outside=False):
    """Returns [program, feed_target_names, fetch_targets]; the parameters go into the
    global scope. A model is code that runs with your rights: one whose program writes
    files (save ops) or names files outside ``dirname`` is refused unless
    ``allow_files_outside``."""
    if not os.path.isdir(dirname) and not str(dirname).endswith(".pdmodel"):
        raise ValueError("load_inference_model: %r is not a directory" % dirname)
    # The runtime checks the model (its files regular, the policy above) and finds its
    # program file (__model__, model_filename, or the directory's one PREFIX.pdmodel).
    model_path, _ = _rill.load_model_parameters(dirname, os.path.basename(model_filename) if model_filename else "",
                                                params_filename or "", global_scope(), allow_files_outside)
    with open(model_path, "rb") as f:
        desc = framework_pb2.ProgramDesc()
        desc.ParseFromString(f.read())
    program = Program._from_desc(desc)
    block = program.global_block()
    feeds = sorted((op.attr("col"), op.output("Out")[0]) for op in block.ops if op.type == "feed")
    fetches = sorted((op.attr("col"), op.input("X")[0]) for op in block.ops if op.type == "fetch")
    return [program, [n for _, n in feeds], [block.var(n) for _, n in fetches]]
