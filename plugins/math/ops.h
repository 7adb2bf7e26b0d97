// plugins/math/ops.h — registration functions of the math plugin's ops, one per file.
#ifndef RILL_PLUGINS_MATH_OPS_H_
#define RILL_PLUGINS_MATH_OPS_H_

#include "rill/sdk.hpp"

namespace rill::math {

// The dtypes the math kernels are built for, in one list so every op agrees.
#define RILL_MATH_NUMERIC_TYPES float, double, int32_t, int64_t

void RegisterFillConstant(Registrar& r);
void RegisterAssign(Registrar& r);
void RegisterIncrement(Registrar& r);
void RegisterCompare(Registrar& r);
void RegisterElementwise(Registrar& r);
void RegisterPrint(Registrar& r);
void RegisterActivation(Registrar& r);
void RegisterReshape(Registrar& r);
void RegisterLookupTable(Registrar& r);
void RegisterNorm(Registrar& r);
void RegisterDropout(Registrar& r);
void RegisterTopK(Registrar& r);
void RegisterSlice(Registrar& r);
void RegisterPool(Registrar& r);
void RegisterPoolWithIndex(Registrar& r);
void RegisterTrilTriu(Registrar& r);
void RegisterIndexSample(Registrar& r);
void RegisterScatter(Registrar& r);
void RegisterGatherScatterNd(Registrar& r);
void RegisterStridedSlice(Registrar& r);
void RegisterConv(Registrar& r);
void RegisterReduce(Registrar& r);
void RegisterMatMul(Registrar& r);
void RegisterSoftmax(Registrar& r);
void RegisterRandom(Registrar& r);
void RegisterConcatSplit(Registrar& r);
void RegisterOptimizers(Registrar& r);
void RegisterGather(Registrar& r);
void RegisterOneHot(Registrar& r);
void RegisterWhere(Registrar& r);
void RegisterSigmoidCrossEntropy(Registrar& r);
void RegisterPad(Registrar& r);
void RegisterPrelu(Registrar& r);
void RegisterInterp(Registrar& r);
void RegisterGroupNorm(Registrar& r);
void RegisterGradClip(Registrar& r);
void RegisterSelectedRowsOps(Registrar& r);
void RegisterFlipRoll(Registrar& r);
void RegisterYoloBox(Registrar& r);
void RegisterMulticlassNms(Registrar& r);
void RegisterMatrixNms(Registrar& r);
void RegisterPriorBox(Registrar& r);
void RegisterBoxCoder(Registrar& r);
void RegisterIouSimilarity(Registrar& r);
void RegisterRoiAlign(Registrar& r);
void RegisterTensorArray(Registrar& r);
void RegisterLodRankTable(Registrar& r);
void RegisterBeamSearch(Registrar& r);
void RegisterWarpCtc(Registrar& r);
void RegisterSplitMergeLodTensor(Registrar& r);
void RegisterNce(Registrar& r);
void RegisterHierarchicalSigmoid(Registrar& r);
void RegisterLrn(Registrar& r);
void RegisterMaxout(Registrar& r);
void RegisterSequencePool(Registrar& r);
void RegisterSequenceConv(Registrar& r);
void RegisterSequenceExpand(Registrar& r);
void RegisterSequenceReverse(Registrar& r);
void RegisterSequenceSoftmax(Registrar& r);
void RegisterSequencePad(Registrar& r);
void RegisterSequenceMask(Registrar& r);
void RegisterSequenceConcat(Registrar& r);
void RegisterSequenceReshape(Registrar& r);
void RegisterSequenceSlice(Registrar& r);
void RegisterSequenceEnumerate(Registrar& r);
void RegisterSequenceErase(Registrar& r);
void RegisterSequenceScatter(Registrar& r);
void RegisterLodReset(Registrar& r);
void RegisterIm2Sequence(Registrar& r);
void RegisterRowConv(Registrar& r);
void RegisterLstm(Registrar& r);
void RegisterGru(Registrar& r);
void RegisterLstmUnit(Registrar& r);
void RegisterLstmp(Registrar& r);
void RegisterL2Norm(Registrar& r);
void RegisterMeanIou(Registrar& r);
void RegisterMultiplex(Registrar& r);
void RegisterRoiPool(Registrar& r);
void RegisterSmoothL1Loss(Registrar& r);
void RegisterPolygonBoxTransform(Registrar& r);
void RegisterCosSim(Registrar& r);
void RegisterLinearChainCrf(Registrar& r);
void RegisterChunkEval(Registrar& r);
void RegisterEditDistance(Registrar& r);
void RegisterCtcAlign(Registrar& r);

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_OPS_H_
