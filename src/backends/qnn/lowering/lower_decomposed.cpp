// Kestrel ops with no single QNN op, decomposed into QNN ops as a QNN graph would build them.
#include <cmath>
#include <numeric>

#include "backends/qnn/lowering/node_lowering.h"

namespace kestrel::qnn::lowering {

namespace {

QnnTensorId scalar_f32(NodeLowering& n, const std::string& what, float value) {
  return n.b.static_f32(n.name(what), {1}, {value});
}

}  // namespace

// x * Sigmoid(x).
Status lower_silu(NodeLowering& n) {
  const QnnTensorId sigmoid = n.b.native(n.name("sigmoid"), n.b.type(n.in(0)), n.in_dims(0));
  n.op("sigmoid", op::kSigmoid, {n.in(0)}, {sigmoid});
  n.op("mul", op::kElementWiseMultiply, {n.in(0), sigmoid}, {n.out()});
  return ok_status();
}

// Gelu (erf form); the tanh form as 0.5 x (1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Status lower_gelu(NodeLowering& n) {
  KESTREL_ASSIGN_OR_RETURN(std::string approximate, n.string_attr("approximate", std::string("none")));
  if (approximate == "none") {
    n.op("gelu", op::kGelu, {n.in(0)}, {n.out()});
    return ok_status();
  }
  if (approximate != "tanh") return n.fail("approximate '{}' is not 'none' or 'tanh'", approximate);
  const QnnTensorId x = n.in(0);
  const QnnTensorId x2 = binary(n, "x2", op::kElementWiseMultiply, x, x);
  const QnnTensorId x3 = binary(n, "x3", op::kElementWiseMultiply, x2, x);
  const QnnTensorId cubic = binary(n, "cubic", op::kElementWiseMultiply, x3, scalar_f32(n, "c0", 0.044715f));
  const QnnTensorId inner = binary(n, "inner", op::kElementWiseAdd, x, cubic);
  const QnnTensorId scaled =
      binary(n, "scaled", op::kElementWiseMultiply, inner, scalar_f32(n, "c1", static_cast<float>(std::sqrt(2.0 / M_PI))));
  const QnnTensorId t = n.b.native(n.name("tanh"), n.b.type(x), n.in_dims(0));
  n.op("tanh", op::kTanh, {scaled}, {t});
  const QnnTensorId one_plus = binary(n, "one_plus", op::kElementWiseAdd, t, scalar_f32(n, "one", 1.0f));
  const QnnTensorId half_x = binary(n, "half_x", op::kElementWiseMultiply, x, scalar_f32(n, "half", 0.5f));
  n.op("out", op::kElementWiseMultiply, {half_x, one_plus}, {n.out()});
  return ok_status();
}

// Rope: the table rows of each position are gathered (Gather), then with x1, x2 the two halves
// (half style) or the even and odd elements (interleaved) of each head:
//   out1 = x1 cos - x2 sin,  out2 = x2 cos + x1 sin
// (ElementWiseMultiply, ElementWiseSubtract, ElementWiseAdd), joined by Concat.
Status lower_rope(NodeLowering& n) {
  KESTREL_ASSIGN_OR_RETURN(std::string style, n.string_attr("style", std::string("half")));
  if (style != "half" && style != "interleaved") return n.fail("style '{}' is not 'half' or 'interleaved'", style);
  const Dims x_dims = n.in_dims(0);
  if (x_dims.size() != 4 || x_dims[3] % 2 != 0) return n.fail("x must be [B, H, T, Dh] with an even Dh");
  const uint32_t B = x_dims[0], H = x_dims[1], T = x_dims[2], Dh = x_dims[3], half = Dh / 2;
  KESTREL_ASSIGN_OR_RETURN(int64_t rotary, n.int_attr("rotary_dim", static_cast<int64_t>(Dh)));
  if (rotary != Dh) return n.fail("partial rotary (rotary_dim {} of head_dim {}) is not lowered", rotary, Dh);
  if (n.b.type(n.in(1)) != QnnDataType::kInt32) return n.fail("positions must be i32");
  const QnnDataType f = n.b.type(n.in(0));

  auto rows = [&](const std::string& what, QnnTensorId table) {
    const QnnTensorId gathered = n.b.native(n.name(what), n.b.type(table), {T, half});
    n.op(what, op::kGather, {table, n.in(1)}, {gathered}, {scalar_param(op::kGatherAxis, QnnScalar::int32(0))});
    return cast_to(n, what + "_cast", gathered, f);
  };
  QnnTensorId cos = rows("cos", n.in(2));
  QnnTensorId sin = rows("sin", n.in(3));

  QnnTensorId x1, x2;
  size_t concat_axis;
  if (style == "half") {
    x1 = slice_axis(n, "x1", n.in(0), 3, 0, half);
    x2 = slice_axis(n, "x2", n.in(0), 3, half, Dh);
    concat_axis = 3;
  } else {
    const QnnTensorId pairs = reshape(n, "pairs", n.in(0), {B, H, T, half, 2});
    x1 = slice_axis(n, "even", pairs, 4, 0, 1);
    x2 = slice_axis(n, "odd", pairs, 4, 1, 2);
    cos = reshape(n, "cos_col", cos, {T, half, 1});
    sin = reshape(n, "sin_col", sin, {T, half, 1});
    concat_axis = 4;
  }
  const QnnTensorId a = binary(n, "x1_cos", op::kElementWiseMultiply, x1, cos);
  const QnnTensorId b = binary(n, "x2_sin", op::kElementWiseMultiply, x2, sin);
  const QnnTensorId out1 = binary(n, "out1", op::kElementWiseSubtract, a, b);
  const QnnTensorId c = binary(n, "x2_cos", op::kElementWiseMultiply, x2, cos);
  const QnnTensorId d = binary(n, "x1_sin", op::kElementWiseMultiply, x1, sin);
  const QnnTensorId out2 = binary(n, "out2", op::kElementWiseAdd, c, d);
  const QnnParam axis = scalar_param(op::kConcatAxis, QnnScalar::uint32(static_cast<uint32_t>(concat_axis)));
  if (style == "half") {
    n.op("concat", op::kConcat, {out1, out2}, {n.out()}, {axis});
  } else {
    const QnnTensorId joined = n.b.native(n.name("joined"), f, {B, H, T, half, 2});
    n.op("concat", op::kConcat, {out1, out2}, {joined}, {axis});
    n.op("merge", op::kReshape, {joined}, {n.out()});
  }
  return ok_status();
}

