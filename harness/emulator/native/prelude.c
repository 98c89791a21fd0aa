/* The fast path's shared C: the wave state (the numpy arrays' own memory, by pointer), the
   checks before a memory access, and the per-lane helpers the translated instructions use. */
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint32_t *v;          /* VGPRs then AGPRs, [rows][64] */
    uint32_t *s;          /* 128 SGPRs (a copy of the wave's list while C runs) */
    int64_t scc, status, executed, progress;
    uint8_t *lds;
    int64_t lds_size, checked, mine, current;
    int64_t *written, *read_by;     /* the LDS race tags (lds.py), when checked */
    const uint64_t *starts, *ends;  /* HostMemory's regions, sorted */
    int64_t regions;
    int64_t *bytes;       /* bytes moved, by BYTE_KINDS */
    uint64_t load_base;   /* the host address of the code object's vaddr 0 (s_getpc_b64) */
    int32_t *steps;       /* a traced wave's steps (NULL: not traced): index, then EXEC's lanes */
    uint8_t *step_lanes;
    int64_t nsteps;
    uint64_t *lines;      /* a traced wave's 128-byte lines, each access's first and last */
    int64_t nlines;
} State;

enum { SCALAR_LOAD, GLOBAL_LOAD, GLOBAL_STORE, LDS_READ, LDS_WRITE, BUFFER_LOAD, LDS_DMA, BUFFER_STORE };
enum { BUDGET_STOP, NEED_NUMPY, BARRIER_STOP, END_STOP };
#define CONTINUE (-1)  /* State.status while run() goes on to the next chunk */
#define MANY_TAG 0xFFFEll

#define V(r) (Vb + (int64_t)(r) * 64)
#define S64(i) ((uint64_t)S[i] | (uint64_t)S[(i) + 1] << 32)
#define V64(r, l) ((uint64_t)V(r)[l] | (uint64_t)V((r) + 1)[l] << 32)
#define EXEC64 S64(126)
#define BELOW(l) ((1ull << (l)) - 1ull)
/* a traced wave's step before its instruction runs, taken back when numpy runs it instead */
#define TRACE_STEP(k) if (st->steps) { st->steps[st->nsteps] = (k); \
    st->step_lanes[st->nsteps++] = (uint8_t)__builtin_popcountll(EXEC64); }
#define UNTRACE_STEP if (st->steps) st->nsteps--;
#define LINE_BYTES 128u

/* a traced wave's access [at, at + n): its first line, and its last where it crosses (memory.py) */
static inline void note_lines(State *st, uint64_t at, uint64_t n) {
    if (!st->lines) return;
    uint64_t first = at / LINE_BYTES, last = (at + n - 1) / LINE_BYTES;
    st->lines[st->nlines++] = first;
    if (last != first) st->lines[st->nlines++] = last;
}

static inline float F(uint32_t x) { float f; memcpy(&f, &x, 4); return f; }
static inline uint32_t U(float f) { uint32_t x; memcpy(&x, &f, 4); return x; }

/* a float op's NaN as x86 and numpy's loops give it: the first NaN operand, quieted */
static inline float first_nan(float a, float b, float r) {
    return isnan(a) ? F(U(a) | 0x400000u) : isnan(b) ? F(U(b) | 0x400000u) : r;
}
#define FADD(a, b) first_nan(a, b, (a) + (b))
#define FSUB(a, b) first_nan(a, b, (a) - (b))
#define FMUL(a, b) first_nan(a, b, (a) * (b))

static inline void put(uint32_t *d, const uint32_t *t, uint64_t ex) {
    if (ex == ~0ull) { memcpy(d, t, 256); return; }
    for (int l = 0; l < 64; l++) d[l] = (ex >> l & 1) ? t[l] : d[l];
}

/* a 32-bit source: a row (stride 1) or one value (stride 0), abs/neg as masks on its bits */
typedef struct { const uint32_t *p; int64_t stride; uint32_t keep, flip; } Src;
#define SRC(p, s, k, f) ((Src){(p), (s), (k), (f)})
#define LANE(X, l) ((X.p[(l) * X.stride] & X.keep) ^ X.flip)
#define konst(x) ((const uint32_t[1]){x})

/* a source's 64 lanes in a row of their own (the loops over rows vectorize; over a Src whose
   stride is known only at run time, they do not) */
static inline void lanes(uint32_t *out, Src X) {
    if (X.stride) { for (int l = 0; l < 64; l++) out[l] = (X.p[l] & X.keep) ^ X.flip; return; }
    uint32_t value = (X.p[0] & X.keep) ^ X.flip;
    for (int l = 0; l < 64; l++) out[l] = value;
}

static inline void put64(uint32_t *lo, uint32_t *hi, const uint64_t *t, uint64_t ex) {
    for (int l = 0; l < 64; l++)
        if (ex >> l & 1) { lo[l] = (uint32_t)t[l]; hi[l] = (uint32_t)(t[l] >> 32); }
}

