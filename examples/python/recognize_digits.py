"""Fluid's recognize_digits (Paddle book chapter 2), the MLP and the conv net as the book
writes them, trained with Adam on synthetic 28x28 "digits" (ten fixed stroke patterns plus
noise), tested, and saved with save_inference_model.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/recognize_digits.py [mlp|conv]
"""
import sys

import numpy as np

import rill.fluid as fluid


def synthetic_digits(n, seed, size=28):
    blocks = np.random.RandomState(1234).rand(10, 1, 7, 7)
    prototypes = np.kron(blocks, np.ones((size // 7, size // 7))).astype("float32")
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 10, size=(n, 1)).astype("int64")
    return prototypes[labels[:, 0]] + 0.5 * rng.randn(n, 1, size, size).astype("float32"), labels


def multilayer_perceptron(img):
    hidden = fluid.layers.fc(input=img, size=200, act="tanh")
    hidden = fluid.layers.fc(input=hidden, size=200, act="tanh")
    return fluid.layers.fc(input=hidden, size=10, act="softmax")


def convolutional_neural_network(img):
    conv_pool_1 = fluid.nets.simple_img_conv_pool(input=img, filter_size=5, num_filters=20, pool_size=2,
                                                  pool_stride=2, act="relu")
    conv_pool_1 = fluid.layers.batch_norm(conv_pool_1)
    conv_pool_2 = fluid.nets.simple_img_conv_pool(input=conv_pool_1, filter_size=5, num_filters=50, pool_size=2,
                                                  pool_stride=2, act="relu")
    return fluid.layers.fc(input=conv_pool_2, size=10, act="softmax")


def train(net, exe, examples=2048, epochs=2, log=print):
    """Builds the training program around ``net`` (cross entropy, accuracy, Adam) in the
    default programs, trains it on synthetic digits and tests it; returns the prediction,
    the test program and the test accuracy."""
    img = fluid.layers.data(name="img", shape=[1, 28, 28], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    prediction = net(img)
    loss = fluid.layers.cross_entropy(input=prediction, label=label)
    avg_loss = fluid.layers.mean(loss)
    acc = fluid.layers.accuracy(input=prediction, label=label)
    test_program = fluid.default_main_program().clone(for_test=True)
    fluid.optimizer.Adam(learning_rate=0.001).minimize(avg_loss)

    exe.run(fluid.default_startup_program())
    feeder = fluid.DataFeeder(feed_list=[img, label], place=fluid.CPUPlace())
    images, labels = synthetic_digits(examples, seed=1)
    for epoch in range(epochs):
        for start in range(0, len(images), 64):
            batch = list(zip(images[start:start + 64], labels[start:start + 64]))
            loss_v, acc_v = exe.run(feed=feeder.feed(batch), fetch_list=[avg_loss, acc])
        log("epoch %d: loss %.4f, train accuracy %.3f" % (epoch, loss_v[0], acc_v[0]))
    test_images, test_labels = synthetic_digits(1000, seed=2)
    test_acc, = exe.run(test_program, feed={"img": test_images, "label": test_labels}, fetch_list=[acc])
    return prediction, test_program, float(test_acc[0])


def main(net_name):
    net = {"mlp": multilayer_perceptron, "conv": convolutional_neural_network}[net_name]
    exe = fluid.Executor(fluid.CPUPlace())
    prediction, _, accuracy = train(net, exe)
    print("test accuracy %.3f" % accuracy)
    assert accuracy > 0.9
    fluid.io.save_inference_model("recognize_digits_%s.model" % net_name, ["img"], [prediction], exe)
    print("saved the model to recognize_digits_%s.model/" % net_name)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "conv")
