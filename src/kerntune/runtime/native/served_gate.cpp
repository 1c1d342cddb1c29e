// The native gate of kerntune's served operators: the kernel registered for aten::mm, addmm, bmm (and their .out
// forms) at one dispatch key while a table is served. Built on first use by kerntune.runtime.native_gate.
//
// Per call it reads the call's form (each tensor's dtype, device, sizes, strides and 16-byte alignment class,
// each scalar's value) and looks it up in a hash map of the forms seen so far:
// - a form decided as a miss calls the kernel the library had registered, from C++, and counts the call;
// - a form decided as served calls back into Python (the served kernel, which launches and counts), or, once it has
//   a launch plan (a compiled kernel's function handle, grid, block, shared memory and argument recipe, checked
//   against the served kernel's output once), allocates the output with torch's allocator and launches the
//   kernel from C++ through the CUDA driver's cuLaunchKernel on torch's current stream (a TMA descriptor the
//   kernel takes is encoded once and re-pointed at each call's tensor);
// - a form not seen yet is decided once by Python (the spec's shape reader and the table's dispatcher), which
//   runs the call and says how its form goes from then on.
// A spec's shape reader therefore decides from the form only: what it reads of a call must be a function of it.
// The miss path allocates nothing and never synchronises the device (it may run inside CUDA graph capture).

#include <torch/extension.h>
#include <torch/library.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <pybind11/complex.h>

#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

// SafeKernelFunction (what torch.library.get_kernel returns) keeps a copy of the kernel it names but exposes only
// a boxed call, which builds an IValue stack per call. Its copy is read out here (an explicit instantiation may
// name a private member) so that a miss calls the library's kernel unboxed, as the dispatcher itself would.
template <typename Tag, typename Tag::type Member>
struct ReadPrivate {
  friend typename Tag::type read(Tag) {
    return Member;
  }
};
struct SafeKernelCopy {
  using type = c10::KernelFunction c10::SafeKernelFunction::*;
  friend type read(SafeKernelCopy);
};
template struct ReadPrivate<SafeKernelCopy, &c10::SafeKernelFunction::kernel_>;

enum Op : int { MM, MM_OUT, ADDMM, ADDMM_OUT, BMM, BMM_OUT, N_OPS };
const char* const OP_NAMES[N_OPS] = {"aten::mm", "aten::mm.out", "aten::addmm", "aten::addmm.out", "aten::bmm",
                                     "aten::bmm.out"};

struct OpState {
  bool installed = false;
  std::optional<c10::OperatorHandle> handle;
  c10::KernelFunction original;
  std::atomic<int64_t> library{0};
  std::atomic<int64_t> served{0};
  std::atomic<int64_t> failed{0};
};

enum Kind : int { UNDECIDED, MISS, SERVED, PLANNED };

// One kernel parameter of a plan: a call tensor's data pointer, the output's, fixed bytes (an integer the form
// fixes, a pointer to memory the spec keeps), or a TMA descriptor (a CUtensorMap, passed by value) of a call
// tensor or of the output.
enum ArgKind : int { INPUT = 0, OUTPUT = 1, BYTES = 2, TENSOR_MAP = 3 };
struct PlanArg {
  ArgKind kind;
  int64_t value;  // INPUT: the tensor's index among the call's positional tensors; BYTES: the value;
                  // TENSOR_MAP: the tensor's index, or -1 for the output
  int size;  // BYTES: 1, 2, 4 or 8 (little endian)
  int map = -1;  // TENSOR_MAP: the plan's map
};

// A CUtensorMap: 128 opaque bytes; the driver needs 64-byte alignment, Triton keeps 128.
struct alignas(128) TensorMap {
  uint64_t words[16];
};
constexpr int MAX_MAPS = 8;  // the wide TMA kernel takes five

struct Plan {
  void* function;  // CUfunction, loaded by Triton in the device's primary context
  unsigned grid[3];
  unsigned block;
  unsigned shared;
  bool output_given;  // an .out form: the kernel writes the call's out
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  at::TensorOptions options;
  std::vector<PlanArg> args;
  std::vector<TensorMap> maps;  // encoded at the form's first planned call; re-pointed per call
};

// CUresult cuLaunchKernel(CUfunction, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemBytes, CUstream,
// void** kernelParams, void** extra): the driver's ABI, so no CUDA header is needed to build.
using LaunchKernel = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                             void**, void**);

