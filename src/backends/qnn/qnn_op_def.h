// The QNN op types and parameter names the lowering emits and the stand-in interprets, spelled
// as QnnOpDef.h spells them (package "qti.aisw"). RmsNorm needs a QNN SDK whose op set has it
// (it is not in QNN 2.13's QnnOpDef.h).
#pragma once

namespace kestrel::qnn::op {

inline constexpr const char* kPackage = "qti.aisw";

inline constexpr const char* kCast = "Cast";
inline constexpr const char* kConcat = "Concat";
inline constexpr const char* kConcatAxis = "axis";  // UINT_32
inline constexpr const char* kElementWiseAdd = "ElementWiseAdd";
inline constexpr const char* kElementWiseLessEqual = "ElementWiseLessEqual";
inline constexpr const char* kElementWiseMultiply = "ElementWiseMultiply";
inline constexpr const char* kElementWiseSelect = "ElementWiseSelect";
inline constexpr const char* kElementWiseSubtract = "ElementWiseSubtract";
inline constexpr const char* kFullyConnected = "FullyConnected";
inline constexpr const char* kFullyConnectedKeepDims = "keep_dims";  // BOOL_8
inline constexpr const char* kGather = "Gather";
inline constexpr const char* kGatherAxis = "axis";  // INT_32
inline constexpr const char* kGelu = "Gelu";
inline constexpr const char* kLayerNorm = "LayerNorm";
inline constexpr const char* kMatMul = "MatMul";
inline constexpr const char* kMatMulTransposeIn0 = "transpose_in0";  // BOOL_8
inline constexpr const char* kMatMulTransposeIn1 = "transpose_in1";  // BOOL_8
inline constexpr const char* kNormEpsilon = "epsilon";  // FLOAT_32 (RmsNorm, LayerNorm)
inline constexpr const char* kNormAxes = "axes";        // UINT_32 [m] (RmsNorm, LayerNorm)
inline constexpr const char* kReshape = "Reshape";
inline constexpr const char* kRmsNorm = "RmsNorm";
inline constexpr const char* kScatterNd = "ScatterNd";
inline constexpr const char* kScatterNdReduction = "reduction";  // UINT_32, 0 = none
inline constexpr const char* kSigmoid = "Sigmoid";
inline constexpr const char* kSoftmax = "Softmax";
inline constexpr const char* kSoftmaxAxis = "axis";  // UINT_32
inline constexpr const char* kSoftmaxBeta = "beta";  // FLOAT_32
inline constexpr const char* kStridedSlice = "StridedSlice";
inline constexpr const char* kStridedSliceRanges = "ranges";  // INT_32 [rank, 3]: begin, end, stride
inline constexpr const char* kStridedSliceBeginMask = "begin_mask";  // UINT_32
inline constexpr const char* kStridedSliceEndMask = "end_mask";      // UINT_32
inline constexpr const char* kStridedSliceShrinkAxes = "shrink_axes";  // UINT_32
inline constexpr const char* kStridedSliceNewAxesMask = "new_axes_mask";  // UINT_32
inline constexpr const char* kTanh = "Tanh";
inline constexpr const char* kTranspose = "Transpose";
inline constexpr const char* kTransposePerm = "perm";  // UINT_32 [rank]

}  // namespace kestrel::qnn::op
