// charter._native: the generated C++ admission checkers (and, once their generated bindings exist,
// charter's reference kernels), built with nanobind by scikit-build-core during `pip install`.
//
// Every committed generated/cpp/<id>.hpp is included through charter_checkers.inc (CMake writes
// it: one #include per header) and registers itself by contract id with CHARTER_REGISTER_CHECKER.
// The checkers work over a byte span of the header plus the file size; this module only moves
// bytes and results across the boundary, with the GIL released while a checker runs.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "charter/admission.hpp"
#include "charter/registry.hpp"
#include "charter/values.hpp"

namespace nb = nanobind;
namespace rt = charter::rt;

namespace {

// Every checker this module can run, by key (Note [Checker libraries] in charter/registry.hpp). A
// deque: loading a library appends while other threads may hold references to earlier entries.
std::deque<rt::CheckerEntry>& registry() {
  static std::deque<rt::CheckerEntry> checkers;
  return checkers;
}

struct Registrar {
  explicit Registrar(const rt::CheckerEntry& c) { registry().push_back(c); }
};

}  // namespace

#define CHARTER_CAT2_(a, b) a##b
#define CHARTER_CAT_(a, b) CHARTER_CAT2_(a, b)
#define CHARTER_REGISTER_CHECKER(ns) \
  static const Registrar CHARTER_CAT_(charter_checker_, __COUNTER__){CHARTER_CHECKER_ENTRY(ns, ns::kContractId)};
#include "charter_checkers.inc"
#undef CHARTER_REGISTER_CHECKER

#ifdef CHARTER_WITH_KERNELS
#include "charter_kernels.hpp"
#endif

namespace {

const rt::CheckerEntry* find(std::string_view key) {
  for (const rt::CheckerEntry& c : registry()) {
    if (c.key == key) return &c;
  }
  return nullptr;
}

// A bytes-like object held for the duration of a check (bytes, bytearray, memoryview, mmap).
class Buffer {
 public:
  explicit Buffer(nb::handle obj) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_SIMPLE) != 0) throw nb::python_error();
  }
  ~Buffer() { PyBuffer_Release(&view_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  const unsigned char* data() const { return static_cast<const unsigned char*>(view_.buf); }
  std::uint64_t size() const { return static_cast<std::uint64_t>(view_.len); }

 private:
  Py_buffer view_{};
};

nb::str text(std::string_view s, const char* errors) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), errors);
  if (!o) throw nb::python_error();
  return nb::steal<nb::str>(o);
}

nb::object opt_text(bool has, const std::string& s) { return has ? nb::object(text(s, "replace")) : nb::none(); }

// Everything the Python glue needs to build an AdmissionReport.
nb::dict detail(const rt::Report& r) {
  nb::dict d;
  d["admitted"] = r.admitted;
  d["needs_more"] = r.needs_more;
  d["need"] = r.need;
  if (r.admitted) return d;
  const rt::Diagnostic& g = r.diagnostic;
  d["stage"] = text(r.stage, "strict");  // the stage whose check failed
  d["code"] = text(rt::code_name(g.code), "strict");
  d["code_stage"] = text(rt::stage_of(g.code), "strict");
  d["field"] = text(g.field, "surrogatepass");  // keys with lone surrogates stay as Python has them
  d["message"] = text(g.message, "replace");
  d["expected"] = opt_text(g.has_expected, g.expected);
  d["actual"] = opt_text(g.has_actual, g.actual);
  d["location"] = g.location.empty() ? nb::object(nb::none()) : nb::object(text(g.location, "replace"));
  d["offset"] = g.has_offset ? nb::object(nb::int_(g.offset)) : nb::object(nb::none());
  return d;
}

// The (absolute offset, bytes-like) regions a caller read for the stores stage (Note [Store
// regions] in charter/stores.hpp), held for the duration of a check.
class Regions {
 public:
  explicit Regions(nb::handle regions) {
    if (regions.is_none()) return;
    for (nb::handle item : regions) {
      nb::tuple pair = nb::cast<nb::tuple>(item);
      if (pair.size() != 2) throw nb::value_error("a region is an (offset, bytes) pair");
      const std::uint64_t offset = nb::cast<std::uint64_t>(pair[0]);
      const Buffer& data = buffers_.emplace_back(pair[1]);
      spans_.push_back(rt::Region{offset, data.data(), data.size()});
    }
  }
  rt::Span<rt::Region> span() const { return rt::Span<rt::Region>{spans_.data(), spans_.size()}; }

