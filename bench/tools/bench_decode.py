"""MLA decode benchmark for one device call: roofline, our Triton kernel and its variants, 001, 119, a peer.

    python bench/tools/bench_decode.py --out $OUT [--reps 40] [--peer flashinfer|none] [--skip 001,119]

1. Copy bandwidth: a 2 GiB device-to-device copy (bytes read + written over the median time).
2. On the 8 official benchmark shapes, every contender is checked with reference.check_implementation
   (the official verdict) and timed the harness way: synchronize, fast flush (4x L2 write + 3 ms GPU
   sleep), device events around one call; the median over --reps calls is reported.
3. Submission 200 also runs in leaderboard style: fresh inputs (seed + 13 k) on every call, each checked.
4. The peer is FlashInfer's BatchMLAPagedAttentionWrapper (bf16 KV, and fp8 KV where it supports it),
   planned outside the timed region. Its JIT-built libraries are saved under --out so that a later call
   can bring them back with --flashinfer-cache.

Results go to OUT/bench_results.json after every contender (a crash keeps what came before); a short
table is printed last. Needs a CUDA or ROCm device.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tarfile
import time
import traceback
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import reference  # noqa: E402
from harness.run import timing  # noqa: E402
from harness.run import cases  # noqa: E402

MXFP4_BYTES_PER_TOKEN = 288 + 18
FP8_BYTES_PER_TOKEN = 576
BF16_BYTES_PER_TOKEN = 1152
Q_BYTES_PER_ROW = 16 * 576 * 2
OUT_BYTES_PER_ROW = 16 * 512 * 2
FLOPS_PER_TOKEN_PER_ROW = 2 * 16 * (576 + 512)  # QK^T and PV for 16 heads


# ---------------------------------------------------------------------------------------------
# Floors
# ---------------------------------------------------------------------------------------------

def measure_copy_bandwidth(device: str, size_bytes: int = 2 << 30, reps: int = 10) -> float:
    """Bytes per second of a device-to-device copy, counting bytes read plus bytes written (median)."""
    if device == "cpu":
        size_bytes = 64 << 20  # a smoke run: the number only fills the table
    src = torch.empty(size_bytes, dtype=torch.uint8, device=device)
    src.random_(0, 255)
    dst = torch.empty_like(src)
    times = []
    for i in range(reps + 2):
        _, ns = timing.time_call(lambda: dst.copy_(src), device, "none")
        if i >= 2:
            times.append(ns / 1e9)
    del src, dst
    return 2 * size_bytes / statistics.median(times)


def floors(spec: dict, bandwidth: float) -> dict:
    """Bytes, FLOPs and bandwidth-floor microseconds of one shape for each KV format."""
    tokens = spec["batchsize"] * spec["kvseqlen"]
    rows = spec["batchsize"] * spec["qseqlen"]
    fixed = rows * (Q_BYTES_PER_ROW + OUT_BYTES_PER_ROW)
    result = {"flops": tokens * spec["qseqlen"] * FLOPS_PER_TOKEN_PER_ROW}
    for name, per_token in (("mxfp4", MXFP4_BYTES_PER_TOKEN), ("fp8", FP8_BYTES_PER_TOKEN),
                            ("bf16", BF16_BYTES_PER_TOKEN)):
        result[f"{name}_bytes"] = tokens * per_token + fixed
        result[f"{name}_floor_us"] = result[f"{name}_bytes"] / bandwidth * 1e6
    result["target_us"] = 1.3 * max(3.0, result["mxfp4_floor_us"])
    return result


# ---------------------------------------------------------------------------------------------
# Contenders: name -> (setup(data) -> state, call(data, state) -> output)
# ---------------------------------------------------------------------------------------------

def load_submission(number: str):
    matches = sorted((REPO / "submissions").glob(f"{number}_*.py"))
    if not matches:
        return None
    spec = importlib.util.spec_from_file_location(f"bench_sub_{number}", matches[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def our_contenders(variants: list[str]) -> dict:
    """200's custom_kernel plus variants 'name=key:value,key:value' passed to its mla_decode."""
    module = load_submission("200")
    found = {"200": (None, lambda data, _: module.custom_kernel(data))}
    for text in variants:
        name, _, options = text.partition("=")
        tuning = {}
        for pair in filter(None, options.split(",")):
            key, _, value = pair.partition(":")
            tuning[key] = value if key == "kv_format" else int(value)
        found[f"200/{name}"] = (None, lambda data, _, t=dict(tuning): module.mla_decode(data, **t))
    return found