// The driver torch already loaded; never loaded here (a CPU-only process has none, and plans nothing).
void* driver_symbol(const char* name) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return lib == nullptr ? nullptr : dlsym(lib, name);
}

LaunchKernel launch_kernel() {
  static LaunchKernel found = reinterpret_cast<LaunchKernel>(driver_symbol("cuLaunchKernel"));
  return found;
}

// CUresult cuTensorMapEncodeTiled(CUtensorMap*, CUtensorMapDataType, cuuint32_t rank, void* address,
// const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* element_strides,
// interleave, swizzle, L2 promotion, OOB fill) and cuTensorMapReplaceAddress(CUtensorMap*, void*): enums are ints.
using EncodeTiled = int (*)(TensorMap*, int, uint32_t, void*, const uint64_t*, const uint64_t*, const uint32_t*,
                            const uint32_t*, int, int, int, int);
using ReplaceAddress = int (*)(TensorMap*, void*);

EncodeTiled encode_tiled() {
  static EncodeTiled found = reinterpret_cast<EncodeTiled>(driver_symbol("cuTensorMapEncodeTiled"));
  return found;
}

ReplaceAddress replace_address() {
  static ReplaceAddress found = reinterpret_cast<ReplaceAddress>(driver_symbol("cuTensorMapReplaceAddress"));
  return found;
}

// A descriptor as Triton's launcher encodes a host TensorDescriptor (its fillTMADescriptor): dims and box
// innermost first, byte strides of all but the innermost dimension, element strides 1, no interleave, the
// kernel's swizzle, 128-byte L2 promotion, zero fill. encoding: (data type, element size, swizzle, rank,
// box..., shape..., strides...), outermost first. False where the driver refuses it.
bool encode_map(TensorMap& map, const std::vector<int64_t>& encoding, const void* address) {
  const auto encode = encode_tiled();
  if (encode == nullptr || encoding.size() < 4) {
    return false;
  }
  const int64_t rank = encoding[3];
  if (rank < 1 || rank > 5 || static_cast<int64_t>(encoding.size()) != 4 + 3 * rank) {
    return false;
  }
  const int64_t element_size = encoding[1];
  uint32_t box[5], element_strides[5] = {1, 1, 1, 1, 1};
  uint64_t dims[5], strides[5] = {0, 0, 0, 0, 0};
  for (int64_t i = 0; i < rank; ++i) {
    box[rank - 1 - i] = static_cast<uint32_t>(encoding[4 + i]);
    dims[rank - 1 - i] = static_cast<uint64_t>(encoding[4 + rank + i]);
  }
  for (int64_t i = 0; i + 1 < rank; ++i) {
    strides[rank - 2 - i] = static_cast<uint64_t>(element_size * encoding[4 + 2 * rank + i]);
  }
  constexpr int NO_INTERLEAVE = 0, L2_PROMOTION_128B = 2, NO_FILL = 0;
  return encode(&map, static_cast<int>(encoding[0]), static_cast<uint32_t>(rank), const_cast<void*>(address), dims,
                strides, box, element_strides, NO_INTERLEAVE, static_cast<int>(encoding[2]), L2_PROMOTION_128B,
                NO_FILL) == 0;
}

constexpr int FORM_WORDS = 64;

struct Form {
  int64_t words[FORM_WORDS];
  int size = 0;

  bool push(int64_t w) {
    if (size == FORM_WORDS) {
      return false;
    }
    words[size++] = w;
    return true;
  }
  bool operator==(const Form& other) const {
    return size == other.size && std::memcmp(words, other.words, sizeof(int64_t) * size) == 0;
  }
};

struct FormHash {
  size_t operator()(const Form& f) const {
    uint64_t h = 1469598103934665603ull ^ static_cast<uint64_t>(f.size);
    for (int i = 0; i < f.size; ++i) {
      h ^= static_cast<uint64_t>(f.words[i]) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    }
    return static_cast<size_t>(h);
  }
};

struct Slot {
  Kind kind = UNDECIDED;
  int64_t form_id = -1;
  std::atomic<int64_t> calls{0};
  std::shared_ptr<const Plan> plan;
};

