// lookup_table and lookup_table_v2 (embeddings) with Fluid's contracts: Out = the rows of W
// that Ids name (zeros for padding_idx), with Ids' LoD; their gradient is dense, or
// SelectedRows of the looked-up rows when is_sparse (Fluid's sparse path: sgd and the
// parameter servers update only those rows).
#include <cstring>
#include <unordered_map>

#include "gather_rows.h"
#include "kernels.h"
#include "ops.h"

namespace rill::math {
namespace {

constexpr int64_t kNoPadding = -1;

// padding_idx -1 means no padding row: an id of -1 is out of range like any negative id.
bool IsPadding(int64_t id, int64_t padding) { return padding != kNoPadding && id == padding; }

// The ids, each checked to name one of W's `rows` rows. v1's Ids end in a dim of 1.
std::vector<int64_t> ReadIds(KernelContext& ctx, bool v2, int64_t rows, std::vector<int64_t>* out_dims) {
  Tensor ids = ctx.Input("Ids");
  std::vector<int64_t> dims = ids.dims();
  if (!v2) {
    if (dims.empty() || dims.back() != 1)
      throw Error("Ids " + DimsString(dims) + " must end in a dim of 1 (lookup_table_v2 takes any)");
    dims.pop_back();
  }
  const std::vector<int64_t> v = IntsOf(ids, "Ids");
  const int64_t padding = ctx.Attr<int64_t>("padding_idx");
  for (size_t i = 0; i < v.size(); ++i) {
    if ((v[i] < 0 || v[i] >= rows) && !IsPadding(v[i], padding)) {
      throw Error("Ids[" + std::to_string(i) + "] is " + std::to_string(v[i]) + ", not a row of W's " +
                  std::to_string(rows));
    }
  }
  if (out_dims != nullptr) *out_dims = dims;
  return v;
}

// W's rows: a [rows, width] tensor, or SelectedRows (a table a parameter server holds part
// of), whose row numbers an id is looked up among: an id it does not hold is an error.
template <class T> struct Table {
  const T* values;
  int64_t rows, width;
  bool sparse = false;
  std::unordered_map<int64_t, int64_t> index;  // SelectedRows: row number -> value row
  std::vector<T> copy;                         // W's values when Out is W

  explicit Table(KernelContext& ctx) {
    Variable w = ctx.InputVar("W");
    if (w.IsSelectedRows()) {
      const Variable::SelectedRows sr = w.selected_rows();
      const std::vector<int64_t> vd = sr.value.dims();
      if (vd.size() != 2 || vd[0] != static_cast<int64_t>(sr.count)) {
        throw Error("W is SelectedRows whose value " + DimsString(vd) + " is not [" + std::to_string(sr.count) +
                    " rows, width]");
      }
      values = sr.value.data<T>();
      rows = sr.height;
      width = vd[1];
      sparse = true;
      for (size_t i = 0; i < sr.count; ++i) index.emplace(sr.rows[i], static_cast<int64_t>(i));
      return;
    }
    Tensor t = w.tensor();
    const std::vector<int64_t> wd = t.dims();
    if (wd.size() != 2) throw Error("W " + DimsString(wd) + " is not a matrix");
    values = t.data<T>();
    rows = wd[0];
    width = wd[1];
    if (OutputIsInput(ctx, "Out", {"W"})) {  // Out's allocation may replace W's memory
      copy.assign(values, values + t.numel());
      values = copy.data();
    }
  }
  // Where each id's row starts (null for padding), found before any is copied, so that an
  // id W's SelectedRows do not hold is named in Ids' order.
  std::vector<const T*> Rows(const std::vector<int64_t>& ids, int64_t padding) const {
    std::vector<const T*> rows_of(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      if (IsPadding(ids[i], padding)) continue;
      if (!sparse) {
        rows_of[i] = values + ids[i] * width;
        continue;
      }
      const auto it = index.find(ids[i]);
      if (it == index.end())
        throw Error("Ids names row " + std::to_string(ids[i]) + ", which W's SelectedRows do not hold");
      rows_of[i] = values + it->second * width;
    }
    return rows_of;
  }
};

template <class T, bool kV2> void LookupTable(KernelContext& ctx) {
  const Table<T> table(ctx);
  std::vector<int64_t> out_dims;
  const std::vector<int64_t> ids = ReadIds(ctx, kV2, table.rows, &out_dims);
  out_dims.push_back(table.width);
  const int64_t padding = ctx.Attr<int64_t>("padding_idx");
  const std::vector<const T*> rows = table.Rows(ids, padding);
  GatherRows(reinterpret_cast<char*>(ctx.AllocateOutput<T>("Out", out_dims)), static_cast<int64_t>(rows.size()),
             sizeof(T) * static_cast<size_t>(table.width),
             [&rows](int64_t r) { return reinterpret_cast<const char*>(rows[static_cast<size_t>(r)]); });
  ShareLoD(ctx, "Ids", "Out");
}

// W@GRAD: Out@GRAD's rows added into the rows Ids name (padding rows left out); dense, or
// SelectedRows of every looked-up row in Ids' order when is_sparse (repeats kept, as in
// Fluid; whoever applies them adds them up).
// W may be SelectedRows (a table a parameter server holds part of): its height and width
// are the table's, and its gradient must be sparse.
template <class T, bool kV2> void LookupTableGrad(KernelContext& ctx) {
  Variable wv = ctx.InputVar("W");
  std::vector<int64_t> wd;
  if (wv.IsSelectedRows()) {
    const Variable::SelectedRows sr = wv.selected_rows();
    wd = sr.value.dims();
    if (wd.size() != 2) throw Error("W is SelectedRows whose value " + DimsString(wd) + " is not [rows, width]");
    wd[0] = sr.height;
    if (!ctx.Attr<bool>("is_sparse")) {
      throw Error("W is SelectedRows (rows of a table held elsewhere): its gradient must be sparse (is_sparse)");
    }
  } else {
    wd = wv.tensor().dims();
  }
  if (wd.size() != 2) throw Error("W " + DimsString(wd) + " is not a matrix");
  const int64_t width = wd[1];
  const std::vector<int64_t> ids = ReadIds(ctx, kV2, wd[0], nullptr);
  const int64_t padding = ctx.Attr<int64_t>("padding_idx");
  Tensor g = ctx.Input("Out@GRAD");
  const T* pg = g.data<T>();
  if (ctx.Attr<bool>("is_sparse")) {
    Tensor value = ctx.OutputVar("W@GRAD").SetSelectedRows(ids.data(), ids.size(), wd[0]);
    T* pv = value.Allocate<T>({static_cast<int64_t>(ids.size()), width});
    for (size_t i = 0; i < ids.size(); ++i) {
      T* row = pv + static_cast<int64_t>(i) * width;
      if (IsPadding(ids[i], padding)) std::fill(row, row + width, T(0));
      else std::memcpy(row, pg + static_cast<int64_t>(i) * width, sizeof(T) * static_cast<size_t>(width));
    }
    return;
  }
  T* dw = ctx.AllocateOutput<T>("W@GRAD", wd);
  std::fill(dw, dw + wd[0] * width, T(0));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (IsPadding(ids[i], padding)) continue;
    VecMap<T>(dw + ids[i] * width, width) += ConstVecMap<T>(pg + static_cast<int64_t>(i) * width, width);
  }
}

template <bool kV2> void Add(Registrar& r, const char* type) {
  const std::string grad = std::string(type) + "_grad";
  const OpSchema schema =
      OpSchema(type)
          .Doc(kV2 ? "Out = the rows of W that Ids names: Out's dims are Ids' dims + [W's width]; a row for "
                     "padding_idx is zeros."
                   : "Out = the rows of W that Ids names: Ids' dims end in 1, which Out's replace by W's width; a "
                     "row for padding_idx is zeros.")
          .Input("W", "the table, [rows, width]; or SelectedRows of its rows (each id must be one of them)")
          .Input("Ids", "int64 (or int32) row numbers")
          .Output("Out", "the rows")
          .Attr("padding_idx", int64_t{kNoPadding}, "an id whose row is zeros and gets no gradient; -1: none")
          .Attr("is_sparse", false, "W's gradient as SelectedRows of the looked-up rows")
          .Attr("is_distributed", false,
                "a table row-sharded over the parameter servers: `rill transpile` fetches each batch's rows "
                "into W (prefetch) instead of pulling the whole table")
          .KernelDtypeFrom("W")
          .Grad(grad, "W,Ids,Out@GRAD", "W");
  r.Op(schema);
  r.Op(schema.MakeGradSchema());
  RegisterCpu<float, double, int8_t, int16_t>(r, type, [](auto t) { return &LookupTable<decltype(t), kV2>; });
  RegisterCpu<float, double>(r, grad.c_str(), [](auto t) { return &LookupTableGrad<decltype(t), kV2>; });
}

}  // namespace

void RegisterLookupTable(Registrar& r) {
  Add<false>(r, "lookup_table");
  Add<true>(r, "lookup_table_v2");
}

}  // namespace rill::math
