"""A dygraph layer's and optimizer's state: Layer.state_dict by structured name,
set_state_dict, and fluid.save_dygraph / load_dygraph in Paddle's files; training resumed
from them continues exactly as the uninterrupted run."""
import pickle
import warnings

import numpy as np
import pytest

import rill.fluid as fluid
import rill.paddle as paddle

XS = np.random.RandomState(5).randn(6, 3).astype("float32")


class Net(fluid.dygraph.Layer):
    def __init__(self):
        super(Net, self).__init__()
        self.fc = paddle.nn.Linear(3, 4)
        self.bn = fluid.dygraph.BatchNorm(4)
        self.heads = [paddle.nn.Linear(4, 1, bias_attr=False)]

    def forward(self, x):
        return self.heads[0](self.bn(self.fc(x)))


def _model_and_optimizer():
    net = Net()
    scheduler = paddle.optimizer.lr.NoamDecay(d_model=0.5, warmup_steps=4)
    adam = fluid.optimizer.Adam(learning_rate=scheduler, parameter_list=net.parameters(), use_global_beta_pow=True)
    return net, adam, scheduler


def _step(net, adam, scheduler):
    loss = paddle.mean(net(paddle.to_tensor(XS)) ** 2)
    loss.backward()
    adam.minimize(loss)
    net.clear_gradients()
    scheduler.step()


def _values(net):
    return {k: v.numpy() for k, v in net.state_dict().items()}


def test_state_dict_names_each_parameter_by_its_attribute_path():
    with fluid.dygraph.guard():
        net = Net()
        state = net.state_dict()
        assert list(state) == ["fc.weight", "fc.bias", "bn.weight", "bn.bias", "bn._mean", "bn._variance",
                               "heads.0.weight"]
        assert state["fc.weight"] is net.fc.weight and state["bn._variance"] is net.bn._variance
        assert [p.name for p in net.parameters()] == [p.name for p in state.values()]


def test_training_resumed_from_saved_files_continues_as_the_uninterrupted_run(tmp_path):
    prefix = str(tmp_path / "ckpt" / "model")
    with fluid.dygraph.guard():
        net, adam, scheduler = _model_and_optimizer()
        for _ in range(3):
            _step(net, adam, scheduler)
        fluid.save_dygraph(net.state_dict(), prefix)
        fluid.save_dygraph(adam.state_dict(), prefix)
        _step(net, adam, scheduler)
        want = _values(net)
    with fluid.dygraph.guard():
        net, adam, scheduler = _model_and_optimizer()
        params, opt_state = fluid.load_dygraph(prefix)
        net.set_state_dict(params)
        adam.set_state_dict(opt_state)
        assert scheduler.last_epoch == 3
        _step(net, adam, scheduler)  # makes the accumulators, then the loaded state must be what they hold
        got = _values(net)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)


def test_the_files_are_paddles_pickles(tmp_path):
    prefix = str(tmp_path / "model")
    with fluid.dygraph.guard():
        net = Net()
        fluid.save_dygraph(net.state_dict(), prefix)
        with open(prefix + ".pdparams", "rb") as f:
            saved = pickle.load(f)
        table = saved.pop("StructuredToParameterName@@")
        assert set(saved) == set(net.state_dict()) and table["fc.weight"] == net.fc.weight.name
        np.testing.assert_array_equal(saved["fc.weight"], net.fc.weight.numpy())
        params, opt = fluid.load_dygraph(prefix + ".pdparams")
        assert opt is None and set(params) == set(saved)


def test_bad_state_is_refused_naming_it(tmp_path):
    with fluid.dygraph.guard():
        net = Net()
        state = _values(net)
        state["fc.bias"] = np.zeros(5, "float32")
        with pytest.raises(ValueError, match=r"fc.bias \(.*\) is float32 \[4\], the state dict gives float32 \[5\]"):
            net.set_state_dict(state)
        del state["fc.bias"]
        state["fc.weight"] = state["fc.weight"] * 0 + 2
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            net.set_state_dict(state)
        assert any("fc.bias" in str(w.message) for w in caught)
        np.testing.assert_array_equal(net.fc.weight.numpy(), 2)  # the rest was set
        with pytest.raises(ValueError, match="neither .*missing.pdparams nor .*missing.pdopt exists"):
            fluid.load_dygraph(str(tmp_path / "missing"))
        (tmp_path / "cut.pdparams").write_bytes(pickle.dumps({"w": np.ones(3)}, protocol=2)[:20])
        with pytest.raises(ValueError, match="cut.pdparams is not a state Paddle or Rill saved"):
            fluid.load_dygraph(str(tmp_path / "cut"))
        with pytest.raises(ValueError, match="empty"):
            fluid.save_dygraph({}, str(tmp_path / "empty"))


def test_paddle_save_and_load_round_trip_a_state_dict_and_nested_tensors(tmp_path):
    path = str(tmp_path / "sub" / "net.pdparams")
    with fluid.dygraph.guard():
        net = Net()
        paddle.save(net.state_dict(), path, protocol=2)
        loaded = paddle.load(path)
        assert set(loaded) == set(net.state_dict())
        assert isinstance(loaded["fc.weight"], fluid.Variable)  # tensors in dynamic mode
        other = Net()
        other.set_state_dict(loaded)
        for (name, a), b in zip(net.state_dict().items(), other.state_dict().values()):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
        # what fluid.save_dygraph wrote reads the same, and the other way
        fluid.save_dygraph(net.state_dict(), str(tmp_path / "dy"))
        assert set(paddle.load(str(tmp_path / "dy.pdparams"), return_numpy=True)) == set(loaded)
        paddle.save({"step": 3, "pair": [net.fc.bias, np.arange(2)]}, str(tmp_path / "misc"))
        misc = paddle.load(str(tmp_path / "misc"), return_numpy=True)
        assert misc["step"] == 3 and isinstance(misc["pair"], list)
        np.testing.assert_array_equal(misc["pair"][0], net.fc.bias.numpy())
        with pytest.raises(ValueError, match="protocol must be 2, 3 or 4"):
            paddle.save(net.state_dict(), path, protocol=1)
