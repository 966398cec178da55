"""GPU probe for guide/constexpr.md and practice/failure-modes.md (triton 3.6.0, H200).

Questions it answers, one report section each:

  compile     how many compilations a loop of sizes costs (specialized, do_not_specialize,
              constexpr size); do `device_caches` and `knobs.runtime.jit_post_compile_hook` agree?
  disk        what lands in TRITON_CACHE_DIR, and how much a warm disk cache saves in a new process
  bandwidth   what divisibility-by-16 and 16-byte alignment buy a copy kernel (GB/s, vector loads in PTX)
  autotune    in-place / atomic kernels under multi-config autotune, with and without
              restore_value / reset_to_zero; tuning runs for a raw vs a bucketed key
  resources   what "out of resource: shared memory" looks like, and when it is raised
  static      how a failing tl.static_assert is reported on the GPU
  tf32        error of an fp32 tl.dot with the default precision vs input_precision="ieee"
  mask        an unmasked store into a view: is the neighbouring memory overwritten?
  int32       int32 offsets past 2^31 elements (run in a child process: a bad address kills the context)
  examples    the repo's examples/constexpr_specialization.py, autotune.py and failure_modes.py on the GPU:
              vector loads and GB/s of each copy policy, self-checks, predicted vs counted
              compilations, the matmul fallback, tf32/bf16 errors, tuning counts

Run: python benchmarks/probes/specialization.py   (needs CUDA; about a minute; no network)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import traceback

CACHE_DIR = os.environ.get("PROBE_CACHE_DIR") or tempfile.mkdtemp(prefix="triton-probe-cache-")
os.environ["TRITON_CACHE_DIR"] = CACHE_DIR  # cold cache: counts and timings do not depend on earlier runs

import torch  # noqa: E402 - TRITON_CACHE_DIR is set first
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DEV = "cuda"


# ----------------------------------------------------------------------------- kernels
@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit(do_not_specialize=["x_ptr", "y_ptr", "n"])
def copy_kernel_dns(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit(do_not_specialize=["n"])
def copy_kernel_dns_n(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit(do_not_specialize=["n"])
def copy_kernel_dns_hint(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    n = tl.multiple_of(n, 16)  # a promise the caller must keep: n % 16 == 0
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit(do_not_specialize=["n16"])
def copy_kernel_n16(x_ptr, y_ptr, n16, BLOCK: tl.constexpr):
    n = n16 * 16  # divisible by 16 by construction: the compiler can prove it
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def copy_kernel_const_n(x_ptr, y_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, IEEE: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    om = pm * BM + tl.arange(0, BM)
    on = pn * BN + tl.arange(0, BN)
    ok = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + om[:, None] * sam + (k + ok)[None, :] * sak,
                    mask=(om[:, None] < M) & ((k + ok)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + ok)[:, None] * sbk + on[None, :] * sbn,
                    mask=((k + ok)[:, None] < K) & (on[None, :] < N), other=0.0)
        if IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    tl.store(c_ptr + om[:, None] * scm + on[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(om[:, None] < M) & (on[None, :] < N))


@triton.jit
def add_one_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


@triton.jit
def sum_atomic_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0)))


@triton.jit
def static_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 16, "BLOCK must be at least 16")
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))


@triton.jit
def fill_kernel_i32(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # int32: wraps past 2^31
    tl.store(y_ptr + offs, tl.full((BLOCK,), 1, tl.int8), mask=offs < n)


@triton.jit
def fill_kernel_i64(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.full((BLOCK,), 1, tl.int8), mask=offs < n)


@triton.jit
def scale_nomask_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)


# ----------------------------------------------------------------------------- helpers
def dev_index():
    return triton.runtime.driver.active.get_current_device()


def n_compiled(kernel) -> int:
    return len(kernel.device_caches[dev_index()][0])


def copy(kernel, x, y, n, block=1024):
    return kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)


def section(name):
    print(f"\n== {name}")


def guarded(fn):
    try:
        fn()
    except Exception:
        print("  FAILED:", traceback.format_exc(limit=3).strip().replace("\n", "\n  "))


# ----------------------------------------------------------------------------- sections
def probe_compile():
    seen = []
    triton.knobs.runtime.jit_post_compile_hook = lambda *a, **kw: seen.append(kw["fn"].name)
    sizes = [1, 15, 16, 17, 31, 32, 33, 48, 1000, 1024, 4097, 8192]
    x = torch.randn(8192 + 16, device=DEV)
    y = torch.empty_like(x)
    for label, k in [("specialized", copy_kernel), ("do_not_specialize(x,y,n)", copy_kernel_dns),
                     ("N: constexpr", copy_kernel_const_n)]:
        before = len(seen)
        t0 = time.perf_counter()
        for n in sizes:
            copy(k, x, y, n)
        torch.cuda.synchronize()
        print(f"  {label:28s} sizes={len(sizes)} device_caches={n_compiled(k)} hook={len(seen) - before}"
              f" wall={time.perf_counter() - t0:.2f}s")
    # pointers: offset views change the alignment key
    before = n_compiled(copy_kernel)
    for off in range(0, 8):
        copy(copy_kernel, x[off:], y[off:], 1024)
    print(f"  specialized, x[off:] for off in 0..7, n=1024: new compilations={n_compiled(copy_kernel) - before}")
    k0 = copy_kernel.device_caches[dev_index()][0]
    print("  specialized cache keys (first 3):")
    for key in list(k0)[:3]:
        print("   ", str(key)[:200])
    triton.knobs.runtime.jit_post_compile_hook = None
    # timing of one compilation vs one cached launch
    t0 = time.perf_counter()
    copy(copy_kernel_dns_n, x, y, 1000)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    for _ in range(100):
        copy(copy_kernel_dns_n, x, y, 1000)
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    print(f"  first launch (compile) {1e3 * (t1 - t0):.0f} ms; cached launch {1e6 * (t2 - t1) / 100:.1f} us")


def probe_disk():
    entries = [d for d in os.listdir(CACHE_DIR) if os.path.isdir(os.path.join(CACHE_DIR, d))]
    print(f"  TRITON_CACHE_DIR={CACHE_DIR}: {len(entries)} entries")
    exts = {}
    for d in entries:
        for f in os.listdir(os.path.join(CACHE_DIR, d)):
            ext = f.rsplit(".", 1)[-1] if "." in f else f
            exts[ext] = exts.get(ext, 0) + 1
    print("  file kinds:", dict(sorted(exts.items())))
    one = sorted(os.listdir(os.path.join(CACHE_DIR, entries[0])))
    print("  one entry:", one)
    child_dir = tempfile.mkdtemp(prefix="triton-probe-child-")
    for run in ("cold", "warm"):
        env = dict(os.environ, PROBE_CACHE_DIR=child_dir)
        out = subprocess.run([sys.executable, __file__, "--child-compile"], env=env, capture_output=True,
                             text=True, timeout=20)
        print(f"  new process, {run} disk cache: {out.stdout.strip() or out.stderr.strip()[-300:]}")


def child_compile():
    x = torch.randn(4096, device=DEV)
    y = torch.empty_like(x)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    copy(copy_kernel_dns_n, x, y, 4096)
    torch.cuda.synchronize()
    print(f"first launch {1e3 * (time.perf_counter() - t0):.0f} ms")


def probe_bandwidth():
    from triton.testing import do_bench

    def ptx_vec(kernel_obj):
        ptx = kernel_obj.asm["ptx"]
        return (f"ld.v4={ptx.count('ld.global.v4')} ld.v2={ptx.count('ld.global.v2')}"
                f" st.v4={ptx.count('st.global.v4')} ld={ptx.count('ld.global')}")

    for n in (2**20, 2**26):
        buf_x = torch.randn(n + 64, device=DEV)
        buf_y = torch.empty_like(buf_x)
        x, y = buf_x[:n], buf_y[:n]
        cases = [
            ("specialized, aligned, n%16==0", copy_kernel, x, y, n),
            ("specialized, n-1 (n%16!=0)", copy_kernel, x, y, n - 1),
            ("do_not_specialize(n)", copy_kernel_dns_n, x, y, n),
            ("do_not_specialize(n)+multiple_of", copy_kernel_dns_hint, x, y, n),
            ("do_not_specialize(x,y,n)", copy_kernel_dns, x, y, n),
            ("specialized, x[1:], y[1:]", copy_kernel, buf_x[1:n + 1], buf_y[1:n + 1], n),
        ]
        for label, k, a, b, m in cases:
            kobj = copy(k, a, b, m)
            torch.testing.assert_close(b[:m], a[:m])
            ms = do_bench(lambda k=k, a=a, b=b, m=m: copy(k, a, b, m), warmup=10, rep=50, return_mode="median")
            extra = ptx_vec(kobj) if n == 2**26 else ""
            print(f"  n=2^{n.bit_length() - 1} {label:34s} {2 * m * 4 / ms / 1e6:7.0f} GB/s {extra}")
        ms = do_bench(lambda x=x, y=y: y.copy_(x), warmup=10, rep=50, return_mode="median")
        print(f"  n=2^{n.bit_length() - 1} {'torch copy_':34s} {2 * n * 4 / ms / 1e6:7.0f} GB/s")


def probe_autotune():
    configs = [triton.Config({"BLOCK": b}) for b in (256, 512, 1024)]
    variants = {
        "in-place, plain": dict(),
        "in-place, restore_value": dict(restore_value=["x_ptr"]),
    }
    for label, extra in variants.items():
        k = triton.autotune(configs=configs, key=["n"], **extra)(triton.jit(add_one_kernel.fn))
        x = torch.randn(10_000, device=DEV)
        ref = x + 1
        k[lambda m: (triton.cdiv(10_000, m["BLOCK"]),)](x, 10_000)
        print(f"  {label:28s} max|x - (x0+1)| = {(x - ref).abs().max().item():.3g}")
    for label, extra in {"atomic, plain": dict(), "atomic, reset_to_zero": dict(reset_to_zero=["out_ptr"])}.items():
        k = triton.autotune(configs=configs, key=["n"], **extra)(triton.jit(sum_atomic_kernel.fn))
        x = torch.randn(10_000, device=DEV)
        out = torch.zeros(1, device=DEV)
        k[lambda m: (triton.cdiv(10_000, m["BLOCK"]),)](x, out, 10_000)
        print(f"  {label:28s} out/sum = {(out / x.sum()).item():.4g}")
    # tuning runs: raw key vs bucketed key, counted with a cheap benchmark function
    runs = []

    def cheap_bench(fn, quantiles):
        runs.append(1)
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        d = (time.perf_counter() - t0) * 1e3
        return [d, d, d]

    raw = triton.autotune(configs=configs, key=["n"], do_bench=cheap_bench)(triton.jit(add_one_kernel.fn))
    sizes = list(range(3000, 3100, 7))
    for n in sizes:
        x = torch.randn(n, device=DEV)
        raw[lambda m, n=n: (triton.cdiv(n, m["BLOCK"]),)](x, n)
    print(f"  key=['n'] over {len(sizes)} sizes: tuning entries={len(raw.cache)} bench calls={len(runs)}")


def probe_resources():
    props = triton.runtime.driver.active.utils.get_device_properties(dev_index())
    print(f"  max_shared_mem={props['max_shared_mem']} multiprocessor_count={props.get('multiprocessor_count')}")
    a = torch.randn(512, 512, device=DEV, dtype=torch.float16)
    b = torch.randn(512, 512, device=DEV, dtype=torch.float16)
    c = torch.empty(512, 512, device=DEV, dtype=torch.float16)
    for bm, bn, bk, warps, stages in [(128, 256, 128, 8, 4), (256, 256, 128, 8, 4), (128, 128, 64, 4, 3)]:
        grid = (triton.cdiv(512, bm), triton.cdiv(512, bn))
        t0 = time.perf_counter()
        try:
            kobj = matmul_kernel.warmup(a, b, c, 512, 512, 512, *a.stride(), *b.stride(), *c.stride(),
                                        BM=bm, BN=bn, BK=bk, IEEE=False, num_warps=warps, num_stages=stages,
                                        grid=grid)
            print(f"  {bm}x{bn}x{bk} w{warps} s{stages}: compiled (warmup) shared={kobj.metadata.shared}"
                  f" in {time.perf_counter() - t0:.1f}s")
            matmul_kernel[grid](a, b, c, 512, 512, 512, *a.stride(), *b.stride(), *c.stride(),
                                BM=bm, BN=bn, BK=bk, IEEE=False, num_warps=warps, num_stages=stages)
            torch.cuda.synchronize()
            print("    launched OK")
        except Exception as e:
            print(f"    raised {type(e).__module__}.{type(e).__name__}: {e}")
            if isinstance(e, triton.runtime.errors.OutOfResources):
                print(f"    .required={e.required} .limit={e.limit} .name={e.name}")
            try:
                matmul_kernel[grid](a, b, c, 512, 512, 512, *a.stride(), *b.stride(), *c.stride(),
                                    BM=bm, BN=bn, BK=bk, IEEE=False, num_warps=warps, num_stages=stages)
                print("    second launch: no error")
            except Exception as e2:
                print(f"    second launch raised {type(e2).__name__} again")


def probe_static():
    try:
        static_kernel[(1,)](torch.empty(16, device=DEV), BLOCK=8)
        print("  no error")
    except Exception as e:
        mro = [c.__name__ for c in type(e).__mro__]
        print(f"  raised {type(e).__module__}.{type(e).__name__} mro={mro}")
        print("  message tail:", str(e).strip().splitlines()[-1][:200])


def probe_tf32():
    torch.manual_seed(0)
    for size in (64, 127, 256):
        a = torch.randn(size, size, device=DEV)
        b = torch.randn(size, size, device=DEV)
        ref = (a.double() @ b.double())
        for ieee in (False, True):
            c = torch.empty(size, size, device=DEV)
            matmul_kernel[(triton.cdiv(size, 64), triton.cdiv(size, 64))](
                a, b, c, size, size, size, *a.stride(), *b.stride(), *c.stride(), BM=64, BN=64, BK=32, IEEE=ieee)
            err = (c.double() - ref).abs()
            rel = (err / ref.abs().clamp_min(1)).max().item()
            print(f"  {size}^3 {'ieee' if ieee else 'default'}: max abs err {err.max().item():.3g}, max rel {rel:.3g}")


def probe_mask():
    buf_x = torch.randn(4096, device=DEV)
    buf_y = torch.full((4096,), -7.0, device=DEV)
    n = 1000
    x, y = buf_x[:n], buf_y[1024:1024 + n]
    scale_nomask_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
    torch.cuda.synchronize()
    guard = buf_y[1024 + n:]
    changed = (guard != -7.0).sum().item()
    print(f"  n={n}, BLOCK=256: result ok={torch.equal(y, 2 * x)}; guard elements overwritten={changed}"
          f" (expected {triton.cdiv(n, 256) * 256 - n})")


def probe_int32():
    out = subprocess.run([sys.executable, __file__, "--child-int32"], capture_output=True, text=True, timeout=40,
                         env=dict(os.environ, PROBE_CACHE_DIR=CACHE_DIR))
    print("  child rc", out.returncode)
    for line in (out.stdout.strip().splitlines() + out.stderr.strip().splitlines()[-4:]):
        print("  ", line[:240])


def child_int32():
    head = 2**31
    n = 2**31 + 2**22
    buf = torch.zeros(head + n, device=DEV, dtype=torch.int8)
    y = buf[head:]
    print(f"  buffer {buf.numel() / 2**30:.2f} GiB; view of n={n} elements starts at {head}")
    for label, k in [("int64 offsets", fill_kernel_i64), ("int32 offsets", fill_kernel_i32)]:
        buf.zero_()
        k[(triton.cdiv(n, 1024),)](y, n, BLOCK=1024)
        torch.cuda.synchronize()
        tail = y[2**31:]
        print(f"  {label}: view fully written={bool(y.all().item())};"
              f" tail written={int(tail.sum().item())}/{tail.numel()};"
              f" elements before the view written={int(buf[:head].sum().item())}", flush=True)


def probe_examples():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
    import autotune as at
    import constexpr_specialization as cs
    import failure_modes as fm
    from triton.testing import do_bench

    n = 2**26
    src = torch.randn(n + 1, device=DEV)
    dst = torch.empty_like(src)
    for policy, kernel in cs.COPY_POLICIES.items():
        kobj = kernel[(triton.cdiv(n, 1024),)](src[:n], dst[:n], n, BLOCK_SIZE=1024)
        ms = do_bench(lambda p=policy: cs.copy(src[:n], dst[:n], policy=p), warmup=10, rep=50, return_mode="median")
        print(f"  cs.copy policy={policy:14s} ld.global.v4={kobj.asm['ptx'].count('ld.global.v4')}"
              f" {8 * n / ms / 1e6:.0f} GB/s")
    kobj = copy_kernel_n16[(triton.cdiv(n, 1024),)](src[:n], dst[:n], n // 16, BLOCK=1024)
    ms = do_bench(lambda: copy_kernel_n16[(triton.cdiv(n, 1024),)](src[:n], dst[:n], n // 16, BLOCK=1024),
                  warmup=10, rep=50, return_mode="median")
    print(f"  probe copy_kernel_n16 (n = n16 * 16)  ld.global.v4={kobj.asm['ptx'].count('ld.global.v4')}"
          f" {8 * n / ms / 1e6:.0f} GB/s")
    for mod in (cs, at, fm):
        t0 = time.perf_counter()
        try:
            mod.self_check()
        except Exception:
            print(f"  {mod.__name__}.self_check FAILED:", traceback.format_exc(limit=4).strip()[-600:])
        print(f"  ({mod.__name__}.self_check {time.perf_counter() - t0:.1f}s)")
    sizes = list(range(1, 200, 3))
    x = torch.randn(256, device=DEV)
    for policy, kernel, dns in [("specialize", cs.copy_kernel, ()),
                                ("no-specialize", cs.copy_kernel_unspecialized, (0, 1, 2))]:
        with cs.CompileCounter() as counter:
            for n in sizes:
                cs.copy(x[:n], policy=policy)
        predicted = cs.variants([(x, x, n) for n in sizes], do_not_specialize=dns)
        print(f"  copy policy={policy}: sizes={len(sizes)} compiled={counter.count(kernel)} predicted={predicted}")
    with cs.CompileCounter() as counter:
        for n in sizes[:12]:
            cs.copy_constexpr_n(x[:n])
    print(f"  copy_constexpr_n: sizes=12 compiled={counter.count(cs.copy_kernel_constexpr_n)}")
    with cs.CompileCounter() as counter:
        for off in range(8):
            cs.copy(x[off:off + 64])
    print(f"  copy of x[off:off+64], off 0..7: compiled={counter.count()}"
          " (1 expected: x_ptr is not 16-byte aligned when off % 4 != 0)")
    a = torch.randn(300, 200, device=DEV, dtype=torch.float16)
    b = torch.randn(200, 100, device=DEV, dtype=torch.float16)
    fm._WORKING_CONFIG.clear()
    c = fm.matmul(a, b)
    err = (c.float() - a.float() @ b.float()).abs().max().item()
    print(f"  fm.matmul fp16 300x200x100: working config {list(fm._WORKING_CONFIG.values())}, max err {err:.3g}")
    for prec in ("tf32", "ieee"):
        print(f"  fm.dot_error(127, {prec}) = {fm.dot_error(127, prec):.3g}; (255) = {fm.dot_error(255, prec):.3g}")
    print(f"  fm.bf16_error(upcast=False) = {fm.bf16_error(upcast=False):.3g};"
          f" (upcast=True) = {fm.bf16_error(upcast=True):.3g}")
    guard = torch.full((2048,), -1.0, device=DEV)
    xm = torch.randn(1000, device=DEV)
    fm.scale(xm, 2.0, out=guard[:1000], masked=False)
    torch.cuda.synchronize()
    print(f"  fm.scale masked=False: guard elements overwritten={(guard[1000:] != -1.0).sum().item()}")
    at.TUNING_RUNS["count"] = 0
    for n in range(3000, 3100, 20):
        at.scale_(torch.randn(n, device=DEV), 1.5, kernel=at.scale_key_per_size)
        at.scale_(torch.randn(n, device=DEV), 1.5, kernel=at.scale_bucketed)
        at.scale_(torch.randn(n, device=DEV), 1.5, kernel=at.scale_key_missing)
    print(f"  tunings over 5 sizes: per-size key {at.tunings(at.scale_key_per_size)}, bucketed"
          f" {at.tunings(at.scale_bucketed)}, no key {at.tunings(at.scale_key_missing)};"
          f" benchmarked configs {at.TUNING_RUNS['count']}")
    xs = torch.randn(5000, device=DEV)
    r1 = at.scale_(xs.clone(), 2.0, kernel=at.scale_no_restore) / xs
    print(f"  scale_no_restore first call: ratio min {r1.min().item():.3g} max {r1.max().item():.3g}")
    s1 = at.sum_(xs, kernel=at.sum_no_reset) / xs.sum()
    print(f"  sum_no_reset first call: out/sum = {s1.item():.4g}")


if __name__ == "__main__":
    if not torch.cuda.is_available():
        sys.exit("this probe needs a CUDA GPU")
    if "--child-compile" in sys.argv:
        child_compile()
        sys.exit(0)
    if "--child-int32" in sys.argv:
        child_int32()
        sys.exit(0)
    start = time.perf_counter()
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}")
    sections = [("compile", probe_compile), ("examples", probe_examples), ("static", probe_static),
                ("mask", probe_mask), ("tf32", probe_tf32), ("int32", probe_int32), ("bandwidth", probe_bandwidth),
                ("autotune", probe_autotune), ("resources", probe_resources), ("disk", probe_disk)]
    for name, fn in sections:  # most important first: stay inside the 90 s budget
        section(name)
        if time.perf_counter() - start > 75:
            print("  skipped: out of time")
            continue
        t0 = time.perf_counter()
        guarded(fn)
        print(f"  ({time.perf_counter() - t0:.1f}s)", flush=True)
    print(f"\ntotal {time.perf_counter() - start:.1f}s")
