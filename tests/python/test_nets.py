"""fluid.nets.scaled_dot_product_attention against PyTorch: one head (softmax(q k^T / sqrt(d)) v,
torch's own scaled dot product written out) and four (the fc projections' parameters fetched
and the heads computed in PyTorch), forward and the inputs' gradients."""
import numpy as np
import pytest
import torch

import rill.fluid as fluid

N, LQ, LK, D, DV = 2, 3, 5, 8, 12


def torch_attention(q, k, v, heads):
    """[N, L, W] inputs split into heads of W / heads; softmax(q k^T / sqrt(D / heads)) v, the
    scale rounded to float32 as the scale op's attribute holds it."""
    def split(x):
        return x.reshape(x.shape[0], x.shape[1], heads, -1).transpose(1, 2)
    scale = float(np.float32((D // heads) ** -0.5))
    weights = torch.softmax(split(q) @ split(k).transpose(-1, -2) * scale, -1)
    out = weights @ split(v)
    return out.transpose(1, 2).reshape(N, LQ, DV)


@pytest.mark.parametrize("heads", [1, 4])
def test_scaled_dot_product_attention_matches_pytorch(heads):
    rng = np.random.RandomState(heads)
    values = {"q": rng.uniform(-1, 1, (N, LQ, D)), "k": rng.uniform(-1, 1, (N, LK, D)),
              "v": rng.uniform(-1, 1, (N, LK, DV))}
    g = rng.uniform(-1, 1, (N, LQ, DV))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        q, k, v = (fluid.layers.create_parameter(list(values[n].shape), "float64", name=n) for n in "qkv")
        weight = fluid.layers.data(name="g", shape=[N, LQ, DV], dtype="float64", append_batch_size=False)
        out = fluid.nets.scaled_dot_product_attention(q, k, v, num_heads=heads)
        fluid.backward.append_backward(fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, weight)))
    fcs = ["fc_%d.%s_0" % (i, kind) for i in range(3) for kind in "wb"] if heads > 1 else []
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        for name, value in values.items():
            scope.find_var(name).get_tensor().set(value, fluid.CPUPlace())
        params = {name: np.array(scope.find_var(name).get_tensor()) for name in fcs}
        got = exe.run(main, feed={"g": g}, fetch_list=[out, "q@GRAD", "k@GRAD", "v@GRAD"])
    t = {n: torch.tensor(values[n], requires_grad=True) for n in "qkv"}
    projected = [t[n] @ torch.from_numpy(params["fc_%d.w_0" % i]) + torch.from_numpy(params["fc_%d.b_0" % i])
                 if heads > 1 else t[n] for i, n in enumerate("qkv")]
    want = torch_attention(*projected, heads)
    (want * torch.from_numpy(g)).sum().backward()
    assert got[0].shape == (N, LQ, DV)
    np.testing.assert_allclose(got[0], want.detach().numpy(), rtol=1e-10, atol=1e-12)
    for i, n in enumerate("qkv"):
        np.testing.assert_allclose(got[1 + i], t[n].grad.numpy(), rtol=1e-9, atol=1e-12)


def test_scaled_dot_product_attention_refuses_mismatched_inputs():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        q = fluid.layers.data(name="q", shape=[3, 8], dtype="float32")
        k = fluid.layers.data(name="k", shape=[5, 6], dtype="float32")
        with pytest.raises(ValueError, match="queries' width 8 must be keys' 6"):
            fluid.nets.scaled_dot_product_attention(q, k, k)
        with pytest.raises(ValueError, match="not divisible by num_heads 4"):
            fluid.nets.scaled_dot_product_attention(k, k, k, num_heads=4)