// Causal attention over the static cache. Query heads are grouped under their kv head
// ([B, Hkv, G*T, Dh], G = Hq / Hkv) so no kv head is repeated:
//   scores = MatMul(q * scale, k; transpose_in1)            [B, Hkv, G*T, C]
//   allowed = ElementWiseLessEqual(slots [C], positions [T, 1])   slot j <= positions[t]
//   probs = Softmax(ElementWiseSelect(allowed, scores, lowest))   on [B, Hkv, G, T, C]
//   out = MatMul(probs, v)                                   -> [B, Hq, T, Dh]
Status lower_attention(NodeLowering& n) {
  const Dims q = n.in_dims(0), k = n.in_dims(1), v = n.in_dims(2);
  if (q.size() != 4 || k.size() != 4 || v.size() != 4) return n.fail("q, k and v must be rank 4");
  const uint32_t B = q[0], Hq = q[1], T = q[2], Dh = q[3], Hkv = k[1], C = k[2];
  if (Hkv == 0 || Hq % Hkv != 0) return n.fail("Hq {} is not a multiple of Hkv {}", Hq, Hkv);
  if (k[0] != B || k[3] != Dh || v != k) return n.fail("k and v must be [B, Hkv, C, Dh] matching q");
  KESTREL_ASSIGN_OR_RETURN(int64_t window, n.int_attr("window", 0));
  if (window != 0) return n.fail("sliding window {} is not lowered", window);
  if (n.b.type(n.in(3)) != QnnDataType::kInt32) return n.fail("positions must be i32");
  KESTREL_ASSIGN_OR_RETURN(double scale, n.float_attr("scale"));
  const uint32_t G = Hq / Hkv;
  const QnnDataType f = n.b.type(n.in(0));

  const QnnTensorId scale_tensor = n.b.static_f32(n.name("scale"), {1}, {static_cast<float>(scale)});
  QnnTensorId qs = binary(n, "q_scaled", op::kElementWiseMultiply, n.in(0), scale_tensor);
  if (G > 1) qs = reshape(n, "q_grouped", qs, {B, Hkv, G * T, Dh});
  const QnnTensorId scores = n.b.native(n.name("scores"), f, {B, Hkv, G * T, C});
  n.op("scores", op::kMatMul, {qs, n.in(1)}, {scores},
       {scalar_param(op::kMatMulTransposeIn0, QnnScalar::boolean(false)),
        scalar_param(op::kMatMulTransposeIn1, QnnScalar::boolean(true))});
  const QnnTensorId scores5 = reshape(n, "scores_by_group", scores, {B, Hkv, G, T, C});

  std::vector<int32_t> slot_values(C);
  std::iota(slot_values.begin(), slot_values.end(), 0);
  const QnnTensorId slots = n.b.static_i32(n.name("slots"), {C}, slot_values);
  const QnnTensorId positions = reshape(n, "positions_col", n.in(3), {T, 1});
  const QnnTensorId allowed = n.b.native(n.name("allowed"), QnnDataType::kBool8, {T, C});
  n.op("allowed", op::kElementWiseLessEqual, {slots, positions}, {allowed});
  // The lowest finite fp16 value: exp() of it after the max subtraction is 0 in fp16 and f32.
  const QnnTensorId lowest = n.b.static_f32(n.name("lowest"), {1}, {-65504.0f});
  const QnnTensorId masked = n.b.native(n.name("masked"), f, {B, Hkv, G, T, C});
  n.op("mask", op::kElementWiseSelect, {allowed, scores5, lowest}, {masked});
  const QnnTensorId probs = n.b.native(n.name("probs"), f, {B, Hkv, G, T, C});
  n.op("softmax", op::kSoftmax, {masked}, {probs},
       {scalar_param(op::kSoftmaxAxis, QnnScalar::uint32(4)), scalar_param(op::kSoftmaxBeta, QnnScalar::float32(1.0f))});
  const QnnTensorId probs4 = reshape(n, "probs_rows", probs, {B, Hkv, G * T, C});
  const bool direct = G == 1;
  const QnnTensorId context = direct ? n.out() : n.b.native(n.name("context"), f, {B, Hkv, G * T, Dh});
  n.op("context", op::kMatMul, {probs4, n.in(2)}, {context},
       {scalar_param(op::kMatMulTransposeIn0, QnnScalar::boolean(false)),
        scalar_param(op::kMatMulTransposeIn1, QnnScalar::boolean(false))});
  if (!direct) n.op("heads", op::kReshape, {context}, {n.out()});
  return ok_status();
}

