// The runtime of the generated kernel bindings (generated/bindings/<kernel>.cpp): table-driven
// checks of dtype, device, rank, contiguity, shape and aliasing, with errors that name the kernel,
// the argument and the dim, before any kernel runs.
//
// A generated binding holds its kernel contract as constexpr tables (ArgSpec per array, one
// Variant per model whose constants differ) and calls Call::input / Call::output for every array,
// then Call::finish, which picks the one model the shapes fit and allocates the outputs the caller
// did not pass. Arrays are never converted: every array parameter is declared `.noconvert()` and
// an array of another dtype, layout or device is refused here with TypeError or ValueError, so an
// output can never be silently replaced by a converted copy that the kernel would write instead.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "kernels.hpp"

namespace charter::bind {

namespace nb = nanobind;

inline constexpr int kMaxRank = 4;

enum class DType : std::uint8_t { Float32, Float16, Int32, Int64, UInt8, UInt32 };

inline const char* dtype_name(DType t) noexcept {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float16: return "float16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::UInt32: return "uint32";
  }
  return "?";
}

inline nb::dlpack::dtype dlpack_of(DType t) noexcept {
  using code = nb::dlpack::dtype_code;
  switch (t) {
    case DType::Float32: return {static_cast<std::uint8_t>(code::Float), 32, 1};
    case DType::Float16: return {static_cast<std::uint8_t>(code::Float), 16, 1};
    case DType::Int32: return {static_cast<std::uint8_t>(code::Int), 32, 1};
    case DType::Int64: return {static_cast<std::uint8_t>(code::Int), 64, 1};
    case DType::UInt8: return {static_cast<std::uint8_t>(code::UInt), 8, 1};
    case DType::UInt32: return {static_cast<std::uint8_t>(code::UInt), 32, 1};
  }
  return {};
}

inline std::string describe(nb::dlpack::dtype t) {
  using code = nb::dlpack::dtype_code;
  std::string name;
  switch (static_cast<code>(t.code)) {
    case code::Int: name = "int"; break;
    case code::UInt: name = "uint"; break;
    case code::Float: name = "float"; break;
    case code::Bfloat: name = "bfloat"; break;
    case code::Complex: name = "complex"; break;
    case code::Bool: return "bool";
    default: name = "dtype(code " + std::to_string(t.code) + ")"; break;
  }
  name += std::to_string(t.bits);
  if (t.lanes != 1) {
    name += "x" + std::to_string(t.lanes);
  }
  return name;
}

// One dim of a contract shape: a literal, a free dim (bound by its first occurrence), or a value
// fixed by the model (a constant or an expression over constants; one value per Variant).
struct Dim {
  enum class Kind : std::uint8_t { Literal, Free, Model };
  Kind kind;
  std::int64_t literal;  // Literal: the value
  int slot;              // Free: index into the free dims; Model: index into Variant::values
  const char* text;      // the contract's text of this dim (for messages)
};

struct ArgSpec {
  const char* name;
  DType dtype;
  int rank;
  std::array<Dim, kMaxRank> dims;
};

// The model-fixed values of one model (or of several whose values are all equal).
template <std::size_t N>
struct Variant {
  const char* models;
  std::array<std::int64_t, N> values;
};

inline std::string shape_text(const std::int64_t* shape, std::size_t rank) {
  std::string out = "(";
  for (std::size_t i = 0; i < rank; ++i) {
    out += std::to_string(shape[i]);
    out += (rank == 1) ? "," : (i + 1 < rank ? ", " : "");
  }
  return out + ")";
}

inline std::string spec_text(const ArgSpec& spec) {
  std::string out = "[";
  for (int i = 0; i < spec.rank; ++i) {
    out += spec.dims[i].text;
    out += (i + 1 < spec.rank) ? ", " : "";
  }
  return out + "]";
}

[[noreturn]] inline void type_error(const std::string& message) { throw nb::type_error(message.c_str()); }
[[noreturn]] inline void value_error(const std::string& message) { throw nb::value_error(message.c_str()); }

// The checks of one call. `N` model-fixed slots, `V` variants, `F` free dims.
template <std::size_t N, std::size_t V, std::size_t F>
class Call {
 public:
  Call(const char* kernel, const std::array<Variant<N>, V>& variants,
       const std::array<const char*, F>& free_names, const std::array<const char*, N>& slot_names)
      : kernel_(kernel), variants_(variants), free_names_(free_names), slot_names_(slot_names) {
    for (std::size_t v = 0; v < V; ++v) {
      alive_[v] = true;
    }
  }

