"""fluid.Trainer: Fluid 0.14's high-level training loop.

    def train_program():            # builds the net; returns the loss, or [loss, metric, ...]
        ...
    trainer = fluid.Trainer(train_func=train_program, optimizer_func=lambda: fluid.optimizer.SGD(0.01),
                            place=fluid.CPUPlace())
    trainer.train(num_epochs=5, event_handler=handler, reader=rill.batch(reader, 32), feed_order=["x", "y"])

The Trainer builds train_func's net into programs of its own (a test program is cloned
before the optimizer is added), runs them in a scope of its own, and calls event_handler
with a BeginEpochEvent, a BeginStepEvent and an EndStepEvent (with train_func's outputs
for the step, unless the BeginStepEvent's fetch_metrics was set False) per batch, and an
EndEpochEvent. trainer.stop() ends training after the current step. `parallel` is
accepted: a program always runs on the intra-op team (docs/PYTHON.md).

With a CheckpointConfig, the persistable variables (parameters, optimizer state) and the
position (epoch, step) are saved every step_interval steps and at the end of every
epoch_interval-th epoch, into checkpoint_dir/checkpoint_N (the newest
max_num_checkpoints kept); a Trainer made with the same config resumes from the newest,
and a training that ends normally removes them.
"""
import json
import os
import shutil

from rill.fluid import core, executor, framework, io, unique_name
from rill.fluid.data_feeder import DataFeeder

__all__ = ["Trainer", "BeginEpochEvent", "EndEpochEvent", "BeginStepEvent", "EndStepEvent", "CheckpointConfig"]


class BeginEpochEvent(object):
    def __init__(self, epoch_id):
        self.epoch = epoch_id


class EndEpochEvent(object):
    def __init__(self, epoch_id):
        self.epoch = epoch_id


class BeginStepEvent(object):
    """fetch_metrics: set it False to run the step without fetching train_func's outputs."""

    def __init__(self, epoch_id, step_id):
        self.epoch = epoch_id
        self.step = step_id
        self.fetch_metrics = True


class EndStepEvent(object):
    def __init__(self, epoch_id, step_id, metrics):
        self.epoch = epoch_id
        self.step = step_id
        self.metrics = metrics


class CheckpointConfig(object):
    def __init__(self, checkpoint_dir=None, max_num_checkpoints=3, epoch_interval=1, step_interval=10):
        if max_num_checkpoints < 1 or epoch_interval < 1 or step_interval < 1:
            raise ValueError("CheckpointConfig: max_num_checkpoints, epoch_interval and step_interval must be at "
                             "least 1")
        self.checkpoint_dir = checkpoint_dir or os.getcwd()
        self.max_num_checkpoints = max_num_checkpoints
        self.epoch_interval = epoch_interval
        self.step_interval = step_interval


def as_list(outputs):
    """A train_func's (or infer_func's) outputs as a list."""
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def feeder_for(program, feed_order, place):
    """A DataFeeder for program's variables named by feed_order (a list of names, or a dict
    of name -> position in a sample)."""
    if feed_order is None:
        raise ValueError("feed_order must name the data layers a sample's fields feed, in order")
    if isinstance(feed_order, dict):
        names = [name for name, _ in sorted(feed_order.items(), key=lambda item: item[1])]
    else:
        names = list(feed_order)
    block = program.global_block()
    return DataFeeder(feed_list=[block.var(name) for name in names], place=place, program=program)