// index_copy(dst, index, src; axis a) = ScatterNd(dst, indices, src) with indices
// [d0 .. d(a-1), T, a+1]: the leading coordinates are constants, the last one is index[t]
// broadcast over them (ElementWiseAdd with zeros) and joined by Concat. The output is a new
// tensor (QNN has no in-place update).
Status lower_index_copy(NodeLowering& n) {
  const Dims dst = n.in_dims(0), src = n.in_dims(2);
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, n.int_attr("axis"));
  const auto rank = static_cast<int64_t>(dst.size());
  if (axis < -rank || axis >= rank) return n.fail("axis {} is outside rank {}", axis, rank);
  if (axis < 0) axis += rank;
  const auto a = static_cast<size_t>(axis);
  if (n.b.type(n.in(1)) != QnnDataType::kInt32) return n.fail("index must be i32");
  const uint32_t T = n.in_dims(1).at(0);
  if (src.size() != dst.size() || src[a] != T) return n.fail("src must be dst's shape with {} rows on axis {}", T, a);

  Dims lead(dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(a));
  QnnTensorId indices;
  if (a == 0) {
    indices = reshape(n, "indices", n.in(1), {T, 1});
  } else {
    // Leading coordinates of every (i0 .. i(a-1), t): a constant [lead..., T, a].
    Dims coord_dims = lead;
    coord_dims.push_back(T);
    uint64_t count = 1;
    for (uint32_t d : coord_dims) count *= d;
    std::vector<int32_t> coords;
    coords.reserve(count * a);
    for (uint64_t flat = 0; flat < count; ++flat) {
      uint64_t rest = flat / T;  // drop t
      std::vector<int32_t> idx(a);
      for (size_t j = a; j-- > 0;) {
        idx[j] = static_cast<int32_t>(rest % lead[j]);
        rest /= lead[j];
      }
      coords.insert(coords.end(), idx.begin(), idx.end());
    }
    Dims lead_coord_dims = coord_dims;
    lead_coord_dims.push_back(static_cast<uint32_t>(a));
    const QnnTensorId leading = n.b.static_i32(n.name("lead_coords"), lead_coord_dims, coords);
    // index[t] on every leading coordinate.
    Dims column(a, 1);
    column.push_back(T);
    column.push_back(1);
    const QnnTensorId index_col = reshape(n, "index_col", n.in(1), column);
    Dims zeros_dims = coord_dims;
    zeros_dims.push_back(1);
    const QnnTensorId zeros = n.b.static_i32(n.name("zeros"), zeros_dims, std::vector<int32_t>(count, 0));
    const QnnTensorId spread = binary(n, "index_spread", op::kElementWiseAdd, index_col, zeros);
    Dims index_dims = coord_dims;
    index_dims.push_back(static_cast<uint32_t>(a + 1));
    indices = n.b.native(n.name("indices"), QnnDataType::kInt32, index_dims);
    n.op("indices", op::kConcat, {leading, spread}, {indices},
         {scalar_param(op::kConcatAxis, QnnScalar::uint32(static_cast<uint32_t>(a + 1)))});
  }
  n.op("scatter", op::kScatterNd, {n.in(0), indices, n.in(2)}, {n.out()},
       {scalar_param(op::kScatterNdReduction, QnnScalar::uint32(0))});
  return ok_status();
}

}  // namespace kestrel::qnn::lowering