// Every counter the gate keeps lives as long as the process: torch may call a kernel on another thread while
// Python closes the serving, and nothing here is freed at exit (static destruction runs after the interpreter
// and the dispatcher are gone).
OpState* g_ops = new OpState[N_OPS];
std::shared_mutex* g_lock = new std::shared_mutex();
auto* g_forms = new std::unordered_map<Form, std::unique_ptr<Slot>, FormHash>();
auto* g_retired = new std::vector<std::pair<int64_t, int64_t>>();
torch::Library* g_library = nullptr;
PyObject* g_first = nullptr;
PyObject* g_served = nullptr;

struct Call {
  Op op;
  const at::Tensor* tensors[4];
  int n_tensors;  // positional tensors in schema order
  const at::Tensor* out;
  const c10::Scalar* scalars[2];  // beta, alpha
  int n_scalars;
};

bool encode_tensor(Form& f, const at::Tensor& t) {
  if (!t.defined()) {
    return f.push(-1);
  }
  const auto dim = t.dim();
  if (dim > 4) {
    return false;
  }
  const auto device = t.device();
  const auto address = reinterpret_cast<uintptr_t>(t.const_data_ptr());
  int64_t align = 16;  // the alignment class a served launch is specialized on, up to 16 bytes
  while (align > 1 && address % static_cast<uintptr_t>(align) != 0) {
    align /= 2;
  }
  bool ok = f.push(static_cast<int64_t>(t.scalar_type())) &&
            f.push(static_cast<int64_t>(device.type()) * 1024 + device.index() + 1) &&
            f.push(static_cast<int64_t>(t.layout())) && f.push(dim) && f.push(align);
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  for (int64_t i = 0; ok && i < dim; ++i) {
    ok = f.push(sizes[i]) && f.push(strides[i]);
  }
  return ok;
}

bool encode_scalar(Form& f, const c10::Scalar& s) {
  if (s.isSymbolic() || s.isComplex()) {
    return false;
  }
  if (s.isBoolean()) {
    return f.push(3) && f.push(s.toBool() ? 1 : 0);
  }
  if (s.isIntegral(false)) {
    return f.push(2) && f.push(s.toLong());
  }
  const double value = s.toDouble();
  int64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return f.push(1) && f.push(bits);
}

bool encode(const Call& c, Form& f) {
  bool ok = f.push(c.op);
  for (int i = 0; ok && i < c.n_tensors; ++i) {
    ok = encode_tensor(f, *c.tensors[i]);
  }
  if (ok && c.out != nullptr) {
    ok = encode_tensor(f, *c.out);
  }
  for (int i = 0; ok && i < c.n_scalars; ++i) {
    ok = encode_scalar(f, *c.scalars[i]);
  }
  return ok;
}

py::object scalar_to_python(const c10::Scalar& s) {
  if (s.isBoolean()) {
    return py::bool_(s.toBool());
  }
  if (s.isIntegral(false)) {
    return py::int_(s.toLong());
  }
  if (s.isComplex()) {
    return py::cast(s.toComplexDouble());
  }
  return py::float_(s.toDouble());
}

// The call as torch hands a Python kernel its arguments: the positional tensors, and as keywords the output of an
// .out form and a scalar given another value than its default 1.
std::pair<py::tuple, py::dict> python_arguments(const Call& c) {
  py::tuple args(c.n_tensors);
  for (int i = 0; i < c.n_tensors; ++i) {
    args[i] = py::cast(*c.tensors[i]);
  }
  py::dict kwargs;
  static const char* const scalar_names[2] = {"beta", "alpha"};
  for (int i = 0; i < c.n_scalars; ++i) {
    const auto& s = *c.scalars[i];
    if (s.isComplex() || s.isSymbolic() || s.toDouble() != 1.0) {
      kwargs[scalar_names[i]] = scalar_to_python(s);
    }
  }
  if (c.out != nullptr) {
    kwargs["out"] = py::cast(*c.out);
  }
  return {std::move(args), std::move(kwargs)};
}

std::optional<at::Tensor> result_of(const py::object& result) {
  if (result.is_none()) {
    return std::nullopt;  // Python ran no kernel: the library's runs the call
  }
  return result.cast<at::Tensor>();
}