def contenders_201(variants: list[str], default: bool = True) -> dict:
    """201's custom_kernel plus variants 'name=key:value,...' passed to its mla_decode (all integer options)."""
    module = load_submission("201")
    if module is None:
        return {}
    found = {"201": (None, lambda data, _: module.custom_kernel(data))} if default else {}
    for text in variants:
        name, _, options = text.partition("=")
        tuning = {key: int(value) for key, _, value in
                  (pair.partition(":") for pair in filter(None, options.split(",")))}
        found[f"201/{name}"] = (None, lambda data, _, t=dict(tuning): module.mla_decode(data, **t))
    return found


def flashmla_contenders(kit: Path) -> dict:
    """DeepSeek's FlashMLA dense decode (bf16 KV, page 64), built from the peers kit (../shared/peers/flashmla).

    The kit's own build function compiles it (~90 s); our contiguous KV is viewed as 64-token pages
    with an identity block table, so every official shape (multiples of 64 tokens) runs as it is.
    """
    spec = importlib.util.spec_from_file_location("run_flashmla", kit / "run_flashmla.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    ext, info = runner.build_extension(os.environ.get("FLASHMLA_BUILD_DIR", "/tmp/flashmla_build"))
    flash_mla = runner.import_flash_mla(ext)
    print(f"flashmla built in {info.get('build_seconds')} s with CUTLASS {info.get('cutlass_tag')}", flush=True)

    def setup(data):
        q, kv_data, qo_indptr, kv_indptr, config = data
        batch = config["batch_size"]
        kv = kv_data["bf16"].reshape(-1, 64, 1, 576)
        lens = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
        blocks = int(lens.max().item()) // 64
        table = (kv_indptr[:-1, None] // 64 + torch.arange(blocks, device=q.device)[None, :]).to(torch.int32)
        sched, splits = flash_mla.get_mla_metadata(lens, 16, 1)
        return kv, table, lens, sched, splits, float(config["sm_scale"]), batch

    def call(data, state):
        kv, table, lens, sched, splits, sm_scale, batch = state
        out, _ = flash_mla.flash_mla_with_kvcache(data[0].view(batch, 1, 16, 576), kv, table, lens, 512, sched,
                                                  splits, softmax_scale=sm_scale, causal=False)
        return out.view(batch, 16, 512)

    return {"flashmla/bf16": (setup, call)}


def seed_contenders(numbers: list[str]) -> dict:
    found = {}
    for number in numbers:
        module = load_submission(number)
        if module is not None:
            found[number] = (None, lambda data, _, m=module: m.custom_kernel(data))
    return found


def flashinfer_contenders(backend: str) -> dict:
    """FlashInfer's MLA decode with bf16 KV and with fp8 KV (per-tensor scale), planned per shape."""
    import flashinfer  # noqa: F401
    from flashinfer.mla import BatchMLAPagedAttentionWrapper, MLAPlanMetadata

    workspace = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")

    def make(kv_kind: str):
        def setup(data):
            q, kv_data, qo_indptr, kv_indptr, config = data
            kv = kv_data["bf16"] if kv_kind == "bf16" else kv_data["fp8"][0]
            total_kv = kv.shape[0]
            lens = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
            wrapper = BatchMLAPagedAttentionWrapper(workspace, backend=backend)
            wrapper.plan(
                metadata=MLAPlanMetadata.csr(qo_indptr=qo_indptr.to(torch.int32), kv_indptr=kv_indptr.to(torch.int32),
                                             kv_indices=torch.arange(total_kv, dtype=torch.int32, device=q.device),
                                             kv_len_arr=lens),
                num_heads=16, head_dim_ckv=512, head_dim_kpe=64, page_size=1, causal=False,
                sm_scale=float(config["sm_scale"]), q_data_type=torch.bfloat16, kv_data_type=kv.dtype,
            )
            extra = {}
            if kv_kind == "fp8":
                scale = float(kv_data["fp8"][1].item())
                extra = {"ckv_scale": scale, "kpe_scale": scale}
            return wrapper, kv.view(total_kv, 1, 576), extra

        def call(data, state):
            wrapper, kv, extra = state
            return wrapper.run(query=data[0], kv_cache=kv, **extra)

        return setup, call

    return {f"flashinfer-{backend}/bf16": make("bf16"), f"flashinfer-{backend}/fp8": make("fp8")}


# ---------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------

def exact_attention(data) -> torch.Tensor:
    """fp32 attention of the bf16 Q over the bf16 KV: the yardstick of the fidelity figure."""
    q, kv_data, _, kv_indptr, config = data
    kv = kv_data["bf16"].reshape(-1, 576)
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.float32, device=q.device)
    bounds = kv_indptr.tolist()
    for b in range(q.shape[0]):
        k = kv[bounds[b]:bounds[b + 1]].float()
        out[b] = torch.softmax((q[b].float() @ k.T) * config["sm_scale"], dim=-1) @ k[:, :512]
    return out


def rel_error(output: torch.Tensor, exact: torch.Tensor) -> float:
    return float((output.float() - exact).norm() / exact.norm())


def time_contender(setup, call, data, reps: int, device: str, exact: torch.Tensor | None = None) -> dict:
    state = setup(data) if setup else None
    output = call(data, state)
    timing.synchronize(device)
    ok, message = reference.check_implementation(data, output)
    result = {"ok": bool(ok), "message": message.splitlines()[0][:200]}
    if exact is not None:
        result["rel_err"] = rel_error(output, exact)
    if not ok:
        return result
    for _ in range(3):
        call(data, state)
    durations = []
    for _ in range(reps):
        _, ns = timing.time_call(lambda: call(data, state), device, "fast" if device != "cpu" else "none")
        durations.append(ns)
        if len(durations) == 5 and statistics.median(durations) > 20e6:
            break  # a slow contender: 5 calls are enough for its median
    result.update(median_us=statistics.median(durations) / 1e3, mean_us=statistics.mean(durations) / 1e3,
                  best_us=min(durations) / 1e3, runs=len(durations))
    return result


def leaderboard_check(call, spec: dict, calls: int, device: str) -> dict:
    """Fresh input every call (seed + 13 k), each checked: results cached across calls would fail here."""
    failures = []
    for k in range(calls):
        data = reference.generate_input(spec["batchsize"], spec["qseqlen"], spec["kvseqlen"], spec["seed"] + 13 * k,
                                        device=device)
        ok, message = reference.check_implementation(data, call(data, None))
        if not ok:
            failures.append(f"seed {spec['seed'] + 13 * k}: {message.splitlines()[0]}")
    return {"calls": calls, "failures": failures}


def geomean(values):
    values = [v for v in values if v]
    return statistics.geometric_mean(values) if values else None


def save(results: dict, out: Path) -> None:
    (out / "bench_results.json").write_text(json.dumps(results, indent=1, default=str))


def save_flashinfer_cache(workspace_base: Path, out: Path) -> None:
    """Tar the JIT-built FlashInfer libraries (a later call restores them instead of compiling)."""
    libraries = [p for p in workspace_base.rglob("*.so")]
    if not libraries:
        return
    with tarfile.open(out / "flashinfer_ops.tar.gz", "w:gz") as tar:
        for path in libraries:
            tar.add(path, arcname=str(path.relative_to(workspace_base)))


def restore_flashinfer_cache(archive: Path) -> None:
    """Put saved JIT libraries where FlashInfer loads prebuilt (AOT) modules without building.

    FlashInfer trusts only its package's data/aot/<module>/<module>.so; a .so in the JIT cache is
    rebuilt by ninja when the build files are missing (seen on the device, 2026-11-29).
    """
    spec = importlib.util.find_spec("flashinfer")
    if spec is None or not spec.submodule_search_locations:
        return
    aot_dir = Path(spec.submodule_search_locations[0]) / "data" / "aot"
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".so"):
                name = Path(member.name).stem
                target = aot_dir / name / f"{name}.so"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())


