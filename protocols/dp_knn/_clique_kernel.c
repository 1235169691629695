/* The clique search of one dense component, compiled: the same steps as the Python path
 * of protocols/dp_knn/cliques.py (_component_bound_dense, _search_bound), on the same
 * bitsets, with the same results and the same work units, node for node.
 *
 * A graph of n vertices is a packed bit matrix: n rows of w = (n + 63) / 64 uint64 words,
 * bit j of row i (word j >> 6, bit j & 63) set iff i and j are adjacent; symmetric, zero
 * diagonal. Everything here is integer arithmetic, so "the same" is exact.
 *
 * degeneracy(adj, n) -> (order, degeneracy)
 *     Min-degree removal, the lowest vertex of minimum remaining degree first
 *     (_degeneracy_scan): order is n int64 (bytes).
 * reorder(adj, n, perm) -> bytes
 *     The matrix with row and column i standing for vertex perm[i] (perm: n int64).
 * colours(nbrs, n) -> int
 *     Colours of greedy colouring in bit order (_colour_count).
 * greedy(nbrs, n) -> int
 *     The greedy clique's size (_greedy_clique).
 * search(nbrs, n, best, target, left, charges, tick) -> (best, top_bound, stop, spent,
 *                                                        charges, left)
 *     MCQ branch and bound from a clique of size ``best`` (_Search.expand(0, all, top)),
 *     stopping at ``target``. Work units as the Python path charges them: w per node,
 *     popcount(p) * w per colour sort, charged before it runs; a charge above ``left``
 *     (-1: no budget) is not spent and stops the search (stop 1). After every 64th charge
 *     (``charges`` counts on from the value passed), ``tick()`` is called when given: the
 *     caller's progress beat and clock; a true result stops the search (stop 2). ``stop`` 0:
 *     finished or the target reached. ``top_bound``: the colour bound of the top-level
 *     branch being searched (``target`` before the first one).
 *
 * The search is depth-first with an explicit stack of frames (a frame per call of the
 * recursive formulation), the frames' candidate sets and coloured vertices in two arenas
 * used as stacks. Bit operations skip the words where a set has no bits (below its lowest
 * word), which changes the time, never the units charged.
 *
 * The ordering and the greedy clique keep a counter per vertex and take one off the
 * counters of a removed vertex's neighbours a byte of its row at a time (8 counters a
 * vector step, sub_bits), then look for the first extreme counter block by block; their
 * loops are compiled for AVX2 and for the baseline (WIDE), the CPU picking one when the
 * module loads. Integer arithmetic throughout: every copy gives the same results.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t word;

static int popcount(word x) { return __builtin_popcountll(x); }

/* WIDE: the function compiled twice, for AVX2 and for the baseline, the copy run chosen
 * by the CPU when the module loads (GCC or Clang on x86-64 glibc; elsewhere one copy).
 * Integer code only, so both copies compute the same values. */
#if defined(__x86_64__) && defined(__GLIBC__) && \
    ((defined(__clang__) && __clang_major__ >= 14) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 6))
#define WIDE __attribute__((target_clones("avx2", "default")))
#else
#define WIDE
#endif

/* BITS8[b][l] = bit l of the byte b: subtracting it from 8 consecutive counters takes one
 * from those whose bit is set, 8 counters per vector operation (sub_bits). */
static int32_t BITS8[256][8];

static void init_bits8(void) {
    for (int b = 0; b < 256; b++)
        for (int l = 0; l < 8; l++) BITS8[b][l] = (b >> l) & 1;
}

/* key[0..64) -= the bits of x (bit l of x from key[l]): 8 counters a step, as one
 * 32-byte vector with GCC/Clang vector extensions (one AVX2 operation, two SSE2 ones). */
#if defined(__GNUC__) || defined(__clang__)
typedef int32_t counters8 __attribute__((vector_size(32)));

static inline void sub_bits(int32_t *key, word x) {
    for (int b = 0; b < 8; b++, x >>= 8) {
        counters8 k, t;
        memcpy(&k, key + 8 * b, sizeof k);
        memcpy(&t, BITS8[x & 255], sizeof t);
        k -= t;
        memcpy(key + 8 * b, &k, sizeof k);
    }
}
#else
static inline void sub_bits(int32_t *key, word x) {
    for (int b = 0; b < 8; b++, x >>= 8) {
        const int32_t *t = BITS8[x & 255];
        for (int l = 0; l < 8; l++) key[8 * b + l] -= t[l];
    }
}
#endif
static int lowbit(word x) { return __builtin_ctzll(x); }