void record(const Form& form, Kind kind, int64_t form_id, std::shared_ptr<const Plan> plan = nullptr) {
  std::unique_lock<std::shared_mutex> lock(*g_lock);
  auto& slot = (*g_forms)[form];
  if (!slot) {
    slot = std::make_unique<Slot>();
  } else if (slot->form_id >= 0 && slot->form_id != form_id) {
    // A form decided again (its served kernel failed): its calls so far stay counted under its old decision.
    g_retired->emplace_back(slot->form_id, slot->calls.exchange(0));
  }
  slot->kind = kind;
  slot->form_id = form_id;
  slot->plan = std::move(plan);
}

// Launch a plan for this call: the output allocated by torch's caching allocator (or the call's out), the
// parameters filled from the call's tensors, on torch's current stream of the call's device. No other allocation,
// no synchronisation. nullopt where the driver refused the launch.
std::optional<at::Tensor> launch(const Plan& plan, const Call& c, const at::Tensor* out_override = nullptr) {
  const auto launch_fn = launch_kernel();
  if (launch_fn == nullptr) {
    return std::nullopt;
  }
  const at::Tensor& first = *c.tensors[0];
  c10::DeviceGuard guard(first.device());
  at::Tensor output;
  if (out_override != nullptr) {
    output = *out_override;
  } else if (plan.output_given) {
    output = *c.out;
  } else {
    output = at::empty_strided(plan.sizes, plan.strides, plan.options);
  }
  const size_t n = plan.args.size();
  uint64_t storage[64];
  void* params[66];
  TensorMap maps[MAX_MAPS];
  if (n > 64 || plan.maps.size() > MAX_MAPS) {
    return std::nullopt;
  }
  for (size_t i = 0; i < n; ++i) {
    const auto& arg = plan.args[i];
    if (arg.kind == TENSOR_MAP) {
      const auto replace = replace_address();
      TensorMap& map = maps[arg.map];
      map = plan.maps[arg.map];
      const void* address = arg.value < 0 ? output.const_data_ptr() : c.tensors[arg.value]->const_data_ptr();
      if (replace == nullptr || replace(&map, const_cast<void*>(address)) != 0) {
        return std::nullopt;
      }
      params[i] = &map;
      continue;
    }
    if (arg.kind == INPUT) {
      storage[i] = reinterpret_cast<uint64_t>(c.tensors[arg.value]->const_data_ptr());
    } else if (arg.kind == OUTPUT) {
      storage[i] = reinterpret_cast<uint64_t>(output.const_data_ptr());
    } else {
      storage[i] = 0;
      std::memcpy(&storage[i], &arg.value, static_cast<size_t>(arg.size));
    }
    params[i] = &storage[i];
  }
  uint64_t no_scratch = 0;  // Triton's global and profile scratch pointers: a planned kernel needs neither
  params[n] = &no_scratch;
  params[n + 1] = &no_scratch;
  const auto stream = c10::impl::getDeviceGuardImpl(first.device().type())->getStream(first.device());
  const int status = launch_fn(plan.function, plan.grid[0], plan.grid[1], plan.grid[2], plan.block, 1, 1,
                               plan.shared, stream.native_handle(), params, nullptr);
  if (status != 0) {
    return std::nullopt;
  }
  return output;
}

// A plan from Python: (function, (gx, gy, gz), block, shared, output given, example output or None,
// [(kind, value, size) or (TENSOR_MAP, tensor, 128, encoding)]); a TMA descriptor is encoded for this call's
// tensor (`output`: the call's result). Null where one cannot be encoded.
std::shared_ptr<const Plan> plan_of(const py::tuple& spec, const Call& c, const at::Tensor& output) {
  auto plan = std::make_shared<Plan>();
  plan->function = reinterpret_cast<void*>(spec[0].cast<uint64_t>());
  const auto grid = spec[1].cast<py::tuple>();
  for (int i = 0; i < 3; ++i) {
    plan->grid[i] = grid[i].cast<unsigned>();
  }
  plan->block = spec[2].cast<unsigned>();
  plan->shared = spec[3].cast<unsigned>();
  plan->output_given = spec[4].cast<bool>();
  if (!plan->output_given) {
    const auto example = spec[5].cast<at::Tensor>();
    plan->sizes = example.sizes().vec();
    plan->strides = example.strides().vec();
    plan->options = example.options();
  }
  for (const auto& item : spec[6].cast<py::list>()) {
    const auto arg = item.cast<py::tuple>();
    PlanArg planned{static_cast<ArgKind>(arg[0].cast<int>()), arg[1].cast<int64_t>(), arg[2].cast<int>()};
    if (planned.kind == TENSOR_MAP) {
      const int64_t tensor = planned.value;
      if (arg.size() != 4 || tensor >= c.n_tensors || tensor < -1 || plan->maps.size() == MAX_MAPS) {
        return nullptr;
      }
      const void* address = tensor < 0 ? output.const_data_ptr() : c.tensors[tensor]->const_data_ptr();
      TensorMap map{};
      if (!encode_map(map, arg[3].cast<std::vector<int64_t>>(), address)) {
        return nullptr;
      }
      planned.map = static_cast<int>(plan->maps.size());
      plan->maps.push_back(map);
    }
    plan->args.push_back(planned);
  }
  return plan;
}

