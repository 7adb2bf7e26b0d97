#!/usr/bin/env python3
"""Writes Go's daisy chain as Fluid's Python writes it, unrolled: one channel and one `go`
block per link (Fluid 0.14's `with fluid.Go():` inside a Python for loop), every variable
declared in the block that makes it. The program the executor must hold in memory grows
with the links, which is what it measures: what a prepared block and op cost.

usage: bench/unrolled_daisy_chain.py LINKS OUT.pbtxt
then:  build/bin/rill convert OUT.pbtxt -o OUT.pb
       /usr/bin/time -v build/bin/rill run OUT.pb --fetch result     (result: LINKS + 1)
"""
import sys

links, out = int(sys.argv[1]), sys.argv[2]


def var(name, kind):
    if kind == "channel":
        return (f'  vars {{ name: "{name}" type {{ type: CHANNEL channel {{ data_type: LOD_TENSOR capacity: 0 }} }} }}\n')
    dtype = "BOOL" if kind == "bool" else "INT64"
    return f'  vars {{ name: "{name}" type {{ type: LOD_TENSOR lod_tensor {{ tensor {{ data_type: {dtype} dims: 1 }} }} }} }}\n'


def args(names):
    return " ".join(f'arguments: "{a}"' for a in names)


def op(type_, inputs=(), outputs=(), attrs=""):
    """inputs, outputs: (slot, name or list of names)."""
    listed = lambda a: [a] if isinstance(a, str) else a
    slots = "".join(f'    inputs {{ parameter: "{p}" {args(listed(a))} }}\n' for p, a in inputs)
    slots += "".join(f'    outputs {{ parameter: "{p}" {args(listed(a))} }}\n' for p, a in outputs)
    return f'  ops {{\n{slots}    type: "{type_}"\n{attrs}  }}\n'


def fill(name, value):
    return op("fill_constant", outputs=[("Out", name)],
              attrs=f'    attrs {{ name: "shape" type: INTS ints: 1 }}\n'
                    f'    attrs {{ name: "dtype" type: INT i: 3 }}\n'
                    f'    attrs {{ name: "value" type: FLOAT f: {value} }}\n')


def create(name):
    return op("channel_create", outputs=[("Out", name)],
              attrs='    attrs { name: "data_type" type: INT i: 7 }\n    attrs { name: "capacity" type: INT i: 0 }\n')


def go(block, captured):
    return op("go", inputs=[("X", captured)],
              attrs=f'    attrs {{ name: "sub_block" type: BLOCK block_idx: {block} }}\n')


with open(out, "w") as f:
    main = [var("ch0", "channel"), var("result", "int"), var("status", "bool"), create("ch0")]
    blocks = []
    for i in range(links):
        left, right = f"ch{i}", f"ch{i + 1}"
        main += [var(right, "channel"), create(right), go(i + 1, [left, right])]
        blocks.append(f"blocks {{\n  idx: {i + 1}\n  parent_idx: 0\n"
                      + var(f"one{i}", "int") + var(f"got{i}", "int") + var(f"more{i}", "int")
                      + var(f"ok{i}", "bool") + fill(f"one{i}", 1)
                      + op("channel_recv", [("Channel", right)], [("Out", f"got{i}"), ("Status", f"ok{i}")])
                      + op("elementwise_add", [("X", f"got{i}"), ("Y", f"one{i}")], [("Out", f"more{i}")])
                      + op("channel_send", [("Channel", left), ("X", f"more{i}")])
                      + "}\n")
    last = links + 1
    main += [go(last, [f"ch{links}"]),
             op("channel_recv", [("Channel", "ch0")], [("Out", "result"), ("Status", "status")])]
    blocks.append(f"blocks {{\n  idx: {last}\n  parent_idx: 0\n" + var("first", "int") + fill("first", 1)
                  + op("channel_send", [("Channel", f"ch{links}"), ("X", "first")]) + "}\n")
    f.write("blocks {\n  idx: 0\n  parent_idx: -1\n" + "".join(main) + "}\n" + "".join(blocks))
