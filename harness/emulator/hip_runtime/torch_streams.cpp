// torch's HIP stream and device getters (c10_hip on a ROCm torch), for
// the CPU: one device, and every stream is the null stream, on which
// our runtime's work is done when it is issued.
#include <c10/hip/HIPFunctions.h>
#include <c10/hip/HIPStream.h>

#include <ostream>

namespace c10::cuda {

namespace {
CUDAStream null_stream(DeviceIndex) {
  return CUDAStream(CUDAStream::UNCHECKED,
                    Stream(Stream::UNSAFE, Device(DeviceType::CUDA, 0), 0));
}
}  // namespace

hipStream_t CUDAStream::stream() const { return nullptr; }
bool CUDAStream::query() const { return true; }
void CUDAStream::synchronize() const {}

CUDAStream getStreamFromPool(const bool, DeviceIndex device) {
  return null_stream(device);
}
CUDAStream getStreamFromPool(const int, DeviceIndex device) {
  return null_stream(device);
}
CUDAStream getStreamFromExternal(hipStream_t, DeviceIndex device) {
  return null_stream(device);
}
CUDAStream getDefaultCUDAStream(DeviceIndex device) {
  return null_stream(device);
}
CUDAStream getCurrentCUDAStream(DeviceIndex device) {
  return null_stream(device);
}
void setCurrentCUDAStream(CUDAStream) {}

std::ostream& operator<<(std::ostream& out, const CUDAStream& s) {
  return out << "gfx950 emulator stream " << s.id();
}

DeviceIndex device_count() noexcept { return 1; }
DeviceIndex device_count_ensure_non_zero() { return 1; }
DeviceIndex current_device() { return 0; }
void set_device(DeviceIndex, const bool) {}
void device_synchronize() {}
void warn_or_error_on_sync() {}
hipError_t GetDeviceCount(int* count) {
  *count = 1;
  return hipSuccess;
}
hipError_t GetDevice(DeviceIndex* device) {
  *device = 0;
  return hipSuccess;
}
hipError_t SetDevice(DeviceIndex, const bool) { return hipSuccess; }
hipError_t MaybeSetDevice(DeviceIndex) { return hipSuccess; }
DeviceIndex ExchangeDevice(DeviceIndex) { return 0; }
DeviceIndex MaybeExchangeDevice(DeviceIndex) { return 0; }
void SetTargetDevice() {}

}  // namespace c10::cuda