def print_table(results: dict) -> None:
    """Medians per shape and contender, the floors, the geomeans, and the fidelity ratio to the a8w8 reference."""
    names = results["contenders"]
    shapes = results["shapes"]
    width = max([12] + [len(n) + 1 for n in names])
    header = f"{'shape':>9} {'fp8fl':>6} {'bf16fl':>6} " + " ".join(f"{n:>{width}}" for n in names)
    print("\n" + header)
    for row in shapes:
        cells = []
        for n in names:
            r = row["results"].get(n, {})
            cells.append(f"{r['median_us']:{width}.1f}" if "median_us" in r else f"{'FAIL' if r else '-':>{width}}")
        label = f"{row['spec']['batchsize']}x{row['spec']['kvseqlen']}"
        print(f"{label:>9} {row['floors']['fp8_floor_us']:6.1f} {row['floors']['bf16_floor_us']:6.1f} "
              + " ".join(cells))
    means = []
    for n in names:
        per_shape = [row["results"].get(n, {}).get("median_us") for row in shapes]
        means.append(geomean(per_shape) if all(per_shape) else None)
    fp8_g = geomean([row["floors"]["fp8_floor_us"] for row in shapes])
    bf16_g = geomean([row["floors"]["bf16_floor_us"] for row in shapes])
    print(f"{'geomean':>9} {fp8_g:6.1f} {bf16_g:6.1f} " + " ".join(
        f"{m:{width}.1f}" if m else f"{'-':>{width}}" for m in means))
    ratios = []
    for n in names:
        worst = [row["results"].get(n, {}).get("rel_err", 0) / row["ref_rel_err"]
                 for row in shapes if row.get("ref_rel_err") and "rel_err" in row["results"].get(n, {})]
        ratios.append(max(worst) if worst else None)
    print(f"{'err/ref':>9} {'':6} {'':6} " + " ".join(
        f"{r:{width}.2f}" if r else f"{'-':>{width}}" for r in ratios))
    print(f"copy bandwidth {results['copy_bandwidth_tb_s']:.2f} TB/s; medians in us; err/ref = worst over shapes of "
          f"(relative error vs fp32 attention on bf16 KV) / (the a8w8 reference's)")
    for note in results.get("notes", []):
        print("note:", note)


