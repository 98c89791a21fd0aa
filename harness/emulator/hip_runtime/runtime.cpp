// The HIP runtime of the gfx950 emulator: the host half of HIP, on the CPU.
// Kernels are registered as clang's host code registers them; a launch
// goes to a callback (harness/emulator/launch_hip.py) that runs the
// kernel's gfx950 code on the emulator. Memory is host memory; streams
// and events are no-ops that complete in order.
#include <hip/hip_runtime_api.h>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// One kernel clang registered: its fat binary and its symbol.
struct Kernel {
  const void* fatbin;
  std::string name;
};

// What clang's module constructor hands to __hipRegisterFatBinary.
struct FatbinWrapper {
  int magic;
  int version;
  const void* binary;
  void* unused;
};

struct CallConfig {
  dim3 grid, block;
  size_t shared;
  hipStream_t stream;
};

// Live host blocks the out-of-bounds checker accepts.
struct Block {
  size_t size;
  int kind;  // 0 tensor storage, 1 hipMalloc
};

using LaunchHook = int (*)(const void* fatbin, const char* name,
                           const unsigned* grid, const unsigned* block,
                           void** args, size_t shared);

std::mutex lock;
std::map<const void*, Kernel> kernels;
std::vector<CallConfig> configs;
std::map<const void*, Block> blocks;
LaunchHook hook = nullptr;
hipError_t last_error = hipSuccess;
char fault_text[2048] = "";

hipError_t fail(hipError_t error) {
  last_error = error;
  return error;
}

void remember(const void* ptr, size_t size, int kind) {
  std::lock_guard<std::mutex> held(lock);
  blocks[ptr] = Block{size, kind};
}

void forget(const void* ptr) {
  std::lock_guard<std::mutex> held(lock);
  blocks.erase(ptr);
}

// CPU tensors' storages, seen where they are allocated: the
// emulator must know every live tensor to check accesses.
class TrackingAllocator final : public c10::Allocator {
 public:
  explicit TrackingAllocator(c10::Allocator* inner) : inner_(inner) {}

  c10::DataPtr allocate(size_t nbytes) override {
    c10::DataPtr held = inner_->allocate(nbytes);
    void* data = held.get();
    if (data == nullptr) return held;
    remember(data, nbytes, 0);
    auto* context = new Owned{std::move(held)};
    return {data, context, &release, context->ptr.device()};
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  void copy_data(void* dest, const void* src,
                 std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

 private:
  struct Owned {
    c10::DataPtr ptr;
  };

  static void release(void* context) {
    auto* owned = static_cast<Owned*>(context);
    forget(owned->ptr.get());
    delete owned;
  }

  c10::Allocator* inner_;
};

}  // namespace

// ---- clang's registration and launch entry points ----------------------

extern "C" void** __hipRegisterFatBinary(const void* data) {
  auto* wrapper = static_cast<const FatbinWrapper*>(data);
  // The handle is the bundle's address: launches carry it back.
  auto** handle = new void*[1];
  handle[0] = const_cast<void*>(wrapper->binary);
  return handle;
}

extern "C" void __hipRegisterFunction(void** handle, const void* stub,
                                      char*, const char* name, int,
                                      void*, void*, void*, void*, int*) {
  std::lock_guard<std::mutex> held(lock);
  kernels[stub] = Kernel{handle[0], name};
}

extern "C" void __hipRegisterVar(void**, void*, char*, const char*, int,
                                 size_t, int, int) {}

extern "C" void __hipRegisterManagedVar(void*, void**, void*,
                                        const char*, size_t, unsigned) {}

extern "C" void __hipUnregisterFatBinary(void** handle) {
  std::lock_guard<std::mutex> held(lock);
  for (auto it = kernels.begin(); it != kernels.end();) {
    it = it->second.fatbin == handle[0] ? kernels.erase(it) : ++it;
  }
  delete[] handle;
}

hipError_t __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shared,
                                      hipStream_t stream) {
  configs.push_back(CallConfig{grid, block, shared, stream});
  return hipSuccess;
}

hipError_t __hipPopCallConfiguration(dim3* grid, dim3* block,
                                     size_t* shared, hipStream_t* stream) {
  if (configs.empty()) return fail(hipErrorInvalidConfiguration);
  CallConfig config = configs.back();
  configs.pop_back();
  *grid = config.grid;
  *block = config.block;
  *shared = config.shared;
  *stream = config.stream;
  return hipSuccess;
}