/* v_min/v_max_f32: a NaN loses (both NaN: the first), -0 below +0 */
static inline float vmin(float a, float b) {
    if (a == 0 && b == 0) return signbit(a) ? a : b;
    if (isnan(a)) return isnan(b) ? a : b;
    if (isnan(b)) return a;
    return b < a ? b : a;
}
static inline float vmax(float a, float b) {
    if (a == 0 && b == 0) return signbit(a) ? b : a;
    if (isnan(a)) return isnan(b) ? a : b;
    if (isnan(b)) return a;
    return b > a ? b : a;
}

/* numerics.fma_f32 step by step (the same double operations, so NaNs come out the same):
   the exact product plus c in double, made round-to-odd where it could be a float tie */
static inline float fma_ref(float a, float b, float c) {
    double da = a, db = b, dc = c;  /* x86 (and numpy's loops): of two NaNs, the first wins */
    double p = isnan(da) ? da : isnan(db) ? db : da * db;
    double t = isnan(p) ? p : isnan(dc) ? dc : p + dc;
    uint64_t bits; memcpy(&bits, &t, 8);
    if (bits & 0x0FFFFFFFull) return (float)t;
    double back = t - p, err = (p - (t - back)) + ((double)c - back);
    if (err != 0 && isfinite(t) && !(bits & 1)) t = nextafter(t, err > 0 ? INFINITY : -INFINITY);
    return (float)t;
}

/* numerics.f32_to_bf16: round to nearest even; a NaN keeps its top bits, made quiet */
static inline uint32_t bf16_bits(uint32_t x) {
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (x >> 16 | 0x40u) & 0xFFFFu;
    return (uint32_t)(((uint64_t)x + 0x7FFFu + (x >> 16 & 1u)) >> 16) & 0xFFFFu;
}

static inline int32_t mini(uint32_t a, uint32_t b) { return (int32_t)a < (int32_t)b ? (int32_t)a : (int32_t)b; }
static inline int32_t maxi(uint32_t a, uint32_t b) { return (int32_t)a > (int32_t)b ? (int32_t)a : (int32_t)b; }
static inline uint32_t minu(uint32_t a, uint32_t b) { return a < b ? a : b; }
static inline uint32_t maxu(uint32_t a, uint32_t b) { return a > b ? a : b; }
static inline int64_t sext24(uint32_t x) { return (int64_t)((int32_t)(x << 8) >> 8); }
static inline int64_t abs32(int32_t x) { return x < 0 ? -(int64_t)x : x; }
static inline int ovf_add(uint32_t a, uint32_t b) {
    int64_t t = (int64_t)(int32_t)a + (int32_t)b; return t < INT32_MIN || t > INT32_MAX;
}
static inline int ovf_sub(uint32_t a, uint32_t b) {
    int64_t t = (int64_t)(int32_t)a - (int32_t)b; return t < INT32_MIN || t > INT32_MAX;
}

/* float -> int as cvt_f32_to_int: truncate, NaN to 0, clamp */
static inline uint32_t to_u32(double x) {
    if (isnan(x)) return 0; x = trunc(x);
    return x <= 0 ? 0u : x >= 4294967295.0 ? 0xFFFFFFFFu : (uint32_t)x;
}
static inline uint32_t to_i32(double x) {
    if (isnan(x)) return 0; x = trunc(x);
    return x <= -2147483648.0 ? 0x80000000u : x >= 2147483647.0 ? 0x7FFFFFFFu : (uint32_t)(int32_t)x;
}

/* SALU bfe: offset in the low bits, size in [22:16] */
static inline uint32_t bfe_u32(uint32_t a, uint32_t c) {
    uint32_t off = c & 31, size = c >> 16 & 0x7F;
    if (!size) return 0;
    uint32_t f = a >> off;
    return size < 32 ? f & ((1u << size) - 1u) : f;
}
static inline uint32_t bfe_i32(uint32_t a, uint32_t c) {
    uint32_t off = c & 31, size = c >> 16 & 0x7F;
    if (!size) return 0;
    int64_t f = (int64_t)((int32_t)a >> off);
    if (size >= 32) return (uint32_t)f;
    f &= (1ll << size) - 1;
    if (f >> (size - 1) & 1) f -= 1ll << size;
    return (uint32_t)f;
}
static inline uint64_t bfe_u64(uint64_t a, uint32_t c) {
    uint32_t off = c & 63, size = c >> 16 & 0x7F;
    if (!size) return 0;
    uint64_t f = a >> off;
    return size < 64 ? f & ((1ull << size) - 1ull) : f;
}

/* v_bfe: offset and width from their own sources, 5 bits each */
static inline uint32_t vbfe(uint32_t a, uint32_t o, uint32_t w, int is_signed) {
    o &= 31; w &= 31;
    if (!w) return 0;
    int64_t f = (int64_t)(a >> o) & ((1ll << w) - 1);
    if (is_signed) { int64_t top = 1ll << (w - 1); f = (f ^ top) - top; }
    return (uint32_t)f;
}