// A plan is kept only where its launch reproduces the served kernel's output for this call, bit for bit.
bool plan_matches(const Plan& plan, const Call& c, const at::Tensor& expected) {
  at::Tensor scratch;
  if (plan.output_given) {
    scratch = at::empty_strided(c.out->sizes(), c.out->strides(), c.out->options());
  }
  const auto got = launch(plan, c, plan.output_given ? &scratch : nullptr);
  return got.has_value() && got->sizes() == expected.sizes() && at::equal(*got, expected);
}

// A form not decided yet: Python decides it, runs the call (counting it) and gives back
// (form id, served, result or None); a form that could not be encoded is decided on every call.
std::optional<at::Tensor> first_call(const Call& c, const Form& form, bool cacheable) {
  py::gil_scoped_acquire gil;
  auto [args, kwargs] = python_arguments(c);
  py::object decided = py::reinterpret_borrow<py::object>(g_first)(static_cast<int>(c.op), args, kwargs);
  auto parts = decided.cast<py::tuple>();
  const auto form_id = parts[0].cast<int64_t>();
  if (cacheable && form_id >= 0) {
    record(form, parts[1].cast<bool>() ? SERVED : MISS, form_id);
  }
  return result_of(parts[2]);
}

// A form decided as served: the Python served kernel launches and counts, and may hand back a launch plan for the
// form, kept once it reproduces this call's output. Python gives (result or None, plan or None); a None result
// means it failed (the library runs the call, and the form is decided again at its next call).
std::optional<at::Tensor> served_call(const Call& c, const Form& form, int64_t form_id) {
  std::optional<at::Tensor> result;
  std::shared_ptr<const Plan> plan;
  {
    py::gil_scoped_acquire gil;
    auto [args, kwargs] = python_arguments(c);
    py::object answer = py::reinterpret_borrow<py::object>(g_served)(static_cast<int>(c.op), form_id, args, kwargs);
    auto parts = answer.cast<py::tuple>();
    result = result_of(parts[0]);
    if (!result) {
      record(form, UNDECIDED, -1);
      return std::nullopt;
    }
    if (!parts[1].is_none()) {
      plan = plan_of(parts[1].cast<py::tuple>(), c, *result);
    }
  }
  if (plan && plan_matches(*plan, c, *result)) {
    record(form, PLANNED, form_id, std::move(plan));
  }
  return result;
}

// nullopt: the caller runs the library's kernel.
std::optional<at::Tensor> gate(const Call& c) {
  Form form;
  const bool cacheable = encode(c, form);
  if (cacheable) {
    std::shared_lock<std::shared_mutex> lock(*g_lock);
    auto found = g_forms->find(form);
    if (found != g_forms->end()) {
      Slot& slot = *found->second;
      if (slot.kind == MISS) {
        slot.calls.fetch_add(1, std::memory_order_relaxed);
        g_ops[c.op].library.fetch_add(1, std::memory_order_relaxed);
        return std::nullopt;
      }
      if (slot.kind == PLANNED) {
        slot.calls.fetch_add(1, std::memory_order_relaxed);
        const std::shared_ptr<const Plan> plan = slot.plan;
        const int64_t form_id = slot.form_id;
        lock.unlock();
        if (auto launched = launch(*plan, c)) {
          g_ops[c.op].served.fetch_add(1, std::memory_order_relaxed);
          return launched;
        }
        // The driver refused the launch: a counted failure; the library runs the call, Python decides the form
        // again (and never plans it twice).
        g_ops[c.op].failed.fetch_add(1, std::memory_order_relaxed);
        record(form, SERVED, form_id);
        return std::nullopt;
      }
      if (slot.kind == SERVED) {
        const int64_t form_id = slot.form_id;
        lock.unlock();
        return served_call(c, form, form_id);
      }
    }
  }
  return first_call(c, form, cacheable);
}