hipError_t hipLaunchKernel(const void* stub, dim3 grid, dim3 block,
                           void** args, size_t shared, hipStream_t) {
  Kernel kernel;
  {
    std::lock_guard<std::mutex> held(lock);
    auto found = kernels.find(stub);
    if (found == kernels.end()) return fail(hipErrorInvalidDeviceFunction);
    kernel = found->second;
  }
  if (hook == nullptr) return fail(hipErrorNotInitialized);
  const unsigned g[3] = {grid.x, grid.y, grid.z};
  const unsigned b[3] = {block.x, block.y, block.z};
  if (hook(kernel.fatbin, kernel.name.c_str(), g, b, args, shared) != 0) {
    // A fault stops the host code as a GPU fault would end the process.
    last_error = hipErrorLaunchFailure;
    throw std::runtime_error(fault_text);
  }
  return hipSuccess;
}

// ---- what launch_hip.py calls through ctypes ---------------------------

extern "C" void harness_set_launch_hook(LaunchHook launch) { hook = launch; }

extern "C" void harness_set_fault(const char* text) {
  std::strncpy(fault_text, text, sizeof(fault_text) - 1);
}

extern "C" void harness_track_tensors() {
  static TrackingAllocator* tracking = nullptr;
  if (tracking != nullptr) return;
  tracking = new TrackingAllocator(c10::GetCPUAllocator());
  c10::SetCPUAllocator(tracking, /*priority=*/100);
}

// Copies up to `room` live blocks as (address, size, kind) triples.
extern "C" size_t harness_live_blocks(unsigned long long* out, size_t room) {
  std::lock_guard<std::mutex> held(lock);
  size_t count = 0;
  for (const auto& [ptr, block] : blocks) {
    if (count < room) {
      out[3 * count] = reinterpret_cast<unsigned long long>(ptr);
      out[3 * count + 1] = block.size;
      out[3 * count + 2] = block.kind;
    }
    ++count;
  }
  return count;
}

// ---- memory: host memory, every block known to the checker --------------

namespace {
constexpr size_t kAlignment = 256;  // hipMalloc's alignment on MI355X

hipError_t host_block(void** ptr, size_t size) {
  if (ptr == nullptr) return fail(hipErrorInvalidValue);
  size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  *ptr = size ? std::aligned_alloc(kAlignment, rounded) : nullptr;
  if (size && *ptr == nullptr) return fail(hipErrorOutOfMemory);
  if (*ptr) remember(*ptr, size, 1);
  return hipSuccess;
}

hipError_t free_block(void* ptr) {
  if (ptr == nullptr) return hipSuccess;
  forget(ptr);
  std::free(ptr);
  return hipSuccess;
}

hipError_t copy(void* dst, const void* src, size_t bytes) {
  if (bytes && (dst == nullptr || src == nullptr)) {
    return fail(hipErrorInvalidValue);
  }
  std::memmove(dst, src, bytes);
  return hipSuccess;
}
}  // namespace

hipError_t hipMalloc(void** ptr, size_t size) { return host_block(ptr, size); }
hipError_t hipMallocAsync(void** ptr, size_t size, hipStream_t) {
  return host_block(ptr, size);
}
hipError_t hipHostMalloc(void** ptr, size_t size, unsigned) {
  return host_block(ptr, size);
}
hipError_t hipMallocManaged(void** ptr, size_t size, unsigned) {
  return host_block(ptr, size);
}
hipError_t hipFree(void* ptr) { return free_block(ptr); }
hipError_t hipFreeAsync(void* ptr, hipStream_t) { return free_block(ptr); }
hipError_t hipHostFree(void* ptr) { return free_block(ptr); }

hipError_t hipMemcpy(void* dst, const void* src, size_t bytes,
                     hipMemcpyKind) {
  return copy(dst, src, bytes);
}
hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes,
                          hipMemcpyKind, hipStream_t) {
  return copy(dst, src, bytes);
}
hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, const void* src, size_t n) {
  return copy(dst, src, n);
}
hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t n) {
  return copy(dst, src, n);
}
hipError_t hipMemcpyDtoD(hipDeviceptr_t dst, hipDeviceptr_t src, size_t n) {
  return copy(dst, src, n);
}
hipError_t hipMemset(void* dst, int value, size_t bytes) {
  if (bytes && dst == nullptr) return fail(hipErrorInvalidValue);
  std::memset(dst, value, bytes);
  return hipSuccess;
}
hipError_t hipMemsetAsync(void* dst, int value, size_t bytes, hipStream_t) {
  return hipMemset(dst, value, bytes);
}

// ---- streams and events: work is done when it is issued ----------------

namespace {
int stream_tokens[64];  // distinct non-null handles; nothing is queued
int event_tokens[256];
size_t next_stream = 0, next_event = 0;
}  // namespace

