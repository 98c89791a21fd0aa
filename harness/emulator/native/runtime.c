/* The fast path's runtime: per-lane loops every translated code object calls (compiled once per
   translator version with -O2, so each code object's own C stays small and quick to build). The
   elementwise ops and compares are appended by vector.helpers(). */

/* HostMemory: [at, at + n) inside one region */
int inside(const State *st, uint64_t at, uint64_t n) {
    int64_t lo = 0, hi = st->regions - 1, found = -1;
    while (lo <= hi) {
        int64_t mid = (lo + hi) / 2;
        if (st->starts[mid] <= at) { found = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return found >= 0 && at + n <= st->ends[found];
}

int lanes_inside(const State *st, const uint64_t *at, uint64_t ex, uint64_t n) {
    for (int l = 0; l < 64; l++)
        if ((ex >> l & 1) && !inside(st, at[l], n)) return 0;
    return 1;
}

/* global_load/store_dword(xN): every lane's address checked before anything moves; a store
   goes lane by lane (the last lane wins where two meet), and counts as progress */
int global_access(State *st, uint64_t base, uint64_t offset, const uint32_t *lo, const uint32_t *hi,
                  uint32_t *rows, int words, int store, uint64_t ex) {
    uint64_t at[64];
    uint32_t size = 4u * (uint32_t)words;
    for (int l = 0; l < 64; l++)
        at[l] = hi ? ((uint64_t)lo[l] | (uint64_t)hi[l] << 32) + offset : base + offset + lo[l];
    if (!lanes_inside(st, at, ex, size)) return 0;
    for (int l = 0; l < 64; l++) {
        if (!(ex >> l & 1)) continue;
        note_lines(st, at[l], size);
        uint32_t w_[4];
        if (store) {
            for (int k = 0; k < words; k++) w_[k] = rows[k * 64 + l];
            memcpy((void *)(uintptr_t)at[l], w_, size);
        } else {
            memcpy(w_, (const void *)(uintptr_t)at[l], size);
            for (int k = 0; k < words; k++) rows[k * 64 + l] = w_[k];
        }
    }
    st->bytes[store ? GLOBAL_STORE : GLOBAL_LOAD] += (int64_t)size * __builtin_popcountll(ex);
    st->progress += store;
    return 1;
}

/* global_load_ubyte/sbyte/ushort/sshort: one value per lane, zero- or sign-extended */
int global_load_small(State *st, uint64_t base, uint64_t offset, const uint32_t *lo, const uint32_t *hi,
                      uint32_t *row, int size, int is_signed, uint64_t ex) {
    uint64_t at[64];
    for (int l = 0; l < 64; l++)
        at[l] = hi ? ((uint64_t)lo[l] | (uint64_t)hi[l] << 32) + offset : base + offset + lo[l];
    if (!lanes_inside(st, at, ex, size)) return 0;
    for (int l = 0; l < 64; l++) {
        if (!(ex >> l & 1)) continue;
        note_lines(st, at[l], (uint64_t)size);
        uint32_t value = 0;
        memcpy(&value, (const void *)(uintptr_t)at[l], size);
        if (is_signed) value = size == 1 ? (uint32_t)(int32_t)(int8_t)value : (uint32_t)(int32_t)(int16_t)value;
        row[l] = value;
    }
    st->bytes[GLOBAL_LOAD] += (int64_t)size * __builtin_popcountll(ex);
    return 1;
}

static int lds_in_range(const State *st, const int64_t *at, uint64_t ex, int64_t n) {
    for (int l = 0; l < 64; l++)
        if ((ex >> l & 1) && (at[l] < 0 || at[l] > st->lds_size - n)) return 0;
    return 1;
}

/* whether another wave tagged any of n bytes since the last barrier (no early exit: the loop
   vectorizes, and n is at most 16) */
static inline int64_t any_clash(const int64_t *tags, int64_t n, int64_t current, int64_t mine) {
    int64_t found = 0;
    for (int64_t b = 0; b < n; b++) found |= (tags[b] >= current) & (tags[b] != mine);
    return found;
}

/* target_clones: AVX2 (64-bit compares in vectors) where the CPU has it, the same results */
__attribute__((target_clones("avx2", "default")))
int lds_read_ok(const State *st, const int64_t *at, uint64_t ex, int64_t n) {
    if (!lds_in_range(st, at, ex, n)) return 0;
    if (!st->checked) return 1;
    for (int l = 0; l < 64; l++)
        if ((ex >> l & 1) && any_clash(st->written + at[l], n, st->current, st->mine)) return 0;
    return 1;
}

/* checked by lds_read_ok first; words of lane l go to rows row0, row0 + 1, ... */
__attribute__((target_clones("avx2", "default")))
void lds_read(State *st, const int64_t *at, uint64_t ex, int64_t n, uint32_t *row0) {
    int64_t words = n / 4, current = st->current, mine = st->mine, shared = current | MANY_TAG;
    for (int l = 0; l < 64; l++) {
        if (!(ex >> l & 1)) continue;
        uint32_t w_[4];
        memcpy(w_, st->lds + at[l], n);
        for (int64_t k = 0; k < words; k++) row0[k * 64 + l] = w_[k];
        if (st->checked) {
            int64_t *tags = st->read_by + at[l];
            for (int64_t b = 0; b < n; b++)
                tags[b] = (tags[b] >= current) & (tags[b] != mine) ? shared : mine;
        }
    }
}

/* lds.py's write: bytes already there are no race; all checked before any lands */
__attribute__((target_clones("avx2", "default")))
static int lds_write_bytes(State *st, const int64_t *at, uint64_t ex, int64_t n, uint8_t data[64][16]) {
    if (!lds_in_range(st, at, ex, n)) return 0;
    if (st->checked) {
        int64_t current = st->current, mine = st->mine, found = 0;
        for (int l = 0; l < 64; l++) {
            if (!(ex >> l & 1)) continue;
            const uint8_t *old = st->lds + at[l];
            const int64_t *written = st->written + at[l], *read_by = st->read_by + at[l];
            for (int64_t b = 0; b < n; b++)
                found |= (int64_t)(old[b] != data[l][b]) & (((written[b] >= current) & (written[b] != mine))
                                                            | ((read_by[b] >= current) & (read_by[b] != mine)));
        }
        if (found) return 0;
        for (int l = 0; l < 64; l++) {
            if (!(ex >> l & 1)) continue;
            const uint8_t *old = st->lds + at[l];
            int64_t *written = st->written + at[l];
            for (int64_t b = 0; b < n; b++) written[b] = old[b] != data[l][b] ? mine : written[b];
        }
    }
    for (int l = 0; l < 64; l++)
        if (ex >> l & 1) memcpy(st->lds + at[l], data[l], n);
    return 1;
}

int lds_write(State *st, const int64_t *at, uint64_t ex, int64_t n, const uint32_t *row0, int first) {
    int64_t words = n < 4 ? 1 : n / 4;  /* b8 / b16: the register's bytes from `first` (d16_hi: 2) */
    uint8_t data[64][16];
    for (int l = 0; l < 64; l++) {
        if (!(ex >> l & 1)) continue;
        uint32_t w_[4];
        for (int64_t k = 0; k < words; k++) w_[k] = row0[k * 64 + l];
        memcpy(data[l], (const uint8_t *)w_ + first, n);
    }
    return lds_write_bytes(st, at, ex, n, data);
}

/* buffer_store_dword(xN)/short/byte (offen or none): the rows' low `size` bytes, in dwords
   (buffer.py: each dword in range on its own, stored dword by dword, lanes in order within
   each), every in-range dword checked before any lands; a store's progress */
int buffer_store(State *st, const uint32_t *desc, uint32_t soffset, const uint32_t *voffset,
                 int64_t inst_offset, int64_t size, const uint32_t *row, uint64_t ex) {
    if (desc[1] >> 31 & 1 || desc[3] >> 23 & 1) return 0;
    uint64_t base = (uint64_t)desc[0] | (uint64_t)(desc[1] & 0xFFFF) << 32;
    int64_t records = desc[2], chunk = size < 4 ? size : 4, parts = size / chunk;
    uint64_t at[64], in_range[4] = {0};
    for (int l = 0; l < 64; l++) {
        int64_t offset = inst_offset + (voffset ? (int64_t)voffset[l] : 0);
        at[l] = base + soffset + (uint64_t)offset;
        for (int64_t j = 0; j < parts; j++)
            if ((ex >> l & 1) && offset + 4 * j + chunk <= records) in_range[j] |= 1ull << l;
    }
    for (int64_t j = 0; j < parts; j++) {
        uint64_t moved[64];
        for (int l = 0; l < 64; l++) moved[l] = at[l] + 4 * j;
        if (!lanes_inside(st, moved, in_range[j], chunk)) return 0;
    }
    for (int64_t j = 0; j < parts; j++)
        for (int l = 0; l < 64; l++)
            if (in_range[j] >> l & 1) {
                note_lines(st, at[l] + 4 * j, (uint64_t)chunk);
                memcpy((void *)(uintptr_t)(at[l] + 4 * j), &row[j * 64 + l], chunk);
            }
    st->bytes[BUFFER_STORE] += size * __builtin_popcountll(ex);
    st->progress++;
    return 1;
}

/* buffer_load_dword(xN) (offen or none) through a V#, into registers or by LDS-DMA
   (buffer.py): out-of-range dwords read 0; in-range bytes must lie in a live region */
int buffer_load(State *st, const uint32_t *desc, uint32_t soffset, const uint32_t *voffset,
                int64_t inst_offset, int64_t size, uint32_t *rows, uint64_t ex) {
    if (desc[1] >> 31 & 1 || desc[3] >> 23 & 1) return 0;  /* swizzle, add_tid: numpy's */
    uint64_t base = (uint64_t)desc[0] | (uint64_t)(desc[1] & 0xFFFF) << 32;
    int64_t records = desc[2], chunks = size / 4;
    int64_t offset[64]; uint64_t at[64]; int all_in = 1;
    for (int l = 0; l < 64; l++) {
        offset[l] = inst_offset + (voffset ? (int64_t)voffset[l] : 0);
        at[l] = base + soffset + (uint64_t)offset[l];
        if (ex >> l & 1)
            for (int64_t j = 0; j < chunks; j++)
                if (offset[l] + 4 * j + 4 > records) all_in = 0;
    }
    for (int l = 0; l < 64; l++) {
        if (!(ex >> l & 1)) continue;
        if (all_in) { if (!inside(st, at[l], size)) return 0; continue; }
        for (int64_t j = 0; j < chunks; j++)
            if (offset[l] + 4 * j + 4 <= records && !inside(st, at[l] + 4 * j, 4)) return 0;
    }
    uint8_t data[64][16];
    memset(data, 0, sizeof data);
    for (int l = 0; l < 64; l++)
        if (ex >> l & 1)
            for (int64_t j = 0; j < chunks; j++)
                if (offset[l] + 4 * j + 4 <= records) {
                    note_lines(st, at[l] + 4 * j, 4);
                    memcpy(data[l] + 4 * j, (const void *)(uintptr_t)(at[l] + 4 * j), 4);
                }
    int64_t moved = size * __builtin_popcountll(ex);
    if (!rows) {  /* LDS-DMA: lane l's bytes at M0[17:0] + offset + l * size */
        int64_t target[64];
        for (int l = 0; l < 64; l++) target[l] = (int64_t)(st->s[124] & 0x3FFFF) + inst_offset + l * size;
        if (!lds_write_bytes(st, target, ex, size, data)) return 0;
        st->bytes[LDS_DMA] += moved;
    } else {
        for (int l = 0; l < 64; l++)
            if (ex >> l & 1)
                for (int64_t j = 0; j < chunks; j++) memcpy(&rows[j * 64 + l], data[l] + 4 * j, 4);
    }
    st->bytes[BUFFER_LOAD] += moved;
    return 1;
}



void cndmask(uint32_t *d, Src A, Src B, uint64_t m, uint64_t ex) {
    uint32_t a[64], b[64], t[64];
    lanes(a, A); lanes(b, B);
    for (int l = 0; l < 64; l++) t[l] = (m >> l & 1) ? b[l] : a[l];
    put(d, t, ex);
}

/* v_add_co / sub_co / subrev_co (with carry-in): the result under EXEC, the carry-out mask back */
uint64_t carry_op(uint32_t *d, Src A, Src B, uint64_t m_in, int subtract, uint64_t ex) {
    uint32_t t[64]; uint64_t m = 0;
    for (int l = 0; l < 64; l++) {
        int64_t a = LANE(A, l), b = LANE(B, l), c = (int64_t)(m_in >> l & 1);
        int64_t s = subtract ? a - b - c : a + b + c;
        t[l] = (uint32_t)s; m |= (uint64_t)((s >> 32) != 0) << l;
    }
    put(d, t, ex);
    return m;
}

void mbcnt(uint32_t *d, Src M, Src B, int shift, uint64_t ex) {
    uint32_t t[64];
    for (int l = 0; l < 64; l++)
        t[l] = (uint32_t)__builtin_popcount(LANE(M, l) & (uint32_t)(BELOW(l) >> shift)) + LANE(B, l);
    put(d, t, ex);
}

/* fma_ref over 64 lanes: the double sum in a loop that vectorizes, then fma_ref itself only
   for the lanes where that sum could round differently (a NaN, or a possible float tie) */
static void fma_lanes(uint32_t *t, const uint32_t *a, const uint32_t *b, const uint32_t *c) {
    uint8_t again[64];
    for (int l = 0; l < 64; l++) {
        double sum = (double)F(a[l]) * (double)F(b[l]) + (double)F(c[l]);
        uint64_t bits; memcpy(&bits, &sum, 8);
        t[l] = U((float)sum);
        again[l] = (bits & 0x0FFFFFFFull) == 0 || (bits & 0x7FF0000000000000ull) == 0x7FF0000000000000ull;
    }
    for (int l = 0; l < 64; l++)
        if (again[l]) t[l] = U(fma_ref(F(a[l]), F(b[l]), F(c[l])));
}

/* v_pk_fma/mul/add_f32 (op 0, 1, 2): both results computed before either row is written */
void pk_f32(int op, uint32_t *lo, uint32_t *hi, Src A, Src B, Src C, Src A2, Src B2, Src C2, uint64_t ex) {
    uint32_t t[64], u[64], a[64], b[64], c[64], a2[64], b2[64], c2[64];
    lanes(a, A); lanes(b, B); lanes(a2, A2); lanes(b2, B2);
    if (op == 0) {
        lanes(c, C); lanes(c2, C2);
        fma_lanes(t, a, b, c);
        fma_lanes(u, a2, b2, c2);
    } else
        for (int l = 0; l < 64; l++) {
            float x = F(a[l]), y = F(b[l]), x2 = F(a2[l]), y2 = F(b2[l]);
            t[l] = U(op == 1 ? FMUL(x, y) : FADD(x, y));
            u[l] = U(op == 1 ? FMUL(x2, y2) : FADD(x2, y2));
        }
    put(lo, t, ex);
    put(hi, u, ex);
}

/* an MFMA operand decoded into X: lane l's codes (`width` bits each, little-endian through its
   registers) go to cells[l * per_lane + j] (row l % m, its column in K: matrix.k_order) */
static void decode_operand(double *X, const uint32_t *rows, const double *table, int width,
                           const int32_t *cells, int per_lane) {
    int per_word = 32 / width, words = per_lane / per_word;
    uint32_t mask = (1u << width) - 1u;
    for (int g = 0; g < words; g++)
        for (int l = 0; l < 64; l++) {
            uint32_t word = rows[g * 64 + l];
            const int32_t *cell = cells + l * per_lane + g * per_word;
            for (int q = 0; q < per_word; q++, word >>= width) X[cell[q]] = table[word & mask];
        }
}

typedef double Lanes4 __attribute__((vector_size(32)));

/* the m x m products of A's rows and B's rows (both length k, k a multiple of 4), two by two
   so each load serves two sums; the sums are exact, so any order gives numpy's bits
   (target_clones: AVX2 where the CPU has it, SSE2 otherwise, the same sums either way) */
__attribute__((target_clones("avx2", "default")))
static void products(double *D, const double *A, const double *B, int m, int k) {
    for (int i = 0; i < m; i += 2)
        for (int j = 0; j < m; j += 2) {
            const double *a0 = A + i * k, *a1 = a0 + k, *b0 = B + j * k, *b1 = b0 + k;
            Lanes4 s00 = {0}, s01 = {0}, s10 = {0}, s11 = {0};
            for (int q = 0; q < k; q += 4) {
                Lanes4 x0, x1, y0, y1;
                memcpy(&x0, a0 + q, 32); memcpy(&x1, a1 + q, 32);
                memcpy(&y0, b0 + q, 32); memcpy(&y1, b1 + q, 32);
                s00 += x0 * y0; s01 += x0 * y1; s10 += x1 * y0; s11 += x1 * y1;
            }
            D[i * m + j] = (s00[0] + s00[1]) + (s00[2] + s00[3]);
            D[i * m + j + 1] = (s01[0] + s01[1]) + (s01[2] + s01[3]);
            D[(i + 1) * m + j] = (s10[0] + s10[1]) + (s10[2] + s10[3]);
            D[(i + 1) * m + j + 1] = (s11[0] + s11[1]) + (s11[2] + s11[3]);
        }
}

/* matrix.build_mfma for operands whose float64 sums are exact: D = A x B + C, rounded once */
void mfma_exact(uint32_t *d, const uint32_t *a, const uint32_t *b, const uint32_t *c, double c_value,
                int m, int k, int per_lane, const double *table_a, int width_a, const double *table_b,
                int width_b, const int32_t *cells_a, const int32_t *cells_b, const int32_t *out_rows,
                int covers, uint64_t ex) {
    /* A by rows and B by columns, both contiguous in K; `covers`: the lanes' codes fill both */
    static double A[2048], B[2048], D[1024];
    uint32_t t[16 * 64];
    int registers = m * m / 64;
    if (!covers) {
        memset(A, 0, sizeof(double) * m * k);
        memset(B, 0, sizeof(double) * m * k);
    }
    decode_operand(A, a, table_a, width_a, cells_a, per_lane);
    decode_operand(B, b, table_b, width_b, cells_b, per_lane);
    products(D, A, B, m, k);
    for (int r = 0; r < registers; r++)
        for (int l = 0; l < 64; l++) {
            double acc = c ? (double)F(c[r * 64 + l]) : c_value;
            double sum = D[out_rows[r * 64 + l] * m + l % m];
            t[r * 64 + l] = U((float)(isnan(sum) ? sum : sum + acc));  /* numpy: the first NaN */
        }
    for (int r = 0; r < registers; r++) put(d + r * 64, t + r * 64, ex);
}

/* a bf16 code's value is f * 2^scale (f: the significand, an integer): its top and lowest
   set bit (a zero: an empty span, top -1000, low 1000); *bad set for Inf/NaN (numpy's) */
static inline void bf16_span(uint32_t code, int *top, int *low, uint32_t *bad) {
    uint32_t e = code >> 7 & 0xFF, f = e ? (code & 0x7F) | 0x80 : code & 0x7F;
    int scale = e ? (int)e - 134 : -133;
    *bad |= e == 0xFF;
    *top = f ? scale + 31 - __builtin_clz(f | 1) : -1000;
    *low = f ? scale + __builtin_ctz(f | 0x100) : 1000;
}

/* one bf16 operand into X (m rows of k) by the lanes' cells */
static void decode_bf16(double *X, const uint32_t *rows, const int32_t *cells, int per_lane) {
    for (int g = 0; g < per_lane / 2; g++)
        for (int l = 0; l < 64; l++) {
            uint32_t word = rows[g * 64 + l];
            int32_t cell = cells[l * per_lane + g * 2];
            X[cell] = (double)F(word << 16);
            X[cell + 1] = (double)F(word & 0xFFFF0000u);
        }
}

/* the largest and smallest exponent field (0 read as 1: a subnormal's bits lie at or below
   the smallest normal's) of an operand's nonzero codes: a quick bound, vectorized */
__attribute__((target_clones("avx2", "default")))
static void exponent_range(const uint32_t *rows, int count, int *largest, int *smallest) {
    int32_t top = 0, bottom = 255;
    for (int q = 0; q < count; q++) {
        uint32_t word = rows[q];
        int32_t e0 = (int32_t)(word >> 7 & 0xFF), e1 = (int32_t)(word >> 23 & 0xFF);
        int32_t live0 = (word & 0x7FFF) != 0, live1 = (word & 0x7FFF0000u) != 0;
        e0 = e0 ? e0 : 1; e1 = e1 ? e1 : 1;
        int32_t t0 = live0 ? e0 : 0, t1 = live1 ? e1 : 0, b0 = live0 ? e0 : 255, b1 = live1 ? e1 : 255;
        top = top > t0 ? top : t0; top = top > t1 ? top : t1;
        bottom = bottom < b0 ? bottom : b0; bottom = bottom < b1 ? bottom : b1;
    }
    *largest = top; *smallest = bottom;
}

/* each row's span (lane l holds row l % m: matrix_ops.operand_cells) */
static void row_spans(const uint32_t *rows, int per_lane, int m, int *hi, int *lo) {
    uint32_t bad = 0;
    for (int i = 0; i < m; i++) hi[i] = -1000, lo[i] = 1000;
    for (int g = 0; g < per_lane / 2; g++)
        for (int l = 0; l < 64; l++) {
            int top, low, row = l % m;
            for (int half = 0; half < 2; half++) {
                bf16_span(rows[g * 64 + l] >> (16 * half) & 0xFFFF, &top, &low, &bad);
                hi[row] = hi[row] > top ? hi[row] : top;
                lo[row] = lo[row] < low ? lo[row] : low;
            }
        }
}

/* whether every cell's sum is exact in float64: first the operands' exponent ranges (a
   significand's 8 bits each: |p| < 2^(eA + eB - 252), bits from 2^(eA + eB - 268)), then,
   where that bound is too wide, each row against each column; 0 for Inf/NaN */
static int sums_exact(const uint32_t *a, const uint32_t *b, int per_lane, int m, int k) {
    int top_a, low_a, top_b, low_b, carry = 0;
    while ((1 << carry) < k) carry++;
    exponent_range(a, per_lane / 2 * 64, &top_a, &low_a);
    exponent_range(b, per_lane / 2 * 64, &top_b, &low_b);
    if (top_a == 255 || top_b == 255) return 0;
    if (top_a == 0 || top_b == 0 || (top_a - low_a) + (top_b - low_b) + 16 + carry <= 53) return 1;
    int hi_a[32], lo_a[32], hi_b[32], lo_b[32];
    row_spans(a, per_lane, m, hi_a, lo_a);
    row_spans(b, per_lane, m, hi_b, lo_b);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            if (hi_a[i] > -1000 && hi_b[j] > -1000
                && hi_a[i] + hi_b[j] + 2 + carry - (lo_a[i] + lo_b[j]) > 53) return 0;
    return 1;
}

/* matrix.build_mfma for bf16 x bf16: returns 0 (nothing written) unless every cell's k products
   and their partial sums are exact in float64 (then any order, numpy's dgemm's too, gives the
   same sum): |sum| < k * 2^(hiA + hiB + 2), a multiple of 2^(loA + loB), within 53 bits */
int mfma_bf16(uint32_t *d, const uint32_t *a, const uint32_t *b, const uint32_t *c, double c_value,
              int m, int k, int per_lane, const int32_t *cells_a, const int32_t *cells_b,
              const int32_t *out_rows, uint64_t ex) {
    static double A[1024], B[1024], D[1024];
    uint32_t t[16 * 64];
    int registers = m * m / 64;
    if (!sums_exact(a, b, per_lane, m, k)) return 0;
    decode_bf16(A, a, cells_a, per_lane);
    decode_bf16(B, b, cells_b, per_lane);
    products(D, A, B, m, k);
    for (int r = 0; r < registers; r++)
        for (int l = 0; l < 64; l++) {
            double acc = c ? (double)F(c[r * 64 + l]) : c_value;
            t[r * 64 + l] = U((float)(D[out_rows[r * 64 + l] * m + l % m] + acc));
        }
    for (int r = 0; r < registers; r++) put(d + r * 64, t + r * 64, ex);
    return 1;
}

/* numerics.encode_minifloat (nearest code, ties to the even code) by the float's bits: codes
   run linearly through the format's values, so at or above its smallest normal the float's
   exponent and top `mant` mantissa bits, rounded to nearest even, are the code (a carry steps
   into the next binade); below, the value in units of the smallest subnormal, rounded to even
   (matrix_ops.minifloat checks this against the format's table of values) */
static uint32_t encode_minifloat(float x, const Minifloat *f, int saturate) {
    uint32_t u = U(x) & 0x7FFFFFFFu, code, shift = 23u - (uint32_t)f->mant, sign = (U(x) >> 31) * f->half;
    if (u > 0x7F800000u) return (uint32_t)f->nan_code | sign;
    if (u >= (uint32_t)(128 - f->bias) << 23) {
        uint64_t t = (uint64_t)u - ((uint64_t)(127 - f->bias) << 23);
        code = (uint32_t)((t + (1ull << (shift - 1)) - 1ull + (t >> shift & 1ull)) >> shift);
    } else  /* times 2^(bias - 1 + mant), exact */
        code = (uint32_t)rintf(F(u) * F((uint32_t)(126 + f->bias + f->mant) << 23));
    if (code > (uint32_t)f->top) code = (uint32_t)(saturate ? f->top : f->over);
    return code | sign;
}

void cvt_pk_minifloat(uint32_t *d, Src A, Src B, const Minifloat *f, int saturate, int high, uint64_t ex) {
    uint32_t t[64];
    for (int l = 0; l < 64; l++) {
        uint32_t pair = encode_minifloat(F(LANE(A, l)), f, saturate)
                      | encode_minifloat(F(LANE(B, l)), f, saturate) << 8;
        t[l] = high ? (d[l] & 0xFFFFu) | pair << 16 : (d[l] & 0xFFFF0000u) | pair;
    }
    put(d, t, ex);
}

/* v_mad_u64_u32 / v_mad_i64_i32: D = S0 * S1 + S2 (64-bit), the carry-out is bit 64 of the sum */
uint64_t mad_64_32(uint32_t *lo, uint32_t *hi, Src A, Src B, const uint32_t *c_lo, const uint32_t *c_hi,
                   int is_signed, uint64_t ex) {
    uint32_t t[64], u[64]; uint64_t m = 0;
    for (int l = 0; l < 64; l++) {
        uint64_t c = (uint64_t)c_lo[l] | (uint64_t)c_hi[l] << 32;
        unsigned __int128 total;
        if (is_signed)
            total = (unsigned __int128)((__int128)(int64_t)(int32_t)LANE(A, l) * (int32_t)LANE(B, l)
                                        + (__int128)(int64_t)c);
        else
            total = (unsigned __int128)LANE(A, l) * LANE(B, l) + c;
        t[l] = (uint32_t)total; u[l] = (uint32_t)(total >> 32);
        m |= (uint64_t)((total >> 64) & 1) << l;
    }
    put(lo, t, ex);
    put(hi, u, ex);
    return m;
}

/* v_div_fmas_f32: the fma, times 2^32 where VCC is set (valu_forms.div_fmas) */
void div_fmas(uint32_t *d, Src A, Src B, Src C, uint64_t vcc, uint64_t ex) {
    uint32_t t[64];
    for (int l = 0; l < 64; l++) {
        float r = fma_ref(F(LANE(A, l)), F(LANE(B, l)), F(LANE(C, l)));
        t[l] = U(vcc >> l & 1 ? FMUL(r, 4294967296.0f) : r);
    }
    put(d, t, ex);
}

/* v_div_fixup_f32: num / den in double, rounded once (of two NaNs, num's) */
void div_fixup(uint32_t *d, Src Den, Src Num, uint64_t ex) {
    uint32_t t[64];
    for (int l = 0; l < 64; l++) {
        double num = F(LANE(Num, l)), den = F(LANE(Den, l));
        t[l] = U((float)(isnan(num) ? num : isnan(den) ? den : num / den));
    }
    put(d, t, ex);
}

/* DPP's src0 (dpp.dpp_source): lane l reads lane lanes[l] (-1: none); a source lane off EXEC or
   missing gives 0 with bound_ctrl; returns the lanes whose source was there and on */
uint64_t dpp_gather(uint32_t *g, const uint32_t *row, const int8_t *lanes, uint64_t ex, int bound_zero,
                    uint32_t keep, uint32_t flip) {
    uint64_t on = 0;
    for (int l = 0; l < 64; l++) {
        int s = lanes[l] < 0 ? 0 : lanes[l];
        int valid = lanes[l] >= 0 && (ex >> s & 1);
        uint32_t value = (row[s] & keep) ^ flip;
        g[l] = bound_zero && !valid ? 0u : value;
        on |= (uint64_t)valid << l;
    }
    return on;
}

void bitop3(uint32_t *d, Src A, Src B, Src C, int table, uint64_t ex) {
    uint32_t t[64];
    for (int l = 0; l < 64; l++) {
        uint32_t a = LANE(A, l), b = LANE(B, l), c = LANE(C, l), out = 0;
        for (int code = 0; code < 8; code++)
            if (table >> code & 1)
                out |= (code & 4 ? a : ~a) & (code & 2 ? b : ~b) & (code & 1 ? c : ~c);
        t[l] = out;
    }
    put(d, t, ex);
}

/* v_cvt_scalef32_pk_fp8/bf8_f32: each value over 2^(exponent of the scale - 127), in double,
   rounded to f32, then encoded without saturation (matrix.cvt_scalef32) */
void cvt_scalef32_pk(uint32_t *d, Src A, Src B, Src Scale, const Minifloat *f, int high, uint64_t ex) {
    uint32_t t[64];
    for (int l = 0; l < 64; l++) {
        double factor = ldexp(1.0, (int)(LANE(Scale, l) >> 23 & 0xFF) - 127);
        float x = (float)((double)F(LANE(A, l)) / factor), y = (float)((double)F(LANE(B, l)) / factor);
        uint32_t pair = encode_minifloat(x, f, 0) | encode_minifloat(y, f, 0) << 8;
        t[l] = high ? (d[l] & 0xFFFFu) | pair << 16 : (d[l] & 0xFFFF0000u) | pair;
    }
    put(d, t, ex);
}

/* an SDWA source (dpp.sdwa_source): `width` bits at `shift`, zero- or sign-extended */
void sdwa_select(uint32_t *g, Src X, int shift, int width, int sext) {
    uint32_t mask = (1u << width) - 1u, top = 1u << (width - 1);
    for (int l = 0; l < 64; l++) {
        uint32_t field = LANE(X, l) >> shift & mask;
        g[l] = sext ? (field ^ top) - top : field;
    }
}

/* v_pk_*_u16 (valu_packed.half_op): each half's sources picked by op_sel / op_sel_hi */
void pk_u16(int op, uint32_t *d, Src A, Src B, int lo_a, int lo_b, int hi_a, int hi_b, uint64_t ex) {
    uint32_t t[64];
    for (int l = 0; l < 64; l++) {
        uint32_t a = LANE(A, l), b = LANE(B, l), out = 0;
        for (int half = 0; half < 2; half++) {
            uint32_t x = (half ? hi_a : lo_a) ? a >> 16 : a & 0xFFFFu;
            uint32_t y = (half ? hi_b : lo_b) ? b >> 16 : b & 0xFFFFu;
            uint32_t r = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y
                       : op == 3 ? y << (x & 15) : op == 4 ? y >> (x & 15)
                       : op == 5 ? (x > y ? x : y) : (x < y ? x : y);
            out |= (r & 0xFFFFu) << (16 * half);
        }
        t[l] = out;
    }
    put(d, t, ex);
}