def measure_all(contenders: dict, rows: list, reps: int, out: Path, results: dict, leaderboard_calls: int,
                device: str) -> None:
    """Check and time every contender on every shape; 200 also gets the fresh-input checks."""
    for row in rows:
        spec = row["spec"]
        data = reference.generate_input(spec["batchsize"], spec["qseqlen"], spec["kvseqlen"], spec["seed"], device=device)
        exact = exact_attention(data)
        if "ref_rel_err" not in row:
            row["ref_rel_err"] = rel_error(reference.ref_kernel(data), exact)
        for name, (setup, call) in contenders.items():
            started = time.time()
            try:
                row["results"][name] = time_contender(setup, call, data, reps, device, exact)
            except Exception as error:
                row["results"][name] = {"ok": False, "message": f"{type(error).__name__}: {error}"[:400]}
                traceback.print_exc(limit=3)
            r = row["results"][name]
            print(f"{spec['batchsize']}x{spec['kvseqlen']} {name}: "
                  f"{r.get('median_us', float('nan')):.1f} us ok={r['ok']} ({time.time() - started:.1f}s) "
                  f"{'' if r['ok'] else r['message']}", flush=True)
            save(results, out)
        for checked in [n for n in contenders if n == "200" or n.startswith("201")]:
            if leaderboard_calls:
                row[f"leaderboard_{checked}"] = leaderboard_check(contenders[checked][1], spec, leaderboard_calls,
                                                                  device)
        del data, exact
        if device != "cpu":
            torch.cuda.empty_cache()
        save(results, out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "results/bench"))
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--variant", action="append", default=[],
                        help="200 variant 'name=key:value,...' (kv_format, splits, block_n, num_warps)")
    parser.add_argument("--variant201", action="append", default=[],
                        help="201 variant 'name=key:value,...' (its tuning keys: splits, gluon, mxfp4)")
    parser.add_argument("--skip200", action="store_true", help="time neither 200 nor its variants")
    parser.add_argument("--skip201default", action="store_true", help="time 201's variants only, not custom_kernel")
    parser.add_argument("--seeds", default="001,119", help="other submissions to time (numbers)")
    parser.add_argument("--peer", choices=["flashinfer", "flashmla", "both", "none"], default="flashinfer")
    parser.add_argument("--flashmla-kit", default=str(REPO / ".peer" / "flashmla"),
                        help="a copy of ../shared/peers/flashmla (built on the device, ~90 s)")
    parser.add_argument("--flashinfer-backend", default="fa3")
    parser.add_argument("--flashinfer-cache", default=None, help="a flashinfer_ops.tar.gz from an earlier call")
    parser.add_argument("--leaderboard-calls", type=int, default=3)
    parser.add_argument("--shapes", default="official", help="'official' or 'small' or a cases file")
    parser.add_argument("--device", default="cuda", help="'cuda' (NVIDIA or ROCm), or 'cpu' for a smoke run "
                        "(small shapes, TRITON_INTERPRET=1, no peer)")
    args = parser.parse_args()
    device = args.device
    if device != "cpu" and not torch.cuda.is_available():
        print("error: no CUDA or ROCm device here; use --device cpu --shapes small for a smoke run", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {"device": torch.cuda.get_device_name() if device != "cpu" else "cpu", "torch": torch.__version__,
               "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "notes": [], "shapes": []}
    import triton
    results["triton"] = triton.__version__
    bandwidth = measure_copy_bandwidth(device)
    results["copy_bandwidth_tb_s"] = bandwidth / 1e12
    print(f"copy bandwidth: {bandwidth / 1e12:.2f} TB/s", flush=True)

    contenders = {} if args.skip200 else our_contenders(args.variant)
    contenders.update(contenders_201(args.variant201, not args.skip201default))
    contenders.update(seed_contenders([s for s in args.seeds.split(",") if s]))
    results["contenders"] = list(contenders)
    specs = cases.load(args.shapes, "benchmark")
    rows = [{"spec": spec, "floors": floors(spec, bandwidth), "results": {}} for spec in specs]
    results["shapes"] = rows
    measure_all(contenders, rows, args.reps, out, results, args.leaderboard_calls, device)

    # The peers last: their builds take minutes, and everything above is saved by then.
    if args.peer in ("flashmla", "both") and device != "cpu":
        try:
            peers = flashmla_contenders(Path(args.flashmla_kit))
        except Exception as error:
            peers = {}
            traceback.print_exc(limit=3)
            results["notes"].append(f"flashmla unavailable: {type(error).__name__}: {error}"[-400:])
        results["contenders"] += list(peers)
        measure_all(peers, rows, args.reps, out, results, 0, device)
    if args.peer in ("flashinfer", "both") and device != "cpu":
        base = Path(os.environ.setdefault("FLASHINFER_WORKSPACE_BASE", "/tmp/flashinfer_ws"))
        if args.flashinfer_cache and Path(args.flashinfer_cache).is_file():
            restore_flashinfer_cache(Path(args.flashinfer_cache))
        try:
            peers = flashinfer_contenders(args.flashinfer_backend)
        except Exception as error:
            peers = {}
            results["notes"].append(f"flashinfer unavailable: {type(error).__name__}: {error}"[:400])
        results["contenders"] += list(peers)
        for index, row in enumerate(rows):
            measure_all(peers, [row], args.reps, out, results, 0, device)
            if index == 0:  # its JIT build is done by now: keep it even if a time limit stops the rest
                try:
                    save_flashinfer_cache(base, out)
                except OSError as error:
                    results["notes"].append(f"could not save the flashinfer cache: {error}")
    for checked in [n for n in contenders if n == "200" or n.startswith("201")]:
        failures = [f"{row['spec']['batchsize']}x{row['spec']['kvseqlen']}: {f}"
                    for row in results["shapes"] for f in row.get(f"leaderboard_{checked}", {}).get("failures", [])]
        results["notes"].append(f"leaderboard-style fresh-input checks of {checked}: "
                                f"{'all passed' if not failures else '; '.join(failures)}")
    save(results, out)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
