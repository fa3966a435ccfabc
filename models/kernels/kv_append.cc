#include "models/kernels/kv_append.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace zoo::models {

namespace {

// What a buffer of append_steps knows about itself, kept as its memory's deleter context:
// its shape (rows, heads, capacity, depth) past the rows, and where the newest view ends.
struct Growing {
  void* memory = nullptr;
  int64_t heads = 0, capacity = 0, depth = 0;
  int64_t end = 0;  // columns written so far: the newest view ends here
};

void release(void* context) {
  auto* g = static_cast<Growing*>(context);
  std::free(g->memory);
  delete g;
}

Growing* growing(const torch::Tensor& t) {
  if (!t.defined() || !t.has_storage() || !t.device().is_cpu()) return nullptr;
  const auto& data = t.storage().data_ptr();
  return data.get_deleter() == &release ? static_cast<Growing*>(data.get_context()) : nullptr;
}

// The column of its buffer where t starts, or -1 unless t is (B, heads, T, d) over whole
// heads and columns of the buffer's layout.
int64_t start_column(const torch::Tensor& t, const Growing& g) {
  if (t.dim() != 4 || t.size(1) != g.heads || t.size(3) != g.depth) return -1;
  const int64_t row = g.capacity * g.depth;
  if (t.stride(3) != 1 || t.stride(2) != g.depth || t.stride(1) != row || t.stride(0) != g.heads * row) return -1;
  const int64_t within = t.storage_offset() % (g.heads * row);
  if (within >= row || within % g.depth != 0) return -1;
  return within / g.depth;
}

// A new buffer (rows, heads, capacity, depth) of `options`' dtype, 64-byte aligned; returns
// the view of its first `columns` columns, which it counts as written.
torch::Tensor allocate(int64_t rows, int64_t heads, int64_t capacity, int64_t depth, int64_t columns,
                       const torch::TensorOptions& options) {
  const auto item = static_cast<int64_t>(options.dtype().itemsize());
  const auto bytes = static_cast<size_t>(std::max<int64_t>(64, (rows * heads * capacity * depth * item + 63) / 64 * 64));
  auto g = std::make_unique<Growing>();
  g->memory = std::aligned_alloc(64, bytes);
  if (!g->memory) throw std::bad_alloc();
  g->heads = heads, g->capacity = capacity, g->depth = depth, g->end = columns;
  c10::DataPtr data(g->memory, g.get(), &release, c10::Device(c10::kCPU));
  g.release();  // the DataPtr frees it
  c10::Storage storage(c10::Storage::use_byte_size_t(), bytes, std::move(data), /*allocator=*/nullptr,
                       /*resizable=*/false);
  auto view = torch::empty({0}, options.device(c10::kCPU));
  view.set_(storage, 0, {rows, heads, columns, depth}, {heads * capacity * depth, capacity * depth, depth, 1});
  return view;
}

// Room for as many columns again as `columns`, at least 16 more.
int64_t capacity_for(int64_t columns) { return columns + std::max<int64_t>(columns, 16); }

}  // namespace

bool in_growing_buffer(const torch::Tensor& t) { return growing(t) != nullptr; }

torch::Tensor append_steps(const torch::Tensor& past, const torch::Tensor& fresh) {
  if (!past.defined()) return fresh;
  const bool same = past.dim() == 4 && fresh.dim() == 4 && past.size(0) == fresh.size(0) &&
                    past.size(1) == fresh.size(1) && past.size(3) == fresh.size(3) &&
                    past.scalar_type() == fresh.scalar_type() && fresh.device() == past.device();
  if (!same || !past.device().is_cpu() || past.requires_grad() || fresh.requires_grad())
    return torch::cat({past, fresh}, 2);  // elsewhere, or under autograd: as before
  const int64_t t = past.size(2), n = fresh.size(2);
  if (Growing* g = growing(past)) {
    const int64_t start = start_column(past, *g);
    if (start >= 0 && start + t == g->end && g->end + n <= g->capacity) {
      auto view = past.as_strided({past.size(0), past.size(1), t + n, past.size(3)}, past.strides(),
                                  past.storage_offset());
      view.narrow(2, t, n).copy_(fresh);
      g->end += n;
      return view;
    }
  }
  auto out = allocate(past.size(0), past.size(1), capacity_for(t + n), past.size(3), t + n, past.options());
  out.narrow(2, 0, t).copy_(past);
  out.narrow(2, t, n).copy_(fresh);
  return out;
}