at::Tensor mm(c10::DispatchKeySet keys, const at::Tensor& a, const at::Tensor& b, Op op) {
  const Call c{op, {&a, &b}, 2, nullptr, {}, 0};
  if (auto served = gate(c)) {
    return *std::move(served);
  }
  const auto& state = g_ops[op];
  return state.original.call<at::Tensor, const at::Tensor&, const at::Tensor&>(*state.handle, keys, a, b);
}

at::Tensor& mm_out(c10::DispatchKeySet keys, const at::Tensor& a, const at::Tensor& b, at::Tensor& out, Op op) {
  const Call c{op, {&a, &b}, 2, &out, {}, 0};
  if (gate(c)) {
    return out;  // the served kernel wrote the given output
  }
  const auto& state = g_ops[op];
  return state.original.call<at::Tensor&, const at::Tensor&, const at::Tensor&, at::Tensor&>(
      *state.handle, keys, a, b, out);
}

at::Tensor mm_kernel(c10::DispatchKeySet keys, const at::Tensor& a, const at::Tensor& b) {
  return mm(keys, a, b, MM);
}

at::Tensor bmm_kernel(c10::DispatchKeySet keys, const at::Tensor& a, const at::Tensor& b) {
  return mm(keys, a, b, BMM);
}

at::Tensor& mm_out_kernel(c10::DispatchKeySet keys, const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  return mm_out(keys, a, b, out, MM_OUT);
}

at::Tensor& bmm_out_kernel(c10::DispatchKeySet keys, const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  return mm_out(keys, a, b, out, BMM_OUT);
}

at::Tensor addmm_kernel(
    c10::DispatchKeySet keys,
    const at::Tensor& bias,
    const at::Tensor& a,
    const at::Tensor& b,
    const c10::Scalar& beta,
    const c10::Scalar& alpha) {
  const Call c{ADDMM, {&bias, &a, &b}, 3, nullptr, {&beta, &alpha}, 2};
  if (auto served = gate(c)) {
    return *std::move(served);
  }
  const auto& state = g_ops[ADDMM];
  return state.original.call<
      at::Tensor,
      const at::Tensor&,
      const at::Tensor&,
      const at::Tensor&,
      const c10::Scalar&,
      const c10::Scalar&>(*state.handle, keys, bias, a, b, beta, alpha);
}

at::Tensor& addmm_out_kernel(
    c10::DispatchKeySet keys,
    const at::Tensor& bias,
    const at::Tensor& a,
    const at::Tensor& b,
    const c10::Scalar& beta,
    const c10::Scalar& alpha,
    at::Tensor& out) {
  const Call c{ADDMM_OUT, {&bias, &a, &b}, 3, &out, {&beta, &alpha}, 2};
  if (gate(c)) {
    return out;
  }
  const auto& state = g_ops[ADDMM_OUT];
  return state.original.call<
      at::Tensor&,
      const at::Tensor&,
      const at::Tensor&,
      const at::Tensor&,
      const c10::Scalar&,
      const c10::Scalar&,
      at::Tensor&>(*state.handle, keys, bias, a, b, beta, alpha, out);
}

torch::CppFunction kernel_of(Op op) {
  switch (op) {
    case MM:
      return torch::CppFunction::makeFromUnboxedFunction(TORCH_FN(mm_kernel));
    case MM_OUT:
      return torch::CppFunction::makeFromUnboxedFunction(TORCH_FN(mm_out_kernel));
    case ADDMM:
      return torch::CppFunction::makeFromUnboxedFunction(TORCH_FN(addmm_kernel));
    case ADDMM_OUT:
      return torch::CppFunction::makeFromUnboxedFunction(TORCH_FN(addmm_out_kernel));
    case BMM:
      return torch::CppFunction::makeFromUnboxedFunction(TORCH_FN(bmm_kernel));
    default:
      return torch::CppFunction::makeFromUnboxedFunction(TORCH_FN(bmm_out_kernel));
  }
}

class QuietWarnings : public c10::WarningHandler {
 public:
  void process(const c10::Warning& /*warning*/) override {}
};