hipError_t hipStreamCreate(hipStream_t* stream) {
  *stream = reinterpret_cast<hipStream_t>(
      &stream_tokens[next_stream++ % 64]);
  return hipSuccess;
}
hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned) {
  return hipStreamCreate(stream);
}
hipError_t hipStreamDestroy(hipStream_t) { return hipSuccess; }
hipError_t hipStreamSynchronize(hipStream_t) { return hipSuccess; }
hipError_t hipStreamQuery(hipStream_t) { return hipSuccess; }
hipError_t hipStreamWaitEvent(hipStream_t, hipEvent_t, unsigned) {
  return hipSuccess;
}
hipError_t hipEventCreate(hipEvent_t* event) {
  *event = reinterpret_cast<hipEvent_t>(&event_tokens[next_event++ % 256]);
  return hipSuccess;
}
hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned) {
  return hipEventCreate(event);
}
hipError_t hipEventRecord(hipEvent_t, hipStream_t) { return hipSuccess; }
hipError_t hipEventSynchronize(hipEvent_t) { return hipSuccess; }
hipError_t hipEventQuery(hipEvent_t) { return hipSuccess; }
hipError_t hipEventDestroy(hipEvent_t) { return hipSuccess; }
hipError_t hipEventElapsedTime(float* ms, hipEvent_t, hipEvent_t) {
  *ms = 0.0f;  // the emulator has no clock: correctness only
  return hipSuccess;
}
hipError_t hipDeviceSynchronize() { return hipSuccess; }

// ---- errors and the device ---------------------------------------------

hipError_t hipGetLastError() {
  hipError_t error = last_error;
  last_error = hipSuccess;
  return error;
}
hipError_t hipPeekAtLastError() { return last_error; }

const char* hipGetErrorName(hipError_t error) {
  switch (error) {
    case hipSuccess: return "hipSuccess";
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
    case hipErrorLaunchFailure: return "hipErrorLaunchFailure";
    case hipErrorInvalidDeviceFunction:
      return "hipErrorInvalidDeviceFunction";
    case hipErrorNotSupported: return "hipErrorNotSupported";
    default: return "hipErrorUnknown";
  }
}
const char* hipGetErrorString(hipError_t error) {
  if (error == hipErrorLaunchFailure && fault_text[0]) return fault_text;
  return hipGetErrorName(error);
}

hipError_t hipGetDeviceCount(int* count) {
  *count = 1;
  return hipSuccess;
}
hipError_t hipGetDevice(int* device) {
  *device = 0;
  return hipSuccess;
}
hipError_t hipSetDevice(int device) {
  return device == 0 ? hipSuccess : fail(hipErrorInvalidDevice);
}
hipError_t hipSetDeviceFlags(unsigned) { return hipSuccess; }

// MI355X's figures (CDNA4): what kernels size their launches by.
constexpr int kComputeUnits = 256;
constexpr int kLdsBytes = 160 * 1024;

hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_t* props, int device) {
  if (device != 0 || props == nullptr) return fail(hipErrorInvalidDevice);
  std::memset(props, 0, sizeof(*props));
  std::strcpy(props->name, "gfx950 emulated (CPU)");
  std::strcpy(props->gcnArchName, "gfx950:sramecc+:xnack-");
  props->totalGlobalMem = size_t(288) << 30;
  props->sharedMemPerBlock = kLdsBytes;
  props->maxSharedMemoryPerMultiProcessor = kLdsBytes;
  props->regsPerBlock = 512 * 64;
  props->warpSize = 64;
  props->maxThreadsPerBlock = 1024;
  props->maxThreadsDim[0] = props->maxThreadsDim[1] = 1024;
  props->maxThreadsDim[2] = 1024;
  props->maxGridSize[0] = 0x7fffffff;
  props->maxGridSize[1] = props->maxGridSize[2] = 65536;
  props->clockRate = 2400000;
  props->multiProcessorCount = kComputeUnits;
  props->maxThreadsPerMultiProcessor = 2048;
  props->major = 9;
  props->minor = 5;
  props->l2CacheSize = 4 << 20;
  props->totalConstMem = 64 << 10;
  props->memoryBusWidth = 8192;
  return hipSuccess;
}

hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attr,
                                 int device) {
  if (device != 0) return fail(hipErrorInvalidDevice);
  switch (attr) {
    case hipDeviceAttributeMultiprocessorCount: *value = kComputeUnits; break;
    case hipDeviceAttributeWarpSize: *value = 64; break;
    case hipDeviceAttributeMaxThreadsPerBlock: *value = 1024; break;
    case hipDeviceAttributeMaxSharedMemoryPerBlock: *value = kLdsBytes; break;
    case hipDeviceAttributeSharedMemPerBlockOptin: *value = kLdsBytes; break;
    default: return fail(hipErrorNotSupported);
  }
  return hipSuccess;
}

hipError_t hipFuncSetAttribute(const void*, hipFuncAttribute, int) {
  return hipSuccess;
}