  // Check an input array against its contract spec (and bind its free dims).
  const void* input(const ArgSpec& spec, const nb::ndarray<nb::ro>& a) {
    check(spec, a.dtype(), a.device_type(), a.ndim(), a.shape_ptr(), a.stride_ptr());
    remember(a.data(), a.nbytes(), spec.name, false);
    return a.data();
  }

  // Check an output array the caller passed; a missing one is allocated by finish().
  void output(const ArgSpec& spec, const std::optional<nb::ndarray<>>& a) {
    if (!a) {
      return;
    }
    check(spec, a->dtype(), a->device_type(), a->ndim(), a->shape_ptr(), a->stride_ptr());
    remember(a->data(), a->nbytes(), spec.name, true);
  }

  // Select the model, then allocate `a` (numpy.empty of the contract's shape) if it is missing.
  void finish_output(const ArgSpec& spec, std::optional<nb::ndarray<>>& a) {
    select();
    if (a) {
      return;
    }
    nb::list shape;
    for (int i = 0; i < spec.rank; ++i) {
      shape.append(value_of(spec.dims[i]));
    }
    nb::object array = nb::module_::import_("numpy").attr("empty")(nb::tuple(shape), dtype_name(spec.dtype));
    a = nb::cast<nb::ndarray<>>(array, /*convert=*/false);
    remember(a->data(), a->nbytes(), spec.name, true);
  }

  // The one variant the shapes fit; ValueError if none or several remain.
  const Variant<N>& select() {
    if (selected_ >= 0) {
      return variants_[static_cast<std::size_t>(selected_)];
    }
    std::size_t count = 0;
    std::string names;
    for (std::size_t v = 0; v < V; ++v) {
      if (alive_[v]) {
        selected_ = static_cast<int>(v);
        names += (count ? " or " : "");
        names += variants_[v].models;
        ++count;
      }
    }
    if (count != 1) {
      selected_ = -1;
      value_error(prefix() + "the arrays passed fit " + names +
                  "; pass the outputs as well, so their shapes tell which model is meant");
    }
    return variants_[static_cast<std::size_t>(selected_)];
  }

  // The index of the variant the shapes fit (the row of a binding's kFixed table).
  std::size_t variant() {
    select();
    return static_cast<std::size_t>(selected_);
  }

  std::size_t free_dim(int slot) const { return static_cast<std::size_t>(free_[slot]); }

  std::int64_t model_value(int slot) { return select().values[static_cast<std::size_t>(slot)]; }

  // Raise ValueError for a kernel's domain error.
  void raise_if(const charter::kernels::Status& status) const {
    if (status.ok()) {
      return;
    }
    std::string message = prefix();
    if (status.row >= 0) {
      message += "row " + std::to_string(status.row) + ": ";
    }
    value_error(message + status.error);
  }

 private:
  std::string prefix() const { return std::string(kernel_) + "(): "; }

  std::int64_t value_of(const Dim& d) {
    switch (d.kind) {
      case Dim::Kind::Literal: return d.literal;
      case Dim::Kind::Free: return free_[d.slot];
      case Dim::Kind::Model: return model_value(d.slot);
    }
    return 0;
  }

  void check(const ArgSpec& spec, nb::dlpack::dtype dtype, int device, std::size_t ndim,
             const std::int64_t* shape, const std::int64_t* strides) {
    const std::string name = std::string("argument '") + spec.name + "'";
    if (dtype != dlpack_of(spec.dtype)) {
      type_error(prefix() + name + " must have dtype " + dtype_name(spec.dtype) + ", got " + describe(dtype) +
                 " (arrays are never converted)");
    }
    if (device != nb::device::cpu::value) {
      type_error(prefix() + name + " must be a CPU array");
    }
    if (ndim != static_cast<std::size_t>(spec.rank)) {
      value_error(prefix() + name + " must have " + std::to_string(spec.rank) + " dims " + spec_text(spec) +
                  ", got shape " + shape_text(shape, ndim));
    }
    for (int i = 0; i < spec.rank; ++i) {
      check_dim(spec, i, shape[i], shape_text(shape, ndim));
    }
    std::int64_t expected = 1;  // C order; dims of extent 1 may have any stride (numpy's rule)
    std::int64_t size = 1;
    for (int i = 0; i < spec.rank; ++i) {
      size *= shape[i];
    }
    for (int i = spec.rank - 1; i >= 0 && size > 1; --i) {
      if (shape[i] != 1 && strides[i] != expected) {
        value_error(prefix() + name + " must be C-contiguous; dim " + std::to_string(i) + " has stride " +
                    std::to_string(strides[i]) + " elements, expected " + std::to_string(expected) +
                    " (arrays are never copied: pass numpy.ascontiguousarray(...))");
      }
      expected *= shape[i];
    }
  }