 private:
  std::deque<Buffer> buffers_;
  std::vector<rt::Region> spans_;
};

// The caller's `read_at(offset, length) -> bytes-like`, asked for each store read no passed region
// holds (Note [Store regions] in charter/stores.hpp). It runs with the GIL taken back; its bytes
// are held until the check ends. An exception it raises (or an answer longer than asked, which
// Context.read would not accept either) voids the check and is raised once the check returns.
class ReaderArg {
 public:
  explicit ReaderArg(nb::handle read_at) : read_at_(read_at) {}
  rt::RegionReader get() {
    if (read_at_.is_none()) return {};
    return rt::RegionReader{&ReaderArg::read, this};
  }
  void raise_if_failed() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static bool read(void* context, std::uint64_t offset, std::uint64_t length, rt::Region* out) {
    auto* self = static_cast<ReaderArg*>(context);
    nb::gil_scoped_acquire gil;
    try {
      nb::object data = self->read_at_(nb::int_(offset), nb::int_(length));
      const Buffer& held = self->buffers_.emplace_back(data);
      if (held.size() > length) {
        throw nb::value_error(("read_at returned " + std::to_string(held.size()) + " bytes for a read of " +
                               std::to_string(length)).c_str());
      }
      *out = rt::Region{offset, held.data(), held.size()};
      return true;
    } catch (...) {
      self->error_ = std::current_exception();
      return false;
    }
  }
  nb::handle read_at_;
  std::deque<Buffer> buffers_;
  std::exception_ptr error_;
};

// The companion file a contract's `config` binds, as the caller read it: bytes-like (its bytes),
// a str (why it could not be read), or None (not given); held for the duration of a check.
class CompanionArg {
 public:
  explicit CompanionArg(nb::handle obj) {
    if (obj.is_none()) return;
    if (nb::isinstance<nb::str>(obj)) {
      error_ = nb::cast<std::string>(obj);
      return;
    }
    buffer_.emplace(obj);
  }
  rt::Companion get() const {
    rt::Companion c;
    c.error = error_;
    if (buffer_) {
      c.read = true;
      c.data = buffer_->data();
      c.size = buffer_->size();
    }
    return c;
  }

 private:
  std::string error_;
  std::optional<Buffer> buffer_;
};

// A list of str as string_views held for the duration of a check (None: an empty list).
class Names {
 public:
  explicit Names(nb::handle obj) {
    if (obj.is_none()) return;
    for (nb::handle item : obj) held_.push_back(nb::cast<std::string>(item));
    for (const std::string& h : held_) views_.emplace_back(h);
  }
  rt::Span<std::string_view> span() const { return {views_.data(), views_.size()}; }

 private:
  std::deque<std::string> held_;
  std::vector<std::string_view> views_;
};

rt::Report run(std::string_view contract_id, nb::handle header, std::uint64_t file_size,
               std::string_view require_status, std::uint64_t max_header_bytes, nb::handle regions,
               nb::handle companion, nb::handle read_at, nb::handle only = nb::none(),
               nb::handle owned_keys = nb::none(), nb::handle skip = nb::none(),
               nb::handle reference = nb::none()) {
  const rt::CheckerEntry* c = find(contract_id);
  if (!c) throw nb::key_error(("no C++ checker for contract " + std::string(contract_id)).c_str());
  const rt::AdmitFn admit = c->admit;
  Buffer buf(header);
  const Regions held(regions);
  const CompanionArg beside(companion);
  ReaderArg reader(read_at);
  rt::Options options;
  const std::string require(require_status);
  options.require_status = require;
  options.max_header_bytes = max_header_bytes;
  options.regions = held.span();
  options.reader = reader.get();
  options.companion = beside.get();
  const Names only_names(only), owned(owned_keys), skipped(skip);
  options.share.has_only = !only.is_none();
  options.share.only = only_names.span();
  options.share.owned_keys = owned.span();
  options.skip = skipped.span();
  if (!reference.is_none()) options.reference = nb::cast<const rt::Reference*>(reference);
  rt::Report report;
  {
    nb::gil_scoped_release release;
    report = admit(buf.data(), buf.size(), file_size, options);
  }
  reader.raise_if_failed();
  return report;
}

nb::object int_of(const rt::Int& i) {
  if (i.huge) {
    if (i.digits.empty()) return nb::none();
    nb::object v = nb::module_::import_("builtins").attr("int")(text(i.digits, "strict"));
    return i.neg ? nb::object(-v) : v;
  }
  nb::object v = nb::int_(i.mag);
  return i.neg ? nb::object(-v) : v;
}