static int check_graph(Py_buffer *b, Py_ssize_t n) {
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "n = %zd; allowed: n >= 0", n);
        return 0;
    }
    Py_ssize_t w = (n + 63) / 64;
    if (b->len != n * w * (Py_ssize_t)sizeof(word)) {
        PyErr_Format(PyExc_ValueError, "graph: %zd bytes, expected %zd (n = %zd)", b->len,
                     n * w * (Py_ssize_t)sizeof(word), n);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ preparation */

/* The first n bits set. */
static void fill_all(word *p, Py_ssize_t n, Py_ssize_t w) {
    for (Py_ssize_t k = 0; k < w; k++) p[k] = ~(word)0;
    if (n % 64) p[w - 1] = ((word)1 << (n % 64)) - 1;
}


/* The first index of the smallest (largest, with ``largest``) of ``a[0..n)``: the first
 * block of 128 that holds the extreme (a reduction per block, which the compiler
 * vectorises), then a scan of that block for its first occurrence. */
static inline Py_ssize_t first_extreme(const int32_t *a, Py_ssize_t n, int largest) {
    int32_t best = a[0];
    Py_ssize_t at = 0;
    for (Py_ssize_t lo = 0; lo < n; lo += 128) {
        Py_ssize_t hi = lo + 128 < n ? lo + 128 : n;
        int32_t m = a[lo];
        if (largest) {
            for (Py_ssize_t u = lo + 1; u < hi; u++) m = a[u] > m ? a[u] : m;
            if (m > best) best = m, at = lo;
        } else {
            for (Py_ssize_t u = lo + 1; u < hi; u++) m = a[u] < m ? a[u] : m;
            if (m < best) best = m, at = lo;
        }
    }
    while (a[at] != best) at++;
    return at;
}

/* degeneracy's loop: key holds 64 * w counters, rem w words; returns the degeneracy. */
static WIDE int64_t degeneracy_run(const word *adj, Py_ssize_t n, Py_ssize_t w,
                                   int32_t *restrict key, word *rem, int64_t *order) {
    int64_t degen = 0;
    for (Py_ssize_t v = n; v < 64 * w; v++) key[v] = INT32_MAX; /* padding, never read */
    fill_all(rem, n, w);
    for (Py_ssize_t v = 0; v < n; v++) {
        int32_t d = 0;
        for (Py_ssize_t k = 0; k < w; k++) d += popcount(adj[v * w + k]);
        key[v] = d;
    }
    /* A vertex taken out gets the largest key (the Python path's is larger than any
     * degree too) and is no longer decremented: only the remaining vertices' keys are
     * ever compared, and theirs are the same. */
    for (Py_ssize_t t = 0; t < n; t++) {
        Py_ssize_t v = first_extreme(key, n, 0);
        if (key[v] > degen) degen = key[v];
        order[t] = v;
        key[v] = INT32_MAX;
        rem[v >> 6] &= ~((word)1 << (v & 63));
        const word *row = adj + v * w;
        for (Py_ssize_t k = 0; k < w; k++) {
            word x = row[k] & rem[k];
            if (x) sub_bits(key + k * 64, x);
        }
    }
    return degen;
}

static PyObject *degeneracy(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer b;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*n", &b, &n)) return NULL;
    if (!check_graph(&b, n) || n > INT32_MAX / 2) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "n = %zd: too large", n);
        PyBuffer_Release(&b);
        return NULL;
    }
    Py_ssize_t w = (n + 63) / 64;
    const word *adj = (const word *)b.buf;
    PyObject *order_bytes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    /* 64 * w keys: sub_bits writes whole words' keys (the padding's bits are never set) */
    int32_t *key = malloc((size_t)(w > 0 ? 64 * w : 1) * sizeof(int32_t));
    word *rem = malloc((size_t)(w > 0 ? w : 1) * sizeof(word));
    if (order_bytes == NULL || key == NULL || rem == NULL) {
        Py_XDECREF(order_bytes);
        free(key);
        free(rem);
        PyBuffer_Release(&b);
        return PyErr_NoMemory();
    }
    int64_t *order = (int64_t *)PyBytes_AS_STRING(order_bytes);
    int64_t degen = 0;
    Py_BEGIN_ALLOW_THREADS
    degen = degeneracy_run(adj, n, w, key, rem, order);
    Py_END_ALLOW_THREADS
    free(key);
    free(rem);
    PyBuffer_Release(&b);
    return Py_BuildValue("(NL)", order_bytes, (long long)degen);
}