class Trainer(object):
    def __init__(self, train_func, optimizer_func, param_path=None, place=None, parallel=False,
                 checkpoint_config=None):
        if checkpoint_config is not None and not isinstance(checkpoint_config, CheckpointConfig):
            raise TypeError("checkpoint_config must be a CheckpointConfig")
        self.place = place if place is not None else core.CPUPlace()
        self.parallel = parallel
        self.checkpoint_config = checkpoint_config
        self.scope = core.Scope()
        self.startup_program = framework.Program()
        self.train_program = framework.Program()
        # One naming guard for the net and the optimizer: a Trainer built again from the same
        # functions names its variables alike, so that it can read this one's checkpoints.
        with framework.program_guard(self.train_program, self.startup_program), unique_name.guard():
            self.train_func_outputs = as_list(train_func())
            self.test_program = self.train_program.clone(for_test=True)
            optimizer = optimizer_func()
            if not hasattr(optimizer, "minimize"):
                raise TypeError("optimizer_func must return a fluid.optimizer.Optimizer, got %r" % (optimizer,))
            optimizer.minimize(self.train_func_outputs[0])
        self.exe = executor.Executor(self.place)
        self._stopped = False
        self._resume_at = (0, 0)
        with executor.scope_guard(self.scope):
            self.exe.run(self.startup_program)
            if param_path is not None and os.path.isdir(param_path):
                io.load_persistables(self.exe, param_path, main_program=self.startup_program)
            if checkpoint_config is not None:
                self._resume_at = self._load_checkpoint()

    def stop(self):
        """Ends train() after the step now running."""
        self._stopped = True

    def train(self, num_epochs, event_handler, reader=None, feed_order=None):
        feeder = feeder_for(self.train_program, feed_order, self.place)
        first_epoch, first_step = self._resume_at
        self._stopped = False
        with executor.scope_guard(self.scope):
            for epoch in range(first_epoch, num_epochs):
                event_handler(BeginEpochEvent(epoch))
                for step, data in enumerate(reader()):
                    if epoch == first_epoch and step < first_step:
                        continue  # done before the checkpoint this Trainer resumed from
                    begin = BeginStepEvent(epoch, step)
                    event_handler(begin)
                    fetch = self.train_func_outputs if begin.fetch_metrics else []
                    metrics = self.exe.run(self.train_program, feed=feeder.feed(data), fetch_list=fetch)
                    event_handler(EndStepEvent(epoch, step, metrics))
                    if self.checkpoint_config and (step + 1) % self.checkpoint_config.step_interval == 0:
                        self._save_checkpoint(epoch, step + 1)
                    if self._stopped:
                        return
                event_handler(EndEpochEvent(epoch))
                if self.checkpoint_config and (epoch + 1) % self.checkpoint_config.epoch_interval == 0:
                    self._save_checkpoint(epoch + 1, 0)
        if self.checkpoint_config:
            self._clean_checkpoints()

    def test(self, reader, feed_order):
        """The mean over reader's batches of each of train_func's outputs, on the test program."""
        feeder = feeder_for(self.test_program, feed_order, self.place)
        totals, count = None, 0
        with executor.scope_guard(self.scope):
            for data in reader():
                outs = self.exe.run(self.test_program, feed=feeder.feed(data),
                                    fetch_list=[v.name for v in self.train_func_outputs])
                values = [float(o.reshape(-1)[0]) for o in outs]
                totals = values if totals is None else [t + v for t, v in zip(totals, values)]
                count += 1
        if count == 0:
            raise ValueError("Trainer.test: the reader gave no batches")
        return [t / count for t in totals]

    def save_params(self, param_path):
        """The persistable variables (parameters and optimizer state), for Inferencer or a
        later Trainer's param_path."""
        with executor.scope_guard(self.scope):
            io.save_persistables(self.exe, param_path, main_program=self.startup_program)

    # Checkpoints: checkpoint_dir/checkpoint_N holds the persistables and position.json.
    def _checkpoints(self):
        d = self.checkpoint_config.checkpoint_dir
        if not os.path.isdir(d):
            return []
        serials = [int(n[len("checkpoint_"):]) for n in os.listdir(d)
                   if n.startswith("checkpoint_") and n[len("checkpoint_"):].isdigit()
                   and os.path.exists(os.path.join(d, n, "position.json"))]
        return [os.path.join(d, "checkpoint_%d" % s) for s in sorted(serials)]

    def _save_checkpoint(self, epoch, step):
        existing = self._checkpoints()
        serial = int(os.path.basename(existing[-1])[len("checkpoint_"):]) + 1 if existing else 0
        path = os.path.join(self.checkpoint_config.checkpoint_dir, "checkpoint_%d" % serial)
        io.save_persistables(self.exe, path, main_program=self.train_program)
        # position.json last: a checkpoint without it is incomplete and not resumed from.
        with open(os.path.join(path, "position.json"), "w") as f:
            json.dump({"epoch": epoch, "step": step}, f)
        for old in existing[:max(0, len(existing) + 1 - self.checkpoint_config.max_num_checkpoints)]:
            shutil.rmtree(old, ignore_errors=True)

    def _load_checkpoint(self):
        existing = self._checkpoints()
        if not existing:
            return (0, 0)
        io.load_persistables(self.exe, existing[-1], main_program=self.train_program)
        with open(os.path.join(existing[-1], "position.json")) as f:
            position = json.load(f)
        return (position["epoch"], position["step"])

    def _clean_checkpoints(self):
        for path in self._checkpoints():
            shutil.rmtree(path, ignore_errors=True)
