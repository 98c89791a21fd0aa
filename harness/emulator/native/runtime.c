/* The fast path's runtime: per-lane loops every translated code object calls (compiled once per
   translator version with -O2, so each code object's own C stays small and quick to build). The
   elementwise ops and compares are appended by vector.helpers(). */

void cndmask(uint32_t *d, Src A, Src B, uint64_t m, uint64_t ex) {
    uint32_t t[64];
    for (int l = 0; l < 64; l++) t[l] = (m >> l & 1) ? LANE(B, l) : LANE(A, l);
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

/* v_pk_fma/mul/add_f32 (op 0, 1, 2): both results computed before either row is written */
void pk_f32(int op, uint32_t *lo, uint32_t *hi, Src A, Src B, Src C, Src A2, Src B2, Src C2, uint64_t ex) {
    uint32_t t[64], u[64];
    for (int l = 0; l < 64; l++) {
        float a = F(LANE(A, l)), b = F(LANE(B, l)), c = F(LANE(C, l));
        float a2 = F(LANE(A2, l)), b2 = F(LANE(B2, l)), c2 = F(LANE(C2, l));
        t[l] = U(op == 0 ? fma_ref(a, b, c) : op == 1 ? a * b : a + b);
        u[l] = U(op == 0 ? fma_ref(a2, b2, c2) : op == 1 ? a2 * b2 : a2 + b2);
    }
    put(lo, t, ex);
    put(hi, u, ex);
}