/* Transpose a 64 x 64 bit block in place: bit j of a[i] <-> bit i of a[j]. */
static void transpose64(word *a) {
    word m = 0x00000000FFFFFFFFULL;
    for (int j = 32; j; j >>= 1, m ^= m << j) {
        for (int k = 0; k < 64; k = ((k | j) + 1) & ~j) {
            word t = ((a[k] >> j) ^ a[k | j]) & m;
            a[k | j] ^= t;
            a[k] ^= t << j;
        }
    }
}

static PyObject *reorder(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer b, bp;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*ny*", &b, &n, &bp)) return NULL;
    PyObject *out = NULL;
    int64_t *seen = NULL;
    word *tr = NULL;
    if (!check_graph(&b, n)) goto done;
    if (bp.len != n * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_Format(PyExc_ValueError, "perm: %zd bytes, expected %zd", bp.len,
                     n * (Py_ssize_t)sizeof(int64_t));
        goto done;
    }
    const int64_t *perm = (const int64_t *)bp.buf;
    Py_ssize_t w = (n + 63) / 64;
    seen = calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
    tr = malloc((size_t)(64 * w > 0 ? 64 * w * w : 1) * sizeof(word));
    if (seen == NULL || tr == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]) {
            PyErr_Format(PyExc_ValueError, "perm is not a permutation of 0..%zd", n - 1);
            goto done;
        }
        seen[perm[i]] = 1;
    }
    out = PyBytes_FromStringAndSize(NULL, n * w * (Py_ssize_t)sizeof(word));
    if (out == NULL) goto done;
    word *dst = (word *)PyBytes_AS_STRING(out);
    const word *adj = (const word *)b.buf;
    /* m[i][k] = adj[perm[i]][perm[k]]: the rows permuted and the bit matrix transposed
     * in one pass, 64 x 64 bits at a time (tr's rows are then adj's columns, permuted;
     * rows i >= n of the last block read as zero), the rows permuted again -- and as adj
     * is symmetric, row perm[i] of the transpose is m's row i. */
    Py_BEGIN_ALLOW_THREADS
    word block[64];
    const word *src[8 * 64]; /* 8 blocks of rows at a time: tr is written a cache line a row */
    for (Py_ssize_t b0 = 0; b0 < w; b0 += 8) {
        Py_ssize_t b1 = b0 + 8 < w ? b0 + 8 : w;
        for (Py_ssize_t i = b0 * 64; i < b1 * 64; i++)
            src[i - b0 * 64] = i < n ? adj + perm[i] * w : NULL;
        for (Py_ssize_t bj = 0; bj < w; bj++)
            for (Py_ssize_t bi = b0; bi < b1; bi++) {
                const word **rows = src + (bi - b0) * 64;
                for (int r = 0; r < 64; r++) block[r] = rows[r] != NULL ? rows[r][bj] : 0;
                transpose64(block);
                for (int r = 0; r < 64; r++) tr[(bj * 64 + r) * w + bi] = block[r];
            }
    }
    for (Py_ssize_t i = 0; i < n; i++)
        memcpy(dst + i * w, tr + perm[i] * w, (size_t)w * sizeof(word));
    Py_END_ALLOW_THREADS
done:
    free(seen);
    free(tr);
    PyBuffer_Release(&b);
    PyBuffer_Release(&bp);
    return out;
}

/* outside[v]: the vertices other than v not adjacent to v (within the n bits) */
static word *make_outside(const word *nbrs, Py_ssize_t n, Py_ssize_t w) {
    word *out = malloc((size_t)(n * w > 0 ? n * w : 1) * sizeof(word));
    if (out == NULL) return NULL;
    for (Py_ssize_t v = 0; v < n; v++) {
        for (Py_ssize_t k = 0; k < w; k++) out[v * w + k] = ~nbrs[v * w + k];
        if (n % 64) out[v * w + w - 1] &= ((word)1 << (n % 64)) - 1;
        out[v * w + (v >> 6)] &= ~((word)1 << (v & 63));
    }
    return out;
}