// The store facts a checker was generated with: what a caller needs to compute the regions.
nb::list store_facts(const rt::CheckerEntry& c) {
  nb::list out;
  for (const rt::StoreFacts& s : c.stores) {
    nb::dict d;
    d["name"] = text(s.name, "surrogatepass");
    d["kind"] = text(s.kind, "strict");
    d["tensor"] = text(s.tensor, "surrogatepass");
    nb::list fields, components, heads;
    for (const rt::StoreField& f : s.fields) fields.append(nb::make_tuple(text(f.name, "strict"), int_of(f.value)));
    for (const rt::StoreComponent& k : s.components) {
      components.append(nb::make_tuple(text(k.name, "surrogatepass"), int_of(k.ne0), int_of(k.ne1)));
    }
    for (const rt::HeadRow& h : s.head_rows) heads.append(int_of(h.value));
    d["fields"] = fields;
    d["components"] = components;
    d["head_rows"] = heads;
    out.append(d);
  }
  return out;
}

// Load a checker library (Note [Checker libraries], charter/registry.hpp): its entries join the
// registry under their keys. Keys are digests of the checkers' sources, so a key already present
// names the same checker and keeps its first entry. The library stays loaded for the life of the
// process: its entries point into it.
nb::list load_library(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw std::runtime_error("cannot load checker library " + path + ": " + dlerror());
  const auto library = reinterpret_cast<rt::LibraryFn>(dlsym(handle, rt::kLibrarySymbol));
  if (!library) {
    dlclose(handle);
    throw std::runtime_error(path + " is not a checker library: it has no symbol " + rt::kLibrarySymbol);
  }
  rt::LibraryStamp stamp{};
  std::size_t count = 0;
  const rt::CheckerEntry* entries = library(&stamp, &count);
  const rt::LibraryStamp own = rt::library_stamp();
  if (!rt::same_stamp(stamp, own)) {
    const std::string theirs = stamp.compiler ? stamp.compiler : "?";
    dlclose(handle);
    throw std::runtime_error("checker library " + path + " (version " + std::to_string(stamp.version) + ", " + theirs +
                             ") does not match charter._native (version " + std::to_string(own.version) + ", " +
                             own.compiler + "): rebuild it with the compiler that built the module");
  }
  nb::list keys;
  for (std::size_t i = 0; i < count; ++i) {
    if (!find(entries[i].key)) registry().push_back(entries[i]);
    keys.append(text(entries[i].key, "surrogatepass"));
  }
  return keys;
}

}  // namespace

