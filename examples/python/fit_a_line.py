"""Fluid's fit_a_line (Paddle book chapter 1) on synthetic data: linear regression of y on
13 features, trained with SGD until the weights match the ones the data was made with.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/fit_a_line.py
"""
import numpy as np

import rill.fluid as fluid


def main():
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    y_predict = fluid.layers.fc(input=x, size=1, act=None)
    cost = fluid.layers.square_error_cost(input=y_predict, label=y)
    avg_cost = fluid.layers.mean(cost)
    fluid.optimizer.SGD(learning_rate=0.01).minimize(avg_cost)

    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    rng = np.random.RandomState(0)
    w_true = rng.randn(13, 1).astype("float32")
    for step in range(500):
        xs = rng.randn(32, 13).astype("float32")
        loss, = exe.run(feed={"x": xs, "y": xs @ w_true + 0.5}, fetch_list=[avg_cost])
        if step % 100 == 0:
            print("step %d: loss %.6f" % (step, loss[0]))
    w = fluid.fetch_var("fc_0.w_0")
    b = fluid.fetch_var("fc_0.b_0")
    print("max |w - w_true| = %.4f, b = %.4f (true 0.5)" % (np.abs(w - w_true).max(), b[0]))
    assert np.abs(w - w_true).max() < 0.02 and abs(b[0] - 0.5) < 0.02
    fluid.io.save_inference_model("fit_a_line.model", ["x"], [y_predict], exe)
    print("saved the model to fit_a_line.model/ (run it: rill run fit_a_line.model --feed x=x.npy)")


if __name__ == "__main__":
    main()