static inline uint32_t perm(uint32_t s0, uint32_t s1, uint32_t sel) {
    uint32_t out = 0;
    for (int k = 0; k < 4; k++) {
        uint32_t pick = sel >> (8 * k) & 0xFF, byte;
        if (pick > 13) pick = 13;
        if (pick < 4) byte = s1 >> (8 * pick) & 0xFF;
        else if (pick < 8) byte = s0 >> (8 * (pick - 4)) & 0xFF;
        else if (pick < 12) {
            uint32_t which = 2 * (pick - 8) + 1;  /* bytes 1, 3, 5, 7 of {s0, s1} */
            uint32_t src = which < 4 ? s1 >> (8 * which) : s0 >> (8 * (which - 4));
            byte = (src >> 7 & 1) ? 0xFF : 0x00;
        } else byte = pick == 12 ? 0x00 : 0xFF;
        out |= byte << (8 * k);
    }
    return out;
}

/* an 8-bit float format (fp8 e4m3, bf8 e5m2): mantissa bits, exponent bias, the largest finite
   code, the code an overflow takes (inf, or NaN where there is none), the NaN code, the sign bit */
typedef struct { int mant, bias, top, over, nan_code, half; } Minifloat;

/* memory checks and moves (runtime.c): each returns 0 where the numpy executor must take over */
int inside(const State *st, uint64_t at, uint64_t n);
int lanes_inside(const State *st, const uint64_t *at, uint64_t ex, uint64_t n);
int global_access(State *st, uint64_t base, uint64_t offset, const uint32_t *lo, const uint32_t *hi,
                  uint32_t *rows, int words, int store, uint64_t ex);
int buffer_load(State *st, const uint32_t *desc, uint32_t soffset, const uint32_t *voffset,
                int64_t inst_offset, int64_t size, uint32_t *rows, uint64_t ex);
int global_load_small(State *st, uint64_t base, uint64_t offset, const uint32_t *lo, const uint32_t *hi,
                      uint32_t *row, int size, int is_signed, uint64_t ex);
int lds_read_ok(const State *st, const int64_t *at, uint64_t ex, int64_t n);
void lds_read(State *st, const int64_t *at, uint64_t ex, int64_t n, uint32_t *row0);
int lds_write(State *st, const int64_t *at, uint64_t ex, int64_t n, const uint32_t *row0, int first);
int buffer_store(State *st, const uint32_t *desc, uint32_t soffset, const uint32_t *voffset,
                 int64_t inst_offset, int64_t size, const uint32_t *row, uint64_t ex);

/* in the runtime library (runtime.c, compiled once with -O2): the per-lane loops */
void cndmask(uint32_t *d, Src A, Src B, uint64_t m, uint64_t ex);
uint64_t carry_op(uint32_t *d, Src A, Src B, uint64_t m_in, int subtract, uint64_t ex);
void mbcnt(uint32_t *d, Src M, Src B, int shift, uint64_t ex);
void mfma_exact(uint32_t *d, const uint32_t *a, const uint32_t *b, const uint32_t *c, double c_value,
                int m, int k, int per_lane, const double *table_a, int width_a, const double *table_b,
                int width_b, const int32_t *cells_a, const int32_t *cells_b, const int32_t *out_rows,
                int covers, uint64_t ex);
int mfma_bf16(uint32_t *d, const uint32_t *a, const uint32_t *b, const uint32_t *c, double c_value,
              int m, int k, int per_lane, const int32_t *cells_a, const int32_t *cells_b,
              const int32_t *out_rows, uint64_t ex);
void cvt_pk_minifloat(uint32_t *d, Src A, Src B, const Minifloat *f, int saturate, int high, uint64_t ex);
uint64_t mad_64_32(uint32_t *lo, uint32_t *hi, Src A, Src B, const uint32_t *c_lo, const uint32_t *c_hi,
                   int is_signed, uint64_t ex);
void div_fmas(uint32_t *d, Src A, Src B, Src C, uint64_t vcc, uint64_t ex);
void div_fixup(uint32_t *d, Src Den, Src Num, uint64_t ex);
uint64_t dpp_gather(uint32_t *g, const uint32_t *row, const int8_t *lanes, uint64_t ex, int bound_zero,
                    uint32_t keep, uint32_t flip);
void bitop3(uint32_t *d, Src A, Src B, Src C, int table, uint64_t ex);
void cvt_scalef32_pk(uint32_t *d, Src A, Src B, Src Scale, const Minifloat *f, int high, uint64_t ex);
void pk_f32(int op, uint32_t *lo, uint32_t *hi, Src A, Src B, Src C, Src A2, Src B2, Src C2, uint64_t ex);
void sdwa_select(uint32_t *g, Src X, int shift, int width, int sext);
void pk_u16(int op, uint32_t *d, Src A, Src B, int lo_a, int lo_b, int hi_a, int hi_b, uint64_t ex);