NB_MODULE(_native, m) {
  m.doc() = "charter's native part: generated C++ admission checkers (docs/native.md)";

  const std::size_t compiled_in = registry().size();  // before any library is loaded
  m.def("contracts", [compiled_in] {
    nb::list out;
    for (std::size_t i = 0; i < compiled_in; ++i) out.append(text(registry()[i].id, "strict"));
    return out;
  }, "Contract ids of the C++ checkers compiled into this module (not those of loaded checker libraries).");

  m.def("info", [](std::string_view contract_id) {
    const rt::CheckerEntry* c = find(contract_id);
    if (!c) throw nb::key_error(("no C++ checker for contract " + std::string(contract_id)).c_str());
    nb::dict d, inputs;
    d["contract"] = text(c->id, "strict");
    d["model"] = text(c->model, "strict");
    d["spec"] = text(c->spec, "surrogatepass");
    d["format"] = text(c->format, "strict");
    d["status"] = text(c->status, "strict");
    d["companion"] = c->companion.empty() ? nb::object(nb::none()) : nb::object(text(c->companion, "surrogatepass"));
    for (const rt::InputDigest& in : c->inputs) inputs[text(in.path, "surrogatepass")] = text(in.sha256, "strict");
    d["inputs"] = inputs;
    d["stores"] = store_facts(*c);
    return d;
  }, nb::arg("contract_id"),
     "The contract, model, spec, format, status, input digests and embedded store facts of one checker.");

  m.def("load_library", &load_library, nb::arg("path"),
        "Load a checker library built by charter.engines.library; returns its keys (RuntimeError if it cannot be\n"
        "loaded or was built by another compiler or ABI).");

  m.attr("COMPILER") = rt::library_stamp().compiler;

  m.def("admit", [](std::string_view contract_id, nb::handle header, std::uint64_t file_size,
                    std::string_view require_status, std::uint64_t max_header_bytes, nb::handle regions,
                    nb::handle companion, nb::handle read_at) {
    const rt::Report r = run(contract_id, header, file_size, require_status, max_header_bytes, regions, companion,
                             read_at);
    if (r.admitted) return nb::make_tuple(true, nb::none(), nb::none(), nb::none(), nb::none(), nb::none());
    const rt::Diagnostic& g = r.diagnostic;
    return nb::make_tuple(false, text(rt::stage_of(g.code), "strict"), text(rt::code_name(g.code), "strict"),
                          text(g.field, "surrogatepass"),
                          g.has_offset ? nb::object(nb::int_(g.offset)) : nb::object(nb::none()),
                          text(g.message, "replace"));
  }, nb::arg("contract_id"), nb::arg("header"), nb::arg("file_size"), nb::arg("require_status") = "",
     nb::arg("max_header_bytes") = rt::gguf::kMaxHeaderBytes, nb::arg("regions").none() = nb::none(),
     nb::arg("companion").none() = nb::none(), nb::arg("read_at").none() = nb::none(),
     "Admit a header span (bytes-like) of a file of file_size bytes: (admitted, stage, code, field, offset, message).\n"
     "read_at: read_at(offset, length) -> bytes-like, asked for each read of a contract's embedded stores that\n"
     "regions, (absolute offset, bytes-like) pairs read up front, do not hold.\n"
     "companion: the file a contract's config binds, as read beside the artifact: bytes-like, or a str saying why it\n"
     "could not be read.");

  m.def("admit_detail", [](std::string_view contract_id, nb::handle header, std::uint64_t file_size,
                           std::string_view require_status, std::uint64_t max_header_bytes, nb::handle regions,
                           nb::handle companion, nb::handle read_at, nb::handle only, nb::handle owned_keys,
                           nb::handle skip, nb::handle reference) {
    return detail(run(contract_id, header, file_size, require_status, max_header_bytes, regions, companion, read_at,
                      only, owned_keys, skip, reference));
  }, nb::arg("contract_id"), nb::arg("header"), nb::arg("file_size"), nb::arg("require_status") = "",
     nb::arg("max_header_bytes") = rt::gguf::kMaxHeaderBytes, nb::arg("regions").none() = nb::none(),
     nb::arg("companion").none() = nb::none(), nb::arg("read_at").none() = nb::none(),
     nb::arg("only").none() = nb::none(), nb::arg("owned_keys").none() = nb::none(),
     nb::arg("skip").none() = nb::none(), nb::arg("reference").none() = nb::none(),
     "admit() with everything an AdmissionReport needs (expected, actual, location, needs_more).\n"
     "only, owned_keys, skip: a bundle's weight file (Note [Bundle stages]): the tensors it holds (None: all),\n"
     "metadata keys a bundle stage owns, the stages that do not run on it (lists of str).\n"
     "reference: a Reference (reference()) this header may be, or share values with (Note [Reference header]).");

  nb::class_<rt::Reference>(m, "Reference", "A header parsed once, its values hashed (Note [Reference header]).");

  m.def("reference", [](std::string_view format, nb::handle header, std::uint64_t file_size,
                        std::uint64_t max_header_bytes) -> nb::object {
    if (format != "gguf" && format != "safetensors") throw nb::value_error("format is gguf or safetensors");
    auto ref = std::make_unique<rt::Reference>();
    {
      Buffer buf(header);
      ref->bytes.assign(reinterpret_cast<const char*>(buf.data()), buf.size());
    }
    ref->max_header_bytes = max_header_bytes;
    bool read;
    {
      nb::gil_scoped_release release;
      rt::Report r;
      read = rt::read_header(format == "gguf" ? rt::Format::Gguf : rt::Format::Safetensors,
                             reinterpret_cast<const unsigned char*>(ref->bytes.data()), ref->bytes.size(), file_size,
                             max_header_bytes, ref->view, r);
      if (read) ref->hash_values();
    }
    if (!read) return nb::none();
    return nb::cast(ref.release(), nb::rv_policy::take_ownership);
  }, nb::arg("format"), nb::arg("header"), nb::arg("file_size"),
     nb::arg("max_header_bytes") = rt::gguf::kMaxHeaderBytes,
     "The header (bytes-like, copied) parsed once for many admit_detail calls, or None if the reader rejects it.");

  m.def("read", [](std::string_view format, nb::handle header, std::uint64_t file_size, std::uint64_t max_header_bytes) {
    if (format != "gguf" && format != "safetensors") throw nb::value_error("format is gguf or safetensors");
    Buffer buf(header);
    rt::Report r;
    rt::View v;
    {
      nb::gil_scoped_release release;
      if (format == "gguf") rt::gguf::parse(buf.data(), buf.size(), file_size, v, r, max_header_bytes);
      else rt::safetensors::parse(buf.data(), buf.size(), file_size, v, r);
    }
    if (!r.admitted) r.stage = rt::stage::kContainer;
    nb::dict d = detail(r);
    if (r.admitted) {
      d["kvs"] = v.meta.size();
      d["tensors"] = v.tensors.size();
      d["data_offset"] = v.data_offset;
    }
    return d;
  }, nb::arg("format"), nb::arg("header"), nb::arg("file_size"), nb::arg("max_header_bytes") = rt::gguf::kMaxHeaderBytes,
     "The strict reader alone (the container stage without a contract): its diagnostic, or a summary.");

  m.def("tensor_extents", [](std::string_view format, nb::handle header, std::uint64_t file_size, nb::handle names,
                             std::uint64_t max_header_bytes) -> nb::object {
    if (format != "gguf" && format != "safetensors") throw nb::value_error("format is gguf or safetensors");
    std::vector<std::string> wanted;
    for (nb::handle n : names) wanted.push_back(nb::cast<std::string>(n));
    Buffer buf(header);
    rt::Report r;
    rt::View v;
    {
      nb::gil_scoped_release release;
      if (format == "gguf") rt::gguf::parse(buf.data(), buf.size(), file_size, v, r, max_header_bytes);
      else rt::safetensors::parse(buf.data(), buf.size(), file_size, v, r);
    }
    if (!r.admitted) return nb::none();
    nb::dict out;
    for (const std::string& name : wanted) {
      for (const rt::TensorEntry& t : v.tensors) {
        if (t.name == name) {  // the first tensor of a name, as Context.tensor_named finds it
          out[text(name, "surrogatepass")] = nb::make_tuple(t.start, t.end);
          break;
        }
      }
    }
    return out;
  }, nb::arg("format"), nb::arg("header"), nb::arg("file_size"), nb::arg("names"),
     nb::arg("max_header_bytes") = rt::gguf::kMaxHeaderBytes,
     "{name: (start, end)} of the first tensor of each name the strict reader finds, or None if it rejects.");

  m.def("store_layouts", [] {
    nb::dict out;
    for (const rt::store::Layout* l : {&rt::store::kEmManifest, &rt::store::kEmComponent, &rt::store::kEmRecord,
                                       &rt::store::kPleManifest, &rt::store::kPlePage}) {
      nb::list fields;
      for (const rt::store::Field& f : l->fields) {
        fields.append(nb::make_tuple(text(f.name, "strict"), f.offset, f.width, f.bytes));
      }
      out[text(l->name, "strict")] = nb::make_tuple(l->size, fields);
    }
    return out;
  }, "The store record layouts of the C++ runtime: name -> (size, [(field, offset, width, is_bytes)]).");

  m.def("ggml_types", [] {
    nb::list out;
    for (const auto& t : rt::gguf::kGgmlTypes) out.append(nb::make_tuple(t.id, text(t.name, "strict"), t.block_size, t.block_bytes, t.row_header));
    return out;
  }, "The ggml type table of the C++ GGUF walker: (id, name, block size, block bytes, row header).");

  m.def("safetensors_dtypes", [] {
    nb::dict out;
    for (const auto& d : rt::safetensors::kDtypes) out[text(d.name, "strict")] = d.bits;
    return out;
  }, "The dtype table of the C++ safetensors walker: name -> bits.");

  m.def("first_bad_value", [](nb::handle data, std::uint32_t block_bytes, nb::handle fields) -> nb::object {
    namespace values = rt::values;
    std::vector<values::Field> table;
    for (nb::handle item : fields) {
      nb::tuple pair = nb::cast<nb::tuple>(item);
      if (pair.size() != 2) throw nb::value_error("a value field is an (offset, kind) pair");
      const std::uint32_t offset = nb::cast<std::uint32_t>(pair[0]);
      const std::string kind = nb::cast<std::string>(pair[1]);
      values::Kind k;
      if (kind == "f16") k = values::Kind::F16;
      else if (kind == "bf16") k = values::Kind::BF16;
      else if (kind == "f32") k = values::Kind::F32;
      else if (kind == "f64") k = values::Kind::F64;
      else if (kind == "e8m0") k = values::Kind::E8M0;
      else if (kind == "iq1m") k = values::Kind::IQ1M;
      else throw nb::value_error(("unknown value kind " + kind).c_str());
      if (static_cast<std::uint64_t>(offset) + values::width(k) > block_bytes) {
        throw nb::value_error("a value field lies outside its block");
      }
      table.push_back(values::Field{offset, k});
    }
    Buffer buf(data);
    values::Bad bad;
    {
      nb::gil_scoped_release release;
      bad = values::first_bad(buf.data(), buf.size(), block_bytes, rt::Span<values::Field>{table.data(), table.size()});
    }
    if (!bad.found) return nb::none();
    return nb::make_tuple(bad.block, bad.field, bad.raw);
  }, nb::arg("data"), nb::arg("block_bytes"), nb::arg("fields"),
     "The first bad value of the whole blocks of `data` (charter/values.hpp): (block, field index, raw bits), or None.");

  m.def("first_out_of_bounds", [](nb::handle data, const std::string& kind, nb::int_ lo, nb::int_ hi) -> nb::object {
    Buffer buf(data);
    auto scan = [&](auto zero) -> nb::object {
      using T = decltype(zero);
      using Wide = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
      Wide low = 0, high = 0;
      if (!nb::try_cast<Wide>(lo, low) || !nb::try_cast<Wide>(hi, high) || low < std::numeric_limits<T>::min() ||
          high > std::numeric_limits<T>::max()) {
        throw nb::value_error(("a bound does not fit " + kind).c_str());
      }
      rt::values::OutOfBounds<T> bad;
      {
        nb::gil_scoped_release release;
        bad = rt::values::first_out_of_bounds<T>(buf.data(), buf.size(), static_cast<T>(low), static_cast<T>(high));
      }
      if (!bad.found) return nb::none();
      return nb::make_tuple(bad.index, static_cast<Wide>(bad.value));
    };
    if (kind == "i8") return scan(std::int8_t{});
    if (kind == "u8") return scan(std::uint8_t{});
    if (kind == "i16") return scan(std::int16_t{});
    if (kind == "u16") return scan(std::uint16_t{});
    if (kind == "i32") return scan(std::int32_t{});
    if (kind == "u32") return scan(std::uint32_t{});
    if (kind == "i64") return scan(std::int64_t{});
    if (kind == "u64") return scan(std::uint64_t{});
    throw nb::value_error(("unknown integer kind " + kind).c_str());
  }, nb::arg("data"), nb::arg("kind"), nb::arg("lo"), nb::arg("hi"),
     "The first element of the whole elements of `data` outside [lo, hi] (charter/values.hpp): (index, value), or None.");

  m.def("changed_at", [](nb::handle objs, nb::handle others) {
    // Pointers compared, nothing called: the positions are gathered before the list is made, since
    // making it may run the collector, and a finalizer could change a list being walked.
    nb::object a = nb::steal(PySequence_Fast(objs.ptr(), "changed_at compares two sequences"));
    if (!a.is_valid()) throw nb::python_error();
    nb::object b = nb::steal(PySequence_Fast(others.ptr(), "changed_at compares two sequences"));
    if (!b.is_valid()) throw nb::python_error();
    const Py_ssize_t n = std::min(PySequence_Fast_GET_SIZE(a.ptr()), PySequence_Fast_GET_SIZE(b.ptr()));
    PyObject** x = PySequence_Fast_ITEMS(a.ptr());
    PyObject** y = PySequence_Fast_ITEMS(b.ptr());
    std::vector<Py_ssize_t> at;
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (x[i] != y[i]) at.push_back(i);
    }
    nb::list out;
    for (Py_ssize_t i : at) out.append(i);
    return out;
  }, nb::arg("objs"), nb::arg("others"),
     "The positions, within the shorter of two sequences, where they hold different objects (charter.memo.changed_at).");

  m.attr("JSON_MAX_DEPTH") = rt::json::kMaxDepth;
  m.attr("GGUF_MAX_HEADER_BYTES") = rt::gguf::kMaxHeaderBytes;
  m.attr("STORE_MAX_TABLE_BYTES") = rt::store::kMaxTableBytes;
  m.attr("STORE_CHUNK") = rt::store::kChunk;

#ifdef CHARTER_WITH_KERNELS
  charter_register_kernels(m);
#endif
}