static PyObject *colours(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer b;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*n", &b, &n)) return NULL;
    if (!check_graph(&b, n)) {
        PyBuffer_Release(&b);
        return NULL;
    }
    Py_ssize_t w = (n + 63) / 64;
    word *outside = make_outside((const word *)b.buf, n, w);
    word *p = malloc((size_t)(w + 1) * sizeof(word));
    word *q = malloc((size_t)(w + 1) * sizeof(word));
    if (outside == NULL || p == NULL || q == NULL) {
        free(outside);
        free(p);
        free(q);
        PyBuffer_Release(&b);
        return PyErr_NoMemory();
    }
    long long used = 0;
    Py_BEGIN_ALLOW_THREADS
    fill_all(p, n, w);
    Py_ssize_t plo = 0;
    for (;;) {
        while (plo < w && p[plo] == 0) plo++;
        if (plo >= w) break;
        used++;
        memcpy(q + plo, p + plo, (size_t)(w - plo) * sizeof(word));
        Py_ssize_t qlo = plo;
        for (;;) {
            while (qlo < w && q[qlo] == 0) qlo++;
            if (qlo >= w) break;
            Py_ssize_t v = qlo * 64 + lowbit(q[qlo]);
            const word *o = outside + v * w;
            for (Py_ssize_t k = qlo; k < w; k++) q[k] &= o[k];
            p[v >> 6] ^= (word)1 << (v & 63);
        }
    }
    Py_END_ALLOW_THREADS
    free(outside);
    free(p);
    free(q);
    PyBuffer_Release(&b);
    return PyLong_FromLongLong(used);
}

/* greedy's loop: score holds 64 * w counters, rem and gone w words; returns the size. */
static WIDE long long greedy_run(const word *m, Py_ssize_t n, Py_ssize_t w,
                                 int32_t *restrict score, word *rem, word *gone) {
    long long size = 0;
    for (Py_ssize_t v = n; v < 64 * w; v++) score[v] = 0; /* padding, never read */
    fill_all(rem, n, w);
    for (Py_ssize_t v = 0; v < n; v++) {
        int32_t d = 0;
        for (Py_ssize_t k = 0; k < w; k++) d += popcount(m[v * w + k]);
        score[v] = d;
    }
    /* A vertex gone gets a negative score and is no longer decremented (the Python path
     * decrements it further, still negative): the remaining vertices' scores are the
     * same, and the first largest score is the same vertex. */
    const int32_t out = -(int32_t)(n + 2);
    while (n > 0) {
        Py_ssize_t v = first_extreme(score, n, 1);
        if (score[v] < 0) break;
        size++;
        const word *row = m + v * w;
        for (Py_ssize_t k = 0; k < w; k++) {  /* the candidates not adjacent to v, v too */
            gone[k] = rem[k] & ~row[k];
            rem[k] &= row[k];
        }
        gone[v >> 6] |= (word)1 << (v & 63); /* (already there: the diagonal is zero) */
        rem[v >> 6] &= ~((word)1 << (v & 63));
        for (Py_ssize_t k = 0; k < w; k++) {
            word x = gone[k];
            while (x) {
                Py_ssize_t g = k * 64 + lowbit(x);
                score[g] = out;
                const word *r = m + g * w;
                for (Py_ssize_t j = 0; j < w; j++) {
                    word y = r[j] & rem[j];
                    if (y) sub_bits(score + j * 64, y);
                }
                x &= x - 1;
            }
        }
    }
    return size;
}

static PyObject *greedy(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer b;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*n", &b, &n)) return NULL;
    if (!check_graph(&b, n) || n > INT32_MAX / 4) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "n = %zd: too large", n);
        PyBuffer_Release(&b);
        return NULL;
    }
    Py_ssize_t w = (n + 63) / 64;
    const word *m = (const word *)b.buf;
    int32_t *score = malloc((size_t)(w > 0 ? 64 * w : 1) * sizeof(int32_t)); /* sub_bits */
    word *rem = malloc((size_t)(w > 0 ? w : 1) * sizeof(word));
    word *gone = malloc((size_t)(w > 0 ? w : 1) * sizeof(word));
    if (score == NULL || rem == NULL || gone == NULL) {
        free(score);
        free(rem);
        free(gone);
        PyBuffer_Release(&b);
        return PyErr_NoMemory();
    }
    long long size = 0;
    Py_BEGIN_ALLOW_THREADS
    size = greedy_run(m, n, w, score, rem, gone);
    Py_END_ALLOW_THREADS
    free(score);
    free(rem);
    free(gone);
    PyBuffer_Release(&b);
    return PyLong_FromLongLong(size);
}

/* ------------------------------------------------------------------ the search */

typedef struct {
    int64_t size;
    Py_ssize_t p;     /* offset of the candidates (w words) in the word arena */
    Py_ssize_t verts; /* offset of the (vertex, colour) pairs in the int arena */
    Py_ssize_t i;     /* next index (from the end) */
    int top;
} Frame;

