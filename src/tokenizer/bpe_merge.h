// Pairwise merge engine shared by the BPE tokenizers (internal).
//
// Repeatedly merges the adjacent pair with the best (lowest) priority, the leftmost one on
// ties, until no adjacent pair can merge. HF BPE uses the merge rank as the priority; llama2.c
// uses the negated score of the merged piece. A priority queue with lazy invalidation keeps it
// O(n log n) in the word length.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

namespace kestrel::tokenizer::detail {

struct MergeCandidate {
  double priority;  // lower merges first
  int64_t merged_id;
};

// lookup(left_id, right_id) -> std::optional<MergeCandidate>.
template <typename Lookup>
void merge_pairs(std::vector<int64_t>& ids, const Lookup& lookup) {
  const size_t n = ids.size();
  if (n < 2) return;
  struct Symbol {
    int64_t id;
    int64_t prev;
    int64_t next;
    bool alive;
  };
  std::vector<Symbol> symbols(n);
  for (size_t i = 0; i < n; ++i) {
    symbols[i] = {ids[i], static_cast<int64_t>(i) - 1, i + 1 < n ? static_cast<int64_t>(i + 1) : -1, true};
  }
  struct Entry {
    double priority;
    int64_t left;  // position of the left symbol
    int64_t right;
    int64_t left_id;
    int64_t right_id;
    int64_t merged_id;
  };
  const auto worse = [](const Entry& a, const Entry& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    return a.left > b.left;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(worse)> queue(worse);
  const auto consider = [&](int64_t left) {
    if (left < 0) return;
    const int64_t right = symbols[left].next;
    if (right < 0) return;
    const std::optional<MergeCandidate> candidate = lookup(symbols[left].id, symbols[right].id);
    if (!candidate) return;
    queue.push({candidate->priority, left, right, symbols[left].id, symbols[right].id, candidate->merged_id});
  };
  for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int64_t>(i));
  while (!queue.empty()) {
    const Entry top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.left];
    if (!left.alive || left.next != top.right || left.id != top.left_id) continue;
    Symbol& right = symbols[top.right];
    if (!right.alive || right.id != top.right_id) continue;
    left.id = top.merged_id;
    left.next = right.next;
    right.alive = false;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    consider(left.prev);
    consider(top.left);
  }
  ids.clear();
  for (int64_t i = 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
}

}  // namespace kestrel::tokenizer::detail
