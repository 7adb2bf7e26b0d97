"""fluid.core: the runtime's types, as Fluid's C++ core module offered them.

``ProgramDesc``, ``BlockDesc``, ``OpDesc`` and ``VarDesc`` (fluid/desc.py; ``VarDesc.VarType``
and ``AttrType`` are framework.proto's type numbers), ``op_proto_and_checker_maker`` (the
op role attributes' names and ``OpRole``), places, ``Scope`` and ``LoDTensor`` (the
runtime's own, through the extension module), ``is_compiled_with_cuda``,
``set_feed_variable``/``get_fetch_variable`` (a feed or fetch list's columns), and
``EnforceNotMet`` (Fluid's runtime error; here ``rill.Error``).
"""
from rill import _rill
from rill.errors import Error as EnforceNotMet
from rill.fluid.desc import BlockDesc, OpDesc, ProgramDesc, VarDesc, numbers_by_name  # noqa: F401
from rill.proto import framework_pb2

Scope = _rill.Scope
LoDTensor = _rill.Tensor
LoDTensorArray = _rill.LoDTensorArray  # a scope variable's get_lod_tensor_array()
LoDRankTable = _rill.LoDRankTable  # a scope variable's get_lod_rank_table()
Tensor = _rill.Tensor
set_feed_variable = _rill.set_feed_variable
get_fetch_variable = _rill.get_fetch_variable


class AttrType(object):
    """framework.proto's attribute types (an op's ``attr_type``), by name."""


numbers_by_name(AttrType, framework_pb2.AttrType)


class op_proto_and_checker_maker(object):
    """The attributes Fluid gives every op beside its schema's: its role and the variables
    that role is for."""

    class OpRole(object):
        """The roles Fluid gives ops (``op_role``; its op_proto_maker.h numbers): a bit set,
        Loss combined with Forward (the loss's op) or Backward (the loss gradient's fill)."""
        Forward = 0x0000
        Backward = 0x0001
        Optimize = 0x0002
        RPC = 0x0003
        Loss = 0x0100
        NotSpecified = 0x1000  # an op whose desc records no role

    @staticmethod
    def kOpRoleAttrName():
        return "op_role"

    @staticmethod
    def kOpRoleVarAttrName():
        return "op_role_var"


_CUDA = 1  # rill/abi.h's RILL_CUDA


class CPUPlace(object):
    def __eq__(self, other):
        return isinstance(other, CPUPlace)

    def __repr__(self):
        return "CPUPlace"


class CUDAPlace(object):
    def __init__(self, device_id=0):
        self.device_id = device_id

    def __eq__(self, other):
        return isinstance(other, CUDAPlace) and other.device_id == self.device_id

    def __repr__(self):
        return "CUDAPlace(%d)" % self.device_id


class CUDAPinnedPlace(CPUPlace):
    pass


def is_compiled_with_cuda():
    """Whether a loaded plugin drives CUDA devices (the math_cuda plugin, built where the
    CUDA toolkit was found), whether or not one is present."""
    return _rill.device_count(_CUDA) >= 0


def get_cuda_device_count():
    """How many CUDA devices are present (0 without the CUDA plugin)."""
    return max(_rill.device_count(_CUDA), 0)