torch::Tensor select_rows(const torch::Tensor& t, int64_t dim, const torch::Tensor& indices) {
  Growing* g = dim == 0 && !t.requires_grad() ? growing(t) : nullptr;
  const int64_t start = g ? start_column(t, *g) : -1;
  if (start < 0) return t.index_select(dim, indices);
  const auto index = indices.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t rows = index.numel(), from_rows = t.size(0), columns = t.size(2);
  const int64_t* picked = index.data_ptr<int64_t>();
  for (int64_t i = 0; i < rows; ++i)
    TORCH_CHECK(picked[i] >= 0 && picked[i] < from_rows, "select_rows: index ", picked[i], " out of range for ",
                from_rows, " rows");
  auto out = allocate(rows, g->heads, std::max(g->capacity, capacity_for(columns)), g->depth, columns, t.options());
  // Each (row, head) holds `columns` dense columns of depth values: one copy per pair.
  const auto item = static_cast<int64_t>(t.element_size());
  const int64_t span = columns * g->depth * item;
  const auto* src = static_cast<const char*>(t.data_ptr());  // t[0, 0, 0, 0]
  auto* dst = static_cast<char*>(out.data_ptr());
  const int64_t src_row = t.stride(0) * item, src_head = t.stride(1) * item;
  const int64_t dst_row = out.stride(0) * item, dst_head = out.stride(1) * item;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t h = 0; h < g->heads; ++h)
      std::memcpy(dst + i * dst_row + h * dst_head, src + picked[i] * src_row + h * src_head, static_cast<size_t>(span));
  return out;
}

torch::Tensor stack_left_padded(const std::vector<torch::Tensor>& parts, int64_t columns) {
  TORCH_CHECK(!parts.empty(), "stack_left_padded: no parts");
  const auto& first = parts.front();
  int64_t rows = 0;
  bool cpu = true;
  for (const auto& p : parts) {
    TORCH_CHECK(p.dim() == 4 && p.size(1) == first.size(1) && p.size(3) == first.size(3) && p.size(2) <= columns &&
                    p.scalar_type() == first.scalar_type() && p.device() == first.device(),
                "stack_left_padded: parts must be (B, ", first.size(1), ", <= ", columns, ", ", first.size(3),
                ") of one dtype and device, got ", p.sizes());
    rows += p.size(0);
    cpu = cpu && p.device().is_cpu() && !p.requires_grad();
  }
  if (!cpu) {  // elsewhere, or under autograd: padded copies, concatenated
    std::vector<torch::Tensor> padded;
    for (const auto& p : parts) {
      auto sizes = p.sizes().vec();
      sizes[2] = columns - p.size(2);
      padded.push_back(torch::cat({torch::zeros(sizes, p.options()), p}, 2));
    }
    return torch::cat(padded, 0);
  }
  auto out = allocate(rows, first.size(1), capacity_for(columns), first.size(3), columns, first.options());
  int64_t row = 0;
  for (const auto& p : parts) {
    auto rows_of_p = out.narrow(0, row, p.size(0));
    rows_of_p.narrow(2, 0, columns - p.size(2)).zero_();
    rows_of_p.narrow(2, columns - p.size(2), p.size(2)).copy_(p);
    row += p.size(0);
  }
  return out;
}

}  // namespace zoo::models