typedef struct {
    const word *nbrs, *outside;
    Py_ssize_t n, w;
    int64_t best, target, top_bound;
    int64_t left; /* -1: no budget */
    int64_t spent, charges;
    PyObject *tick;
    int stop;   /* 0 none, 1 work, 2 time */
    int error;  /* a Python exception is set, or out of memory */
    word *warena;
    Py_ssize_t wcap, wtop;
    int32_t *iarena;
    Py_ssize_t icap, itop;
    Frame *frames;
    Py_ssize_t fcap, depth;
    word *tmp;
} Search;

/* Spend ``units``; 0 when the search must stop (s->stop or s->error set). */
static int charge(Search *s, int64_t units) {
    if (s->left >= 0) {
        if (units > s->left) {
            s->left = 0;
            s->stop = 1;
            return 0;
        }
        s->left -= units;
    }
    s->spent += units;
    s->charges += 1;
    if (s->charges % 64 == 0 && s->tick != NULL) {
        PyObject *r = PyObject_CallNoArgs(s->tick);
        if (r == NULL) {
            s->error = 1;
            return 0;
        }
        int late = PyObject_IsTrue(r);
        Py_DECREF(r);
        if (late < 0) {
            s->error = 1;
            return 0;
        }
        if (late) {
            s->stop = 2;
            return 0;
        }
    }
    return 1;
}

static int grow(void **buf, Py_ssize_t *cap, Py_ssize_t need, size_t item) {
    if (need <= *cap) return 1;
    Py_ssize_t c = *cap > 0 ? *cap : 1024;
    while (c < need) c *= 2;
    void *nb = realloc(*buf, (size_t)c * item);
    if (nb == NULL) return 0;
    *buf = nb;
    *cap = c;
    return 1;
}

static int64_t count_bits(const word *p, Py_ssize_t w) {
    int64_t c = 0;
    for (Py_ssize_t k = 0; k < w; k++) c += popcount(p[k]);
    return c;
}

/* Push a frame for the candidates ``cand`` (w words, copied) below a clique of ``size``:
 * charge the colour sort, then colour (MCQ), listing the vertices of colour >= lowest.
 * 0 when the search must stop. */
static int push(Search *s, const word *cand, int64_t size, int64_t lowest, int top) {
    Py_ssize_t w = s->w;
    int64_t count = count_bits(cand, w);
    if (!charge(s, count * w)) return 0;
    Py_ssize_t voff = s->itop, listed = 0;
    if (!grow((void **)&s->frames, &s->fcap, s->depth + 1, sizeof(Frame)) ||
        !grow((void **)&s->warena, &s->wcap, s->wtop + w, sizeof(word)) ||
        !grow((void **)&s->iarena, &s->icap, voff + 2 * count, sizeof(int32_t))) {
        s->error = 1;
        PyErr_NoMemory();
        return 0;
    }
    Py_ssize_t poff = s->wtop;
    memcpy(s->warena + poff, cand, (size_t)w * sizeof(word));
    s->wtop += w;
    /* colour a copy of the candidates: each colour class takes, in bit order, every
     * vertex left with no neighbour in the class (q: the vertices still allowed) */
    word *p = s->tmp, *q = s->tmp + w;
    memcpy(p, cand, (size_t)w * sizeof(word));
    int64_t colour = 0;
    Py_ssize_t plo = 0, end = w; /* the words of p that hold bits: [plo, end) */
    while (end > 0 && p[end - 1] == 0) end--;
    for (;;) {
        while (plo < end && p[plo] == 0) plo++;
        if (plo >= end) break;
        while (p[end - 1] == 0) end--;
        colour++;
        Py_ssize_t qlo = plo, qend = end; /* the words of q that hold bits */
        const word *from = p;              /* the class's first vertex: q = p & outside[v] */
        for (;;) {
            if (from == q) {
                while (qlo < qend && q[qlo] == 0) qlo++;
                if (qlo >= qend) break;
                while (q[qend - 1] == 0) qend--;
            }
            Py_ssize_t v = qlo * 64 + lowbit(from[qlo]);
            const word *o = s->outside + v * w;
            for (Py_ssize_t k = qlo; k < qend; k++) q[k] = from[k] & o[k];
            from = q;
            p[v >> 6] ^= (word)1 << (v & 63);
            if (colour >= lowest) {
                s->iarena[voff + 2 * listed] = (int32_t)v;
                s->iarena[voff + 2 * listed + 1] = (int32_t)colour;
                listed++;
            }
        }
    }
    /* the pairs (vertex, colour) interleaved: verts = even slots, cols = odd slots */
    s->itop = voff + 2 * listed;
    Frame *f = &s->frames[s->depth++];
    f->size = size;
    f->p = poff;
    f->verts = voff;
    f->i = listed - 1;
    f->top = top;
    return 1;
}

