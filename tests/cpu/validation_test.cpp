// The optimized kernels validate exactly like the portable ones: every bad call fails with the
// same error code and message from both registries.
#include <gtest/gtest.h>

#include <functional>

#include "cpu/cpu_test_util.h"
#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::cpu::testing {
namespace {

struct BadCall {
  std::string name;
  std::string op;
  std::vector<TensorView> inputs;
  std::vector<TensorView> outputs;
  program::Attrs attrs;
};

TensorView strided(TensorView view) {
  // Column-major strides: not contiguous.
  view.strides = Shape{1, view.shape[0]};
  return view;
}

TensorView shifted(TensorView view, size_t bytes) {
  view.data = static_cast<uint8_t*>(view.data) + bytes;
  return view;
}

TEST(OptimizedValidation, BadCallsFailLikeThePortableKernels) {
  // Storage for the calls below (kept alive for the whole test).
  auto x = Tensor::from_floats(DType::kF32, {2, 64}, random_floats(128, 1));
  auto x7 = Tensor::from_floats(DType::kF32, {2, 7}, random_floats(14, 2));
  auto w = Tensor::from_floats(DType::kF32, {5, 64}, random_floats(320, 3));
  auto wq = Tensor::from_floats(DType::kQ8, {5, 64}, random_floats(320, 4));
  auto w1 = Tensor::from_floats(DType::kF32, {64}, random_floats(64, 5));
  auto big = Tensor::from_floats(DType::kF32, {4, 64}, random_floats(256, 6));
  Tensor wq_odd(DType::kF32, {5, 7});  // reinterpreted below as q8 with K = 7
  auto bias = Tensor::from_floats(DType::kF32, {5}, random_floats(5, 7));
  auto bias4 = Tensor::from_floats(DType::kF32, {4}, random_floats(4, 8));
  auto ids = Tensor::from_ints({2}, {0, 1});
  Tensor y(DType::kF32, {2, 5}), y_wrong(DType::kF32, {2, 4}), y_i64(DType::kI64, {2, 5});
  TensorView q8_odd = wq_odd.view();
  q8_odd.dtype = DType::kQ8;

  auto q = Tensor::from_floats(DType::kF32, {1, 4, 2, 8}, random_floats(64, 9));
  auto k = Tensor::from_floats(DType::kF32, {1, 2, 6, 8}, random_floats(96, 10));
  auto v = Tensor::from_floats(DType::kF32, {1, 2, 6, 8}, random_floats(96, 11));
  auto k3 = Tensor::from_floats(DType::kF32, {1, 3, 6, 8}, random_floats(144, 12));
  auto k_dh = Tensor::from_floats(DType::kF32, {1, 2, 6, 4}, random_floats(48, 13));
  auto k_b2 = Tensor::from_floats(DType::kF32, {2, 2, 6, 8}, random_floats(192, 14));
  auto v_short = Tensor::from_floats(DType::kF32, {1, 2, 5, 8}, random_floats(80, 15));
  auto pos = Tensor::from_ints({2}, {1, 3});
  auto pos_far = Tensor::from_ints({2}, {1, 6});
  auto pos_neg = Tensor::from_ints({2}, {-1, 0});
  auto pos_f32 = Tensor::from_floats(DType::kF32, {2}, {1, 3});
  auto pos3 = Tensor::from_ints({3}, {0, 1, 2});
  Tensor out(DType::kF32, {1, 4, 2, 8}), out_wrong(DType::kF32, {1, 4, 2, 4});
  auto q_rank3 = Tensor::from_floats(DType::kF32, {4, 2, 8}, random_floats(64, 16));

  auto nw = Tensor::from_floats(DType::kF32, {64}, random_floats(64, 17));
  auto nw_wrong = Tensor::from_floats(DType::kF32, {63}, random_floats(63, 18));
  Tensor ny(DType::kF32, {2, 64});
  Tensor silu_out(DType::kF32, {2, 63});

  const program::Attrs eps{{"eps", 1e-5}};
  std::vector<BadCall> calls = {
      {"linear_arity", "linear", {x.view()}, {y.view()}, {}},
      {"linear_outputs", "linear", {x.view(), w.view()}, {}, {}},
      {"linear_x_dtype", "linear", {ids.view(), w.view()}, {y.view()}, {}},
      {"linear_weight_rank", "linear", {x.view(), w1.view()}, {y.view()}, {}},
      {"linear_weight_dtype", "linear", {x.view(), ids.view()}, {y.view()}, {}},
      {"linear_k_mismatch", "linear", {x7.view(), w.view()}, {y.view()}, {}},
      {"linear_q8_partial_block", "linear", {x7.view(), q8_odd}, {y.view()}, {}},
      {"linear_bias_shape", "linear", {x.view(), w.view(), bias4.view()}, {y.view()}, {}},
      {"linear_bias_dtype", "linear", {x.view(), w.view(), ids.view()}, {y.view()}, {}},
      {"linear_output_shape", "linear", {x.view(), w.view()}, {y_wrong.view()}, {}},
      {"linear_output_dtype", "linear", {x.view(), wq.view()}, {y_i64.view()}, {}},
      {"linear_output_overlaps_x", "linear", {big.view(), w.view()}, {shifted(TensorView::contiguous(DType::kF32, {4, 5}, big.bytes()), 4)}, {}},
      {"linear_output_overlaps_weight", "linear", {x.view(), w.view()}, {TensorView::contiguous(DType::kF32, {2, 5}, w.view().data)}, {}},
      {"linear_strided_weight", "linear", {x7.view(), strided(TensorView::contiguous(DType::kF32, {5, 7}, wq_odd.bytes()))}, {y.view()}, {}},
      {"linear_missing_data", "linear", {x.view(), TensorView::contiguous(DType::kF32, {5, 64}, nullptr)}, {y.view()}, {}},

      {"attention_arity", "attention", {q.view(), k.view(), v.view()}, {out.view()}, {}},
      {"attention_q_rank", "attention", {q_rank3.view(), k.view(), v.view(), pos.view()}, {out.view()}, {}},
      {"attention_k_batch", "attention", {q.view(), k_b2.view(), v.view(), pos.view()}, {out.view()}, {}},
      {"attention_head_dim", "attention", {q.view(), k_dh.view(), v.view(), pos.view()}, {out.view()}, {}},
      {"attention_heads", "attention", {q.view(), k3.view(), k3.view(), pos.view()}, {out.view()}, {}},
      {"attention_v_shape", "attention", {q.view(), k.view(), v_short.view(), pos.view()}, {out.view()}, {}},
      {"attention_positions_dtype", "attention", {q.view(), k.view(), v.view(), pos_f32.view()}, {out.view()}, {}},
      {"attention_positions_shape", "attention", {q.view(), k.view(), v.view(), pos3.view()}, {out.view()}, {}},
      {"attention_position_past_cache", "attention", {q.view(), k.view(), v.view(), pos_far.view()}, {out.view()}, {}},
      {"attention_negative_position", "attention", {q.view(), k.view(), v.view(), pos_neg.view()}, {out.view()}, {}},
      {"attention_output_shape", "attention", {q.view(), k.view(), v.view(), pos.view()}, {out_wrong.view()}, {}},
      {"attention_output_is_k", "attention", {q.view(), k.view(), v.view(), pos.view()}, {TensorView::contiguous(DType::kF32, {1, 4, 2, 8}, k.view().data)}, {}},
      {"attention_bad_scale", "attention", {q.view(), k.view(), v.view(), pos.view()}, {out.view()}, {{"scale", std::string("big")}}},

      {"rms_norm_missing_eps", "rms_norm", {x.view(), nw.view()}, {ny.view()}, {}},
      {"rms_norm_negative_eps", "rms_norm", {x.view(), nw.view()}, {ny.view()}, {{"eps", -1.0}}},
      {"rms_norm_weight_shape", "rms_norm", {x.view(), nw_wrong.view()}, {ny.view()}, eps},
      {"rms_norm_weight_dtype", "rms_norm", {x.view(), ids.view()}, {ny.view()}, eps},
      {"rms_norm_arity", "rms_norm", {x.view()}, {ny.view()}, eps},
      {"rms_norm_output_shape", "rms_norm", {x.view(), nw.view()}, {y.view()}, eps},
      {"rms_norm_partial_overlap", "rms_norm", {big.view(), nw.view()}, {shifted(TensorView::contiguous(DType::kF32, {4, 64}, big.bytes()), 4)}, eps},

      {"silu_dtype", "silu", {ids.view()}, {ids.view()}, {}},
      {"silu_output_shape", "silu", {x.view()}, {silu_out.view()}, {}},
      {"silu_arity", "silu", {x.view(), x.view()}, {ny.view()}, {}},
      {"silu_partial_overlap", "silu", {big.view()}, {shifted(TensorView::contiguous(DType::kF32, {4, 64}, big.bytes()), 8)}, {}},
  };

  const auto portable = kernels::portable_kernel_registry();
  for (Isa isa : simd_isas())
  for (const BadCall& call : calls) {
    SCOPED_TRACE(::testing::Message() << call.name << " " << isa_name(isa));
    CpuKernelOptions options;
    options.threads = 3;
    options.isa = isa;
    const auto optimized = optimized_kernel_registry(options);
    const Status want = run(*portable, call.op, call.inputs, call.outputs, call.attrs);
    const Status got = run(*optimized, call.op, call.inputs, call.outputs, call.attrs);
    ASSERT_FALSE(want.ok()) << "the portable kernel accepted the call";
    ASSERT_FALSE(got.ok()) << "the optimized kernel accepted a call the portable kernel refuses: "
                           << want.error().to_string();
    EXPECT_EQ(got.error().code(), want.error().code());
    EXPECT_EQ(got.error().message(), want.error().message());
  }
}

}  // namespace
}  // namespace kestrel::cpu::testing