  void check_dim(const ArgSpec& spec, int i, std::int64_t got, const std::string& shape) {
    const Dim& d = spec.dims[i];
    const std::string where = prefix() + "argument '" + spec.name + "' dim " + std::to_string(i) + " (" + d.text + ")";
    switch (d.kind) {
      case Dim::Kind::Literal:
        if (got != d.literal) {
          value_error(where + " must be " + std::to_string(d.literal) + ", got " + std::to_string(got) +
                      " (shape " + shape + ")");
        }
        return;
      case Dim::Kind::Free:
        if (free_bound_[d.slot] == nullptr) {
          free_[d.slot] = got;
          free_bound_[d.slot] = spec.name;
          free_dim_index_[d.slot] = i;
        } else if (free_[d.slot] != got) {
          value_error(where + " is " + std::to_string(got) + ", but argument '" + free_bound_[d.slot] + "' dim " +
                      std::to_string(free_dim_index_[d.slot]) + " set " + free_names_[d.slot] + " = " +
                      std::to_string(free_[d.slot]) + " (shape " + shape + ")");
        }
        return;
      case Dim::Kind::Model: {
        std::string options;
        bool any = false;
        for (std::size_t v = 0; v < V; ++v) {
          if (!alive_[v]) {
            continue;
          }
          const std::int64_t want = variants_[v].values[static_cast<std::size_t>(d.slot)];
          if (want == got) {
            any = true;
          }
          options += options.empty() ? "" : ", ";
          options += std::to_string(want) + " in " + variants_[v].models;
        }
        if (!any) {
          std::string because;
          if (chosen_by_ != nullptr) {
            because = " (the models left after argument '" + std::string(chosen_by_) + "')";
          }
          value_error(where + " is " + std::to_string(got) + "; " + slot_names_[d.slot] + " is " + options +
                      because + " (shape " + shape + ")");
        }
        bool narrowed = false;
        for (std::size_t v = 0; v < V; ++v) {
          if (alive_[v] && variants_[v].values[static_cast<std::size_t>(d.slot)] != got) {
            alive_[v] = false;
            narrowed = true;
          }
        }
        if (narrowed || chosen_by_ == nullptr) {
          chosen_by_ = spec.name;
        }
        return;
      }
    }
  }

  // Outputs may not overlap inputs or each other: the kernels read inputs while writing outputs.
  void remember(const void* data, std::size_t nbytes, const char* name, bool is_output) {
    const auto begin = reinterpret_cast<std::uintptr_t>(data);
    const auto end = begin + nbytes;
    for (std::size_t i = 0; i < count_; ++i) {
      const Extent& e = extents_[i];
      const bool overlap = nbytes != 0 && e.end != e.begin && begin < e.end && e.begin < end;
      if (overlap && (is_output || e.is_output)) {
        value_error(prefix() + "argument '" + name + "' overlaps argument '" + e.name +
                    "' (an output may not share memory with another argument)");
      }
    }
    if (count_ < extents_.size()) {
      extents_[count_++] = Extent{begin, end, name, is_output};
    }
  }

  struct Extent {
    std::uintptr_t begin;
    std::uintptr_t end;
    const char* name;
    bool is_output;
  };

  const char* kernel_;
  const std::array<Variant<N>, V>& variants_;
  const std::array<const char*, F>& free_names_;
  const std::array<const char*, N>& slot_names_;
  std::array<bool, V> alive_{};
  int selected_ = -1;
  const char* chosen_by_ = nullptr;
  std::array<std::int64_t, (F > 0 ? F : 1)> free_{};
  std::array<const char*, (F > 0 ? F : 1)> free_bound_{};
  std::array<int, (F > 0 ? F : 1)> free_dim_index_{};
  std::array<Extent, 16> extents_{};
  std::size_t count_ = 0;
};

}  // namespace charter::bind