#define VERT(s, f, j) ((s)->iarena[(f)->verts + 2 * (j)])
#define COL(s, f, j) ((s)->iarena[(f)->verts + 2 * (j) + 1])

static void pop(Search *s) {
    Frame *f = &s->frames[--s->depth];
    s->wtop = f->p;
    s->itop = f->verts;
}

/* Finish the branch on the frame's current vertex; 1 when the search is done. */
static int after_child(Search *s, Frame *f) {
    if (s->best >= s->target) return 1;
    int32_t v = VERT(s, f, f->i);
    s->warena[f->p + (v >> 6)] ^= (word)1 << (v & 63);
    f->i -= 1;
    return 0;
}

static void run(Search *s) {
    Py_ssize_t w = s->w;
    word *all = s->tmp + 2 * w;
    fill_all(all, s->n, w);
    if (!push(s, all, 0, s->best + 1, 1)) return;
    word *child = s->tmp + 2 * w;
    while (s->depth > 0) {
        Frame *f = &s->frames[s->depth - 1];
        if (f->i < 0 || f->size + COL(s, f, f->i) <= s->best) {
            pop(s);
            if (s->depth > 0 && after_child(s, &s->frames[s->depth - 1])) return;
            continue;
        }
        if (f->top) s->top_bound = COL(s, f, f->i);
        if (!charge(s, w)) return;
        int32_t v = VERT(s, f, f->i);
        const word *p = s->warena + f->p, *nb = s->nbrs + (Py_ssize_t)v * w;
        word any = 0;
        for (Py_ssize_t k = 0; k < w; k++) any |= (child[k] = p[k] & nb[k]);
        if (any) {
            int64_t size = f->size;
            if (!push(s, child, size + 1, s->best - size, 0)) return;
            continue;
        }
        if (f->size + 1 > s->best) s->best = f->size + 1;
        if (after_child(s, f)) return;
    }
}

static PyObject *search(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer b;
    Py_ssize_t n;
    long long best, target, left, charges;
    PyObject *tick;
    if (!PyArg_ParseTuple(args, "y*nLLLLO", &b, &n, &best, &target, &left, &charges, &tick))
        return NULL;
    if (!check_graph(&b, n)) {
        PyBuffer_Release(&b);
        return NULL;
    }
    Search s;
    memset(&s, 0, sizeof s);
    s.n = n;
    s.w = (n + 63) / 64;
    s.nbrs = (const word *)b.buf;
    s.best = best;
    s.target = target;
    s.top_bound = target;
    s.left = left;
    s.charges = charges;
    s.tick = tick == Py_None ? NULL : tick;
    word *outside = make_outside(s.nbrs, n, s.w);
    s.outside = outside;
    s.tmp = malloc((size_t)(3 * s.w + 1) * sizeof(word));
    if (outside == NULL || s.tmp == NULL) {
        PyErr_NoMemory();
        s.error = 1;
    } else if (n > 0) {
        run(&s);
    }
    free(outside);
    free(s.tmp);
    free(s.warena);
    free(s.iarena);
    free(s.frames);
    PyBuffer_Release(&b);
    if (s.error) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    return Py_BuildValue("(LLiLLL)", (long long)s.best, (long long)s.top_bound, s.stop,
                         (long long)s.spent, (long long)s.charges, (long long)s.left);
}

static PyMethodDef methods[] = {
    {"degeneracy", degeneracy, METH_VARARGS, "Degeneracy ordering (see the source)."},
    {"reorder", reorder, METH_VARARGS, "The packed matrix, vertices renumbered."},
    {"colours", colours, METH_VARARGS, "Colours of greedy colouring in bit order."},
    {"greedy", greedy, METH_VARARGS, "Size of the greedy clique."},
    {"search", search, METH_VARARGS, "MCQ under a work budget (see the source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_clique_kernel",
                                    "The clique search of a dense component, compiled "
                                    "(protocols/dp_knn/cliques.py).",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__clique_kernel(void) {
    init_bits8();
    return PyModule_Create(&module);
}
