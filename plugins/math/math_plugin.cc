// The math plugin: CPU kernels on Eigen for the ops control-flow programs and training
// need. Each family of ops lives in its own file and is registered from here.
#include "ops.h"

namespace {
void Init(rill::Registrar& r) {
  rill::math::RegisterFillConstant(r);
  rill::math::RegisterAssign(r);
  rill::math::RegisterIncrement(r);
  rill::math::RegisterCompare(r);
  rill::math::RegisterElementwise(r);
  rill::math::RegisterPrint(r);
  rill::math::RegisterActivation(r);
  rill::math::RegisterReshape(r);
  rill::math::RegisterLookupTable(r);
  rill::math::RegisterNorm(r);
  rill::math::RegisterDropout(r);
  rill::math::RegisterTopK(r);
  rill::math::RegisterSlice(r);
  rill::math::RegisterPool(r);
  rill::math::RegisterPoolWithIndex(r);
  rill::math::RegisterTrilTriu(r);
  rill::math::RegisterIndexSample(r);
  rill::math::RegisterScatter(r);
  rill::math::RegisterGatherScatterNd(r);
  rill::math::RegisterStridedSlice(r);
  rill::math::RegisterConv(r);
  rill::math::RegisterReduce(r);
  rill::math::RegisterMatMul(r);
  rill::math::RegisterSoftmax(r);
  rill::math::RegisterRandom(r);
  rill::math::RegisterConcatSplit(r);
  rill::math::RegisterOptimizers(r);
  rill::math::RegisterGather(r);
  rill::math::RegisterOneHot(r);
  rill::math::RegisterWhere(r);
  rill::math::RegisterSigmoidCrossEntropy(r);
  rill::math::RegisterPad(r);
  rill::math::RegisterPrelu(r);
  rill::math::RegisterInterp(r);
  rill::math::RegisterGroupNorm(r);
  rill::math::RegisterGradClip(r);
  rill::math::RegisterSelectedRowsOps(r);
  rill::math::RegisterFlipRoll(r);
  rill::math::RegisterYoloBox(r);
  rill::math::RegisterMulticlassNms(r);
  rill::math::RegisterMatrixNms(r);
  rill::math::RegisterPriorBox(r);
  rill::math::RegisterBoxCoder(r);
  rill::math::RegisterIouSimilarity(r);
  rill::math::RegisterRoiAlign(r);
  rill::math::RegisterTensorArray(r);
  rill::math::RegisterLodRankTable(r);
  rill::math::RegisterBeamSearch(r);
  rill::math::RegisterWarpCtc(r);
  rill::math::RegisterSplitMergeLodTensor(r);
  rill::math::RegisterNce(r);
  rill::math::RegisterHierarchicalSigmoid(r);
  rill::math::RegisterLrn(r);
  rill::math::RegisterMaxout(r);
  rill::math::RegisterSequencePool(r);
  rill::math::RegisterSequenceConv(r);
  rill::math::RegisterSequenceExpand(r);
  rill::math::RegisterSequenceReverse(r);
  rill::math::RegisterSequenceSoftmax(r);
  rill::math::RegisterSequencePad(r);
  rill::math::RegisterSequenceMask(r);
  rill::math::RegisterSequenceConcat(r);
  rill::math::RegisterSequenceReshape(r);
  rill::math::RegisterSequenceSlice(r);
  rill::math::RegisterSequenceEnumerate(r);
  rill::math::RegisterSequenceErase(r);
  rill::math::RegisterSequenceScatter(r);
  rill::math::RegisterLodReset(r);
  rill::math::RegisterIm2Sequence(r);
  rill::math::RegisterRowConv(r);
  rill::math::RegisterLstm(r);
  rill::math::RegisterGru(r);
  rill::math::RegisterLstmUnit(r);
  rill::math::RegisterLstmp(r);
  rill::math::RegisterL2Norm(r);
  rill::math::RegisterMeanIou(r);
  rill::math::RegisterMultiplex(r);
  rill::math::RegisterRoiPool(r);
  rill::math::RegisterSmoothL1Loss(r);
  rill::math::RegisterPolygonBoxTransform(r);
  rill::math::RegisterCosSim(r);
  rill::math::RegisterLinearChainCrf(r);
  rill::math::RegisterChunkEval(r);
  rill::math::RegisterEditDistance(r);
  rill::math::RegisterCtcAlign(r);
}
}  // namespace

RILL_PLUGIN("math", RILL_PROJECT_VERSION, Init)