int op_index(const std::string& name) {
  for (int i = 0; i < N_OPS; ++i) {
    if (name == OP_NAMES[i]) {
      return i;
    }
  }
  return -1;
}

void uninstall() {
  if (g_library != nullptr) {
    delete g_library;  // removes the registrations: the library's kernels take every call again
    g_library = nullptr;
  }
  for (int i = 0; i < N_OPS; ++i) {
    g_ops[i].installed = false;
  }
  {
    std::unique_lock<std::shared_mutex> lock(*g_lock);
    g_forms->clear();
    g_retired->clear();
  }
  Py_CLEAR(g_first);
  Py_CLEAR(g_served);
}

// Register the gate for `ops` at `dispatch_key`. first(op, args, kwargs) -> (form id, served, result or None);
// served(op, form id, args, kwargs) -> (result or None, plan or None).
void install(const std::vector<std::string>& ops, const std::string& dispatch_key, py::object first,
             py::object served) {
  TORCH_CHECK(g_library == nullptr, "the native gate is installed already; uninstall it first");
  const auto key = c10::parseDispatchKey(dispatch_key);
  std::vector<int> chosen;
  for (const auto& name : ops) {
    const int index = op_index(name);
    TORCH_CHECK(index >= 0, "the native gate does not take ", name);
    const auto dot = name.find('.');
    const std::string base = name.substr(0, dot);
    const std::string overload = dot == std::string::npos ? "" : name.substr(dot + 1);
    auto handle = c10::Dispatcher::singleton().findSchemaOrThrow(base.c_str(), overload.c_str());
    TORCH_CHECK(handle.hasComputedKernelForDispatchKey(key), name, " has no kernel for ", dispatch_key);
    const auto safe = handle.getComputedKernelForDispatchKey(key);
    auto& state = g_ops[index];
    state.original = safe.*read(SafeKernelCopy());
    TORCH_CHECK(state.original.isValid(), name, "'s kernel for ", dispatch_key, " cannot be called");
    state.handle.emplace(handle);
    state.library.store(0);
    state.served.store(0);
    state.failed.store(0);
    chosen.push_back(index);
  }
  g_first = first.release().ptr();
  g_served = served.release().ptr();
  QuietWarnings quiet;  // torch warns that an aten kernel is overridden: replacing it is the point (reversible)
  c10::WarningUtils::WarningHandlerGuard guard(&quiet);
  g_library = new torch::Library(torch::Library::IMPL, "aten", key, __FILE__, __LINE__);
  for (const int index : chosen) {
    const std::string name = std::string(OP_NAMES[index]).substr(6);  // without "aten::"
    g_library->impl(name.c_str(), kernel_of(static_cast<Op>(index)));
    g_ops[index].installed = true;
  }
}

// Calls counted here so far: ([(form id, calls, planned)], [(library, served, failed) per op in OP_NAMES order]).
// Totals, not deltas.
py::tuple counts() {
  py::list forms;
  {
    std::shared_lock<std::shared_mutex> lock(*g_lock);
    for (const auto& [form, slot] : *g_forms) {
      if (slot->form_id >= 0) {
        forms.append(py::make_tuple(slot->form_id, slot->calls.load(), slot->kind == PLANNED));
      }
    }
    for (const auto& [form_id, calls] : *g_retired) {
      forms.append(py::make_tuple(form_id, calls, false));
    }
  }
  py::list ops;
  for (int i = 0; i < N_OPS; ++i) {
    ops.append(py::make_tuple(g_ops[i].library.load(), g_ops[i].served.load(), g_ops[i].failed.load()));
  }
  return py::make_tuple(forms, ops);
}

bool can_launch() {
  return launch_kernel() != nullptr;
}

std::vector<std::string> op_names() {
  return std::vector<std::string>(OP_NAMES, OP_NAMES + N_OPS);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "kerntune's native gate for served aten GEMM operators";
  m.def("install", &install, "register the gate for the named operators at a dispatch key");
  m.def("uninstall", &uninstall, "remove the gate's registrations and forget every decided form");
  m.def("counts", &counts, "calls counted in C++: per decided form, and library calls per operator");
  m.def("op_names", &op_names, "the operators the gate can take, in the order counts() reports them");
  m.def("can_launch", &can_launch, "whether this process has the CUDA driver loaded: plans can be launched");
}
