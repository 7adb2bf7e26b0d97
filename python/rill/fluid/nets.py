"""fluid.nets: layer compositions."""
from rill.fluid import layers

__all__ = ["simple_img_conv_pool", "img_conv_group", "sequence_conv_pool", "glu", "scaled_dot_product_attention"]


def simple_img_conv_pool(input, num_filters, filter_size, pool_size, pool_stride, pool_padding=0, pool_type="max",
                         global_pooling=False, conv_stride=1, conv_padding=0, conv_dilation=1, conv_groups=1,
                         param_attr=None, bias_attr=None, act=None, use_cudnn=True, use_mkldnn=False):
    """conv2d (with bias and ``act``), then pool2d."""
    conv_out = layers.conv2d(input=input, num_filters=num_filters, filter_size=filter_size, stride=conv_stride,
                             padding=conv_padding, dilation=conv_dilation, groups=conv_groups,
                             param_attr=param_attr, bias_attr=bias_attr, act=act, use_cudnn=use_cudnn,
                             use_mkldnn=use_mkldnn)
    return layers.pool2d(input=conv_out, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
                         pool_padding=pool_padding, global_pooling=global_pooling, use_cudnn=use_cudnn,
                         use_mkldnn=use_mkldnn)


def img_conv_group(input, conv_num_filter, pool_size, conv_padding=1, conv_filter_size=3, conv_act=None,
                   param_attr=None, conv_with_batchnorm=False, conv_batchnorm_drop_rate=0.0, pool_stride=1,
                   pool_type="max", use_cudnn=True, use_mkldnn=False):
    """A VGG block: one conv2d per entry of conv_num_filter (each, with conv_with_batchnorm,
    followed by batch_norm carrying conv_act and, for a drop rate above 0, dropout; else
    conv_act on the conv), then pool2d. The per-conv arguments take one value for all or a
    list with one per conv."""
    if not isinstance(conv_num_filter, (list, tuple)):
        raise TypeError("img_conv_group: conv_num_filter must be a list or tuple, got %r" % (conv_num_filter,))

    def per_conv(value, name):
        if not hasattr(value, "__len__"):
            return [value] * len(conv_num_filter)
        if len(value) != len(conv_num_filter):
            raise ValueError("img_conv_group: %s has %d entries for %d convolutions"
                             % (name, len(value), len(conv_num_filter)))
        return list(value)

    paddings = per_conv(conv_padding, "conv_padding")
    sizes = per_conv(conv_filter_size, "conv_filter_size")
    attrs = per_conv(param_attr, "param_attr")
    with_bn = per_conv(conv_with_batchnorm, "conv_with_batchnorm")
    drops = per_conv(conv_batchnorm_drop_rate, "conv_batchnorm_drop_rate")
    tmp = input
    for i, filters in enumerate(conv_num_filter):
        tmp = layers.conv2d(input=tmp, num_filters=filters, filter_size=sizes[i], padding=paddings[i],
                            param_attr=attrs[i], act=None if with_bn[i] else conv_act, use_cudnn=use_cudnn,
                            use_mkldnn=use_mkldnn)
        if with_bn[i]:
            tmp = layers.batch_norm(input=tmp, act=conv_act)
            if abs(drops[i]) > 1e-5:
                tmp = layers.dropout(x=tmp, dropout_prob=drops[i])
    return layers.pool2d(input=tmp, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
                         use_cudnn=use_cudnn, use_mkldnn=use_mkldnn)


def sequence_conv_pool(input, num_filters, filter_size, param_attr=None, act="sigmoid", pool_type="max",
                       bias_attr=None):
    """sequence_conv (with bias and ``act``) over each sequence of a LoD tensor, then
    sequence_pool: one row per sequence."""
    conv_out = layers.sequence_conv(input=input, num_filters=num_filters, filter_size=filter_size,
                                    param_attr=param_attr, bias_attr=bias_attr, act=act)
    return layers.sequence_pool(input=conv_out, pool_type=pool_type)


def glu(input, dim=-1):
    """The gated linear unit: ``input`` split in halves a, b along ``dim``; a * sigmoid(b)."""
    a, b = layers.split(input, num_or_sections=2, dim=dim)
    return layers.elementwise_mul(x=a, y=layers.sigmoid(x=b))


def scaled_dot_product_attention(queries, keys, values, num_heads=1, dropout_rate=0.0):
    """Attention of each query over the keys: softmax(q k^T / sqrt(d)) v, for queries [N, Lq, D],
    keys [N, Lk, D] and values [N, Lk, Dv]; returns [N, Lq, Dv]. With num_heads > 1, queries,
    keys and values first pass through an fc each (their own width, with bias), and D and Dv
    split into num_heads heads of D / num_heads (d, the scale's) and Dv / num_heads attending
    apart, their results joined again. dropout_rate drops attention weights (in training)."""
    for name, x in (("queries", queries), ("keys", keys), ("values", values)):
        if len(x.shape) != 3:
            raise ValueError("scaled_dot_product_attention: %s must be 3-D [batch, length, width], got %s"
                             % (name, list(x.shape)))
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError("scaled_dot_product_attention: queries' width %d must be keys' %d"
                         % (queries.shape[-1], keys.shape[-1]))
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError("scaled_dot_product_attention: keys' length %d must be values' %d"
                         % (keys.shape[-2], values.shape[-2]))
    for name, x in (("keys", keys), ("values", values)):
        if x.shape[-1] % num_heads != 0:
            raise ValueError("scaled_dot_product_attention: %s' width %d is not divisible by num_heads %d"
                             % (name, x.shape[-1], num_heads))

    def heads(x):
        """[N, L, W] -> [N, heads, L, W / heads]."""
        if num_heads == 1:
            return x
        x = layers.fc(input=x, size=x.shape[-1], num_flatten_dims=2)
        split = layers.reshape(x, shape=[0, 0, num_heads, x.shape[-1] // num_heads])
        return layers.transpose(split, perm=[0, 2, 1, 3])

    q, k, v = heads(queries), heads(keys), heads(values)
    scaled = layers.scale(q, scale=(keys.shape[-1] // num_heads) ** -0.5)
    weights = layers.softmax(layers.matmul(scaled, k, transpose_y=True))
    if dropout_rate:
        weights = layers.dropout(weights, dropout_prob=dropout_rate, is_test=False)
    context = layers.matmul(weights, v)
    if num_heads == 1:
        return context
    joined = layers.transpose(context, perm=[0, 2, 1, 3])
    return layers.reshape(joined, shape=[0, 0, values.shape[-1]])
