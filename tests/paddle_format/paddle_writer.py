"""Writes programs and tensors in Paddle's own file formats, byte by byte, without Paddle.

The encoder is independent of Rill's parser: protobuf's wire format by hand (varints,
length-delimited fields, proto2's unpacked repeated scalars, as Paddle's C++ protobuf
writes them) with framework.proto's field numbers as Paddle 2.x has them, and the
LoDTensor record of Paddle's save/save_combine ops. Tests use it to build models exactly
as Paddle saves them; benchmarks use it to build large ones.

Needs only the standard library (struct), so either python3 can run it.
"""
import struct

# framework.proto VarType.Type
BOOL, INT16, INT32, INT64, FP16, FP32, FP64 = 0, 1, 2, 3, 4, 5, 6
LOD_TENSOR, FEED_MINIBATCH, FETCH_LIST = 7, 9, 10
UINT8, INT8, BF16, COMPLEX64 = 20, 21, 22, 23
# framework.proto AttrType
A_INT, A_FLOAT, A_STRING, A_INTS, A_FLOATS, A_STRINGS, A_BOOLEAN = 0, 1, 2, 3, 4, 5, 6
A_LONG, A_LONGS, A_FLOAT64, A_SCALAR = 9, 11, 15, 16

ELEMENT_FORMAT = {FP32: "f", FP64: "d", INT32: "i", INT64: "q", INT8: "b", UINT8: "B",
                  BOOL: "?", INT16: "h", FP16: "e"}


def varint(n):
    n &= (1 << 64) - 1  # negative int32/int64 are ten-byte two's complement varints
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_varint(field, n):
    return varint(field << 3) + varint(n)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def f_float(field, x):
    return varint(field << 3 | 5) + struct.pack("<f", x)


def f_double(field, x):
    return varint(field << 3 | 1) + struct.pack("<d", x)


# ---- framework.proto messages ----------------------------------------------------------

def tensor_desc(dtype, dims):
    return f_varint(1, dtype) + b"".join(f_varint(2, d) for d in dims)


def var_desc(name, var_type, dtype=None, dims=(), persistable=False, need_check_feed=False,
             is_parameter=False, stop_gradient=False):
    vt = f_varint(1, var_type)
    if var_type == LOD_TENSOR:
        vt += f_bytes(3, f_bytes(1, tensor_desc(dtype, dims)) + f_varint(2, 0))
    out = f_bytes(1, name) + f_bytes(2, vt) + f_varint(3, int(persistable))
    if need_check_feed:
        out += f_varint(4, 1)
    if is_parameter:
        out += f_varint(5, 1)
    out += f_varint(6, int(stop_gradient))
    return out


def attr(name, kind, value):
    """One OpDesc.Attr; `kind` is an A_* type."""
    out = f_bytes(1, name) + f_varint(2, kind)
    if kind == A_INT:
        out += f_varint(3, value)
    elif kind == A_FLOAT:
        out += f_float(4, value)
    elif kind == A_STRING:
        out += f_bytes(5, value)
    elif kind == A_INTS:
        out += b"".join(f_varint(6, v) for v in value)
    elif kind == A_FLOATS:
        out += b"".join(f_float(7, v) for v in value)
    elif kind == A_STRINGS:
        out += b"".join(f_bytes(8, v) for v in value)
    elif kind == A_BOOLEAN:
        out += f_varint(10, int(value))
    elif kind == A_LONG:
        out += f_varint(13, value)
    elif kind == A_LONGS:
        out += b"".join(f_varint(15, v) for v in value)
    elif kind == A_FLOAT64:
        out += f_double(19, value)
    elif kind == A_SCALAR:  # value: a float, as Paddle writes a FLOAT64 scalar
        out += f_bytes(20, f_varint(1, 3) + f_double(4, value))
    else:
        raise ValueError("attribute kind %d" % kind)
    return out


def bookkeeping_attrs(role=0):
    """The attributes Paddle 2.x sets on every op it writes."""
    return [attr("op_role", A_INT, role), attr("op_role_var", A_STRINGS, []),
            attr("op_namescope", A_STRING, "/"),
            attr("op_callstack", A_STRINGS, ['  File "train.py", line 42, in <module>']),
            attr("op_device", A_STRING, ""), attr("with_quant_attr", A_BOOLEAN, False)]


def op_desc(op_type, inputs, outputs, attrs):
    """`inputs`/`outputs`: (slot, [names]) pairs in Paddle's order; a slot may be empty."""
    out = b"".join(f_bytes(1, f_bytes(1, slot) + b"".join(f_bytes(2, n) for n in names))
                   for slot, names in inputs)
    out += b"".join(f_bytes(2, f_bytes(1, slot) + b"".join(f_bytes(2, n) for n in names))
                    for slot, names in outputs)
    out += f_bytes(3, op_type)
    out += b"".join(f_bytes(4, a) for a in attrs)
    return out


def block_desc(idx, parent, vars_, ops):
    return (f_varint(1, idx) + f_varint(2, parent) +
            b"".join(f_bytes(3, v) for v in vars_) + b"".join(f_bytes(4, o) for o in ops))


def program_desc(blocks, op_versions=(), version=2004000):
    """Paddle 2.x layout: version in field 4, op_version_map in field 5."""
    out = b"".join(f_bytes(1, b) for b in blocks)
    out += f_bytes(4, f_varint(1, version))
    pairs = b"".join(f_bytes(1, f_bytes(1, name) + f_bytes(2, f_varint(1, v))) for name, v in op_versions)
    out += f_bytes(5, pairs)
    return out


# ---- Paddle's tensor file --------------------------------------------------------------

def lod_tensor_record(dtype, dims, values, lod=()):
    """One LoDTensor as Paddle's save op writes it. `values`: flat, row-major; `lod`: a list
    of levels, each a list of offsets; `values` may be raw bytes."""
    out = struct.pack("<I", 0) + struct.pack("<Q", len(lod))
    for level in lod:
        out += struct.pack("<Q", 8 * len(level)) + struct.pack("<%dQ" % len(level), *level)
    desc = tensor_desc(dtype, dims)
    out += struct.pack("<I", 0) + struct.pack("<i", len(desc)) + desc
    if isinstance(values, (bytes, bytearray, memoryview)):
        return out + bytes(values)
    return out + struct.pack("<%d%s" % (len(values), ELEMENT_FORMAT[dtype]), *values)
