// Names shared by exporters and runners for the I/O contract a program declares in metadata.
// The hf_static contract is specified in docs/hf_static-v1.md.
#pragma once

#include "kestrel/core/dtype.h"

namespace kestrel::contract {

inline constexpr const char* kIoContract = "io_contract";
inline constexpr const char* kIoContractVersion = "io_contract_version";

namespace hf_static {
inline constexpr const char* kName = "hf_static";
inline constexpr int kVersion = 1;

inline constexpr const char* kPrefillMethod = "prefill_method";
inline constexpr const char* kDecodeMethod = "decode_method";
inline constexpr const char* kPrefillStep = "prefill_step";
// Optional prefill buckets: every prefill step the program holds (increasing, prefill_step
// among them); the method of each step other than prefill_step is named by "prefill_method.S".
inline constexpr const char* kPrefillSteps = "prefill_steps";
inline constexpr const char* kPrefillMethodPrefix = "prefill_method.";
inline constexpr const char* kMaxContext = "max_context";
inline constexpr const char* kVocabSize = "vocab_size";
inline constexpr const char* kNumLayers = "n_layers";
inline constexpr const char* kNumHeads = "n_heads";
inline constexpr const char* kNumKvHeads = "n_kv_heads";
inline constexpr const char* kHeadDim = "head_dim";
inline constexpr const char* kCacheDtype = "cache_dtype";
// The element types a cache (and a new k/v slice) may have: f32, or f16 ("f16 caches").
inline constexpr bool is_cache_dtype(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF16; }
inline constexpr const char* kLogits = "logits";  // "last" or "all"
inline constexpr const char* kBosId = "bos_id";
inline constexpr const char* kEosIds = "eos_ids";
inline constexpr const char* kTokenizerFormat = "tokenizer_format";    // "hf_json" | "llama2c" | "none"
inline constexpr const char* kTokenizerSegment = "tokenizer_segment";  // segment index holding its bytes

// Optional chat metadata (docs/hf_static-v1.md, "Chat metadata").
inline constexpr const char* kChatTemplate = "chat_template";               // Jinja source, the default
inline constexpr const char* kChatTemplatePrefix = "chat_template.";        // + name: other named templates
inline constexpr const char* kEndOfTurnIds = "eot_ids";                     // tokens that end an assistant turn
inline constexpr const char* kBosToken = "bos_token";                       // texts templates write
inline constexpr const char* kEosToken = "eos_token";
inline constexpr const char* kAddBosToken = "add_bos_token";                // the tokenizer prepends bos

// Optional: who writes the new k/v slices into the caches. "runner" (the default when absent):
// the runner copies them from the k_new/v_new outputs after each call; "in_place": every method
// writes them into its cache inputs during the call, and the runner copies nothing.
inline constexpr const char* kCacheUpdate = "cache_update";
inline constexpr const char* kCacheUpdateRunner = "runner";
inline constexpr const char* kCacheUpdateInPlace = "in_place";
}  // namespace hf_static

}  // namespace kestrel::contract
