// The emulated gfx950's tensors, as host code sees them: put after
// torch's headers in both units of an emulated load_inline build
// (extension.py). On the emulator the GPU's memory is the CPU's, so
// every tensor the file touches is a CPU tensor; host code that checks
// for a CUDA one (TORCH_CHECK(x.is_cuda()), x.device().is_cuda(),
// x.device().type() == torch::kCUDA) gets the answer it would get
// beside an MI355X, and a tensor made on kCUDA is made on the CPU.
// Not rewritten: the spelled-out DeviceType::CUDA, .cuda(). Pasted in
// as text, not included: no include guard.
#define is_cuda() is_cpu()
#define kCUDA kCPU
