/* The region overlap graph's all-pairs test, compiled, into a packed dense adjacency:
 * the same graph as overlap._all_pair_edges (the numpy test of every pair), without
 * writing out an edge list.
 *
 * Packed adjacency: an (n, w) uint64 matrix, w = (n + 63) / 64; bit j of row i is bit
 * j & 63 (least significant first) of word j >> 6, set iff i and j are joined.
 *
 * rows(xt, r, q, d, start, stop, slack, sure_ok, most, packed) -> bytes
 *     xt float64 (d, q): the coordinates feature by feature (x transposed, C-contiguous);
 *     r float64 (q,): the radii; packed uint64 (q, w), written in place. For every row
 *     i in [start, stop) the words i >> 6 .. w - 1 of row i are overwritten: bit j
 *     (j > i) is set when the pair (i, j) is an edge for sure, and cleared otherwise
 *     (bits j <= i of word i >> 6 are cleared too; earlier words are not touched).
 *     Returns the borderline pairs (i, j), i < j, as int64 values i0, j0, i1, j1, ...
 *     in row-major order: the caller decides them with the exact test and sets their
 *     bits. most: the full words are tested up to ``most`` columns at a time (8 with
 *     AVX-512, 4 with AVX2, when the CPU has them; lanes()); the bits are the same with
 *     any lane count.
 *
 *     A pair is classified as overlap's numpy pre-test classifies it, in its order of
 *     operations:
 *         sq     = sum over the features k = 0 .. d-1, in order, of (x_ik - x_jk)**2
 *         reach  = (r_i + r_j) * slack                 (slack = 1 + EDGE_SLACK)
 *         reach2 = reach * reach
 *         near   = sq <= reach2 * (1 + 1e-6) + 1e-300
 *         sure   = near and sure_ok and sq <= reach2 * (1 - 1e-6)
 *     sure pairs are edges; near pairs that are not sure are borderline; the others are
 *     not edges. Why this is exact: the exact test is norm(x_i - x_j) <= (r_i + r_j) *
 *     slack, and sq and reach2 differ from the squares of its two sides by a few units
 *     in the last place, far less than the 1e-6 relative margins, unless a value
 *     underflows or overflows. So a pair outside `near` fails the exact test (the
 *     1e-300 keeps every pair of a tiny sq or an underflowed reach2 a candidate; an
 *     overflowed reach2 makes every pair near), and, when every radius and coordinate
 *     lies in [1/_SAFE, _SAFE] (sure_ok: nothing underflows or overflows), a sure pair
 *     passes it; every other pair is tested exactly by the caller. Built with
 *     -ffp-contract=off: every product and sum is rounded on its own, as numpy rounds
 *     them, never fused; the vector code rounds every lane as the scalar code does.
 *
 * symmetrize(packed, n) -> None
 *     packed |= transpose(packed), tile by tile (64 x 64 bits): an upper-triangle
 *     matrix becomes the symmetric one (the diagonal stays as it is, clear).
 *
 * edges(packed, n, out) -> None, columns(packed, n, out) -> None
 *     The set bits written out, row by row, ascending: edges the pairs (i, j), j > i, into
 *     out int64 (E, 2) (the sorted edge list); columns the column of every bit into out
 *     int64 (the CSR indices). ValueError unless out holds exactly that many values.
 *
 * lanes(most) -> int
 *     Columns per vector that rows() uses: the most of 8 (a CPU with AVX-512F, x86-64), 4
 *     (AVX2) and 2 (16-byte vectors) that is at most ``most`` (2 when ``most`` < 2), 1 when
 *     built without GCC/Clang vector extensions.
 *
 * components(packed, n, labels) -> int
 *     Connected components of the symmetric packed graph: a breadth-first search from
 *     each vertex not reached yet, in increasing order, so component c is the one whose
 *     smallest vertex is the c-th smallest of the components' smallest vertices (the
 *     numbering overlap_graph gives). labels int64 (n,) is written in place; returns the
 *     number of components.
 *
 * Every buffer length is checked (ValueError on a mismatch); the loops run without the
 * GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NEAR_MARGIN (1.0 + 1e-6)
#define SURE_MARGIN (1.0 - 1e-6)
#define UNDERFLOW_FLOOR 1e-300

static int lowest_bit(uint64_t v) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(v);
#else
    int b = 0;
    while (!(v & 1)) { v >>= 1; b++; }
    return b;
#endif
}

static int check_len(Py_buffer *b, Py_ssize_t n, const char *name) {
    if (b->len != n) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, expected %zd", name, b->len, n);
        return 0;
    }
    return 1;
}

/* Growing list of int64 pairs (the borderline pairs). */
typedef struct {
    int64_t *v;
    Py_ssize_t len, cap;
    int failed;
} Pairs;

static void push_pair(Pairs *p, int64_t i, int64_t j) {
    if (p->failed) return;
    if (p->len + 2 > p->cap) {
        Py_ssize_t cap = p->cap ? 2 * p->cap : 1024;
        int64_t *v = realloc(p->v, (size_t)cap * sizeof(int64_t));
        if (v == NULL) { p->failed = 1; return; }
        p->v = v;
        p->cap = cap;
    }
    p->v[p->len++] = i;
    p->v[p->len++] = j;
}

/* Columns [j0, j0 + m) of row i (m <= 64, all in one word): the sure and borderline
 * bits, bit (j & 63) for column j; xi holds row i's coordinates. */
static void word_scalar(const double *xt, const double *r, Py_ssize_t q, Py_ssize_t d,
                        const double *xi, double ri, Py_ssize_t j0, Py_ssize_t m,
                        double slack, int sure_ok, uint64_t *sure, uint64_t *maybe) {
    for (Py_ssize_t t = 0; t < m; t++) {
        const Py_ssize_t j = j0 + t;
        double sq = 0.0;
        for (Py_ssize_t k = 0; k < d; k++) {  /* feature by feature, in order */
            const double diff = xi[k] - xt[k * q + j];
            sq += diff * diff;
        }
        const double reach = (ri + r[j]) * slack;
        const double reach2 = reach * reach;
        const int near = sq <= reach2 * NEAR_MARGIN + UNDERFLOW_FLOOR;
        const int in = near & sure_ok & (sq <= reach2 * SURE_MARGIN);
        *sure |= (uint64_t)in << (j & 63);
        *maybe |= (uint64_t)(near & !in) << (j & 63);
    }
}

#if defined(__GNUC__) || defined(__clang__)
/* The same test on a whole word (the 64 columns from base), LANES columns per vector with
 * GCC/Clang vector extensions, two vectors per step: every lane computes the scalar
 * expression of word_scalar, rounded alike (vector operations are lane-wise IEEE
 * operations; the sum over the features runs in the same order). Defined twice below:
 * two lanes (16-byte vectors: SSE2 on x86-64, any GCC/Clang target) and, on x86-64,
 * four lanes compiled for AVX2 and eight for AVX-512F, taken at run time when the CPU has
 * them. */
#define DEFINE_WORD_FULL(NAME, LANES, ATTRIBUTES)                                          \
    ATTRIBUTES static void NAME(const double *xt, const double *r, Py_ssize_t q,            \
                                Py_ssize_t d, const double *xi, double ri, Py_ssize_t base,   \
                                double slack, int sure_ok, uint64_t *sure, uint64_t *maybe) { \
        typedef double vd __attribute__((vector_size(8 * LANES)));                            \
        typedef uint64_t vu __attribute__((vector_size(8 * LANES))); /* masks and bits */     \
        const vd zero = {0.0};                                                                \
        const vd ri_v = zero + ri, slack_v = zero + slack;                                    \
        const vd near_v = zero + NEAR_MARGIN, floor_v = zero + UNDERFLOW_FLOOR;               \
        const vd sure_v = zero + SURE_MARGIN;                                                 \
        const vu none = {0};                                                                  \
        const vu ok = none - (uint64_t)(sure_ok != 0); /* all ones or zero */                \
        vu lane_bit = none, in_acc = none, maybe_acc = none;                                  \
        for (int l = 0; l < LANES; l++) lane_bit[l] = (uint64_t)1 << l;                       \
        for (int t = 0; t < 64; t += 2 * LANES) {                                             \
            vd sq_a = zero, sq_b = zero, col_a, col_b, rj_a, rj_b;                            \
            const double *col = xt + base + t;                                                \
            for (Py_ssize_t k = 0; k < d; k++, col += q) { /* features in order */            \
                const vd xk = zero + xi[k];                                                   \
                memcpy(&col_a, col, sizeof col_a); /* unaligned loads */                      \
                memcpy(&col_b, col + LANES, sizeof col_b);                                    \
                const vd diff_a = xk - col_a, diff_b = xk - col_b;                            \
                sq_a += diff_a * diff_a;                                                      \
                sq_b += diff_b * diff_b;                                                      \
            }                                                                                 \
            memcpy(&rj_a, r + base + t, sizeof rj_a);                                         \
            memcpy(&rj_b, r + base + t + LANES, sizeof rj_b);                                 \
            const vd reach_a = (ri_v + rj_a) * slack_v, reach_b = (ri_v + rj_b) * slack_v;    \
            const vd reach2_a = reach_a * reach_a, reach2_b = reach_b * reach_b;              \
            const vu near_a = (vu)(sq_a <= reach2_a * near_v + floor_v);                      \
            const vu near_b = (vu)(sq_b <= reach2_b * near_v + floor_v);                      \
            const vu in_a = near_a & ok & (vu)(sq_a <= reach2_a * sure_v);                    \
            const vu in_b = near_b & ok & (vu)(sq_b <= reach2_b * sure_v);                    \
            const vu bits_a = lane_bit << t, bits_b = lane_bit << (t + LANES);                \
            in_acc |= (in_a & bits_a) | (in_b & bits_b);                                      \
            maybe_acc |= (near_a & ~in_a & bits_a) | (near_b & ~in_b & bits_b);               \
        }                                                                                     \
        uint64_t s = 0, m = 0;                                                                \
        for (int l = 0; l < LANES; l++) {                                                     \
            s |= in_acc[l];                                                                   \
            m |= maybe_acc[l];                                                                \
        }                                                                                     \
        *sure = s;                                                                            \
        *maybe = m;                                                                           \
    }

DEFINE_WORD_FULL(word_full_2, 2, )
#define HAVE_WORD_FULL 1

#if defined(__x86_64__) || defined(__i386__)
DEFINE_WORD_FULL(word_full_4, 4, __attribute__((target("avx2"))))
#define HAVE_WORD_FULL_4 1
DEFINE_WORD_FULL(word_full_8, 8, __attribute__((target("avx512f"))))
#define HAVE_WORD_FULL_8 1
#endif
#endif

/* Lanes to use: the most of 8 (AVX-512F), 4 (AVX2) and 2 the CPU has, at most ``most``
 * (2 below that; 1 without vectors). */
static int pick_lanes(int most) {
#ifdef HAVE_WORD_FULL_4
    __builtin_cpu_init();
    if (most >= 8 && __builtin_cpu_supports("avx512f")) return 8;
    if (most >= 4 && __builtin_cpu_supports("avx2")) return 4;
#endif
    (void)most;
#ifdef HAVE_WORD_FULL
    return 2;
#else
    return 1;
#endif
}

/* Row i's words from i >> 6 on (lanes: pick_lanes); xi is d doubles of scratch. */
static void row_words(const double *xt, const double *r, Py_ssize_t q, Py_ssize_t d,
                      Py_ssize_t i, double slack, int sure_ok, uint64_t *row, Py_ssize_t w,
                      int lanes, double *xi, Pairs *border) {
    const double ri = r[i];
    for (Py_ssize_t k = 0; k < d; k++) xi[k] = xt[k * q + i];
    for (Py_ssize_t word = i >> 6; word < w; word++) {
        const Py_ssize_t base = word << 6;
        uint64_t sure = 0, maybe = 0;
#ifdef HAVE_WORD_FULL
        if (base + 64 <= q && lanes > 1) {
#ifdef HAVE_WORD_FULL_4
            if (lanes == 8)
                word_full_8(xt, r, q, d, xi, ri, base, slack, sure_ok, &sure, &maybe);
            else if (lanes == 4)
                word_full_4(xt, r, q, d, xi, ri, base, slack, sure_ok, &sure, &maybe);
            else
#endif
                word_full_2(xt, r, q, d, xi, ri, base, slack, sure_ok, &sure, &maybe);
            if (base <= i) {  /* the diagonal word: columns j > i only */
                const uint64_t upper = ~(((uint64_t)2 << (i & 63)) - 1);
                sure &= upper;
                maybe &= upper;
            }
        } else
#endif
        {
            const Py_ssize_t j0 = base > i ? base : i + 1;  /* columns j > i only */
            const Py_ssize_t j1 = base + 64 < q ? base + 64 : q;
            if (j1 > j0)
                word_scalar(xt, r, q, d, xi, ri, j0, j1 - j0, slack, sure_ok, &sure, &maybe);
        }
        row[word] = sure;
        while (maybe) {
            push_pair(border, i, base + lowest_bit(maybe));
            maybe &= maybe - 1;
        }
    }
}

static PyObject *rows(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer bx, br, bp;
    Py_ssize_t q, d, start, stop;
    double slack;
    int sure_ok, most;
    if (!PyArg_ParseTuple(args, "y*y*nnnndpiw*", &bx, &br, &q, &d, &start, &stop, &slack,
                          &sure_ok, &most, &bp))
        return NULL;
    PyObject *result = NULL;
    Pairs border = {NULL, 0, 0, 0};
    double *scratch = NULL;
    if (q < 0 || d < 0 || start < 0 || stop < start || stop > q) {
        PyErr_SetString(PyExc_ValueError, "need q, d >= 0 and 0 <= start <= stop <= q");
        goto done;
    }
    Py_ssize_t w = (q + 63) / 64;
    if (!check_len(&bx, q * d * 8, "xt") || !check_len(&br, q * 8, "r") ||
        !check_len(&bp, q * w * 8, "packed"))
        goto done;
    scratch = malloc((size_t)(d > 0 ? d : 1) * sizeof(double));
    if (scratch == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const double *xt = bx.buf, *r = br.buf;
    uint64_t *packed = bp.buf;
    const int lanes = pick_lanes(most);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = start; i < stop && !border.failed; i++)
        row_words(xt, r, q, d, i, slack, sure_ok, packed + i * w, w, lanes, scratch, &border);
    Py_END_ALLOW_THREADS
    if (border.failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize((const char *)border.v,
                                       border.len * (Py_ssize_t)sizeof(int64_t));
done:
    free(border.v);
    free(scratch);
    PyBuffer_Release(&bx);
    PyBuffer_Release(&br);
    PyBuffer_Release(&bp);
    return result;
}

/* Transpose a 64 x 64 bit tile in place: bit c of a[k] <-> bit k of a[c]. */
static void transpose64(uint64_t a[64]) {
    uint64_t m = 0x00000000FFFFFFFFULL;
    for (int j = 32; j; j >>= 1, m ^= m << j) {
        for (int k = 0; k < 64; k = ((k | j) + 1) & ~j) {
            uint64_t t = ((a[k] >> j) ^ a[k | j]) & m;
            a[k | j] ^= t;
            a[k] ^= t << j;
        }
    }
}

static PyObject *symmetrize(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer bp;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "w*n", &bp, &n)) return NULL;
    Py_ssize_t w = n > 0 ? (n + 63) / 64 : 0;
    if (n < 0 || !check_len(&bp, n * w * 8, "packed")) {
        if (n < 0) PyErr_SetString(PyExc_ValueError, "need n >= 0");
        PyBuffer_Release(&bp);
        return NULL;
    }
    uint64_t *p = bp.buf;
    Py_BEGIN_ALLOW_THREADS
    uint64_t tile[64];
    for (Py_ssize_t ti = 0; ti < w; ti++) {
        Py_ssize_t rows_i = n - ti * 64 < 64 ? n - ti * 64 : 64;
        for (Py_ssize_t tj = ti; tj < w; tj++) {
            Py_ssize_t rows_j = n - tj * 64 < 64 ? n - tj * 64 : 64;
            memset(tile, 0, sizeof tile);
            for (Py_ssize_t k = 0; k < rows_i; k++) tile[k] = p[(ti * 64 + k) * w + tj];
            transpose64(tile);  /* tile[c] = column c of tile (ti, tj) = row part of (tj, ti) */
            for (Py_ssize_t c = 0; c < rows_j; c++) p[(tj * 64 + c) * w + ti] |= tile[c];
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&bp);
    Py_RETURN_NONE;
}

static PyObject *components(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer bp, bl;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*nw*", &bp, &n, &bl)) return NULL;
    PyObject *result = NULL;
    uint64_t *unseen = NULL;
    int64_t *queue = NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "need n >= 0");
        goto done;
    }
    Py_ssize_t w = (n + 63) / 64;
    if (!check_len(&bp, n * w * 8, "packed") || !check_len(&bl, n * 8, "labels")) goto done;
    unseen = malloc((size_t)(w > 0 ? w : 1) * sizeof(uint64_t));
    queue = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (unseen == NULL || queue == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const uint64_t *p = bp.buf;
    int64_t *labels = bl.buf;
    int64_t n_comp = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < w; k++) unseen[k] = ~(uint64_t)0;
    if (n & 63) unseen[w - 1] = ((uint64_t)1 << (n & 63)) - 1;
    Py_ssize_t lowest = 0;  /* every word before this one is all seen */
    for (;;) {
        while (lowest < w && !unseen[lowest]) lowest++;
        if (lowest == w) break;
        int64_t s = (int64_t)(lowest << 6) + lowest_bit(unseen[lowest]);  /* smallest unseen */
        unseen[s >> 6] &= ~((uint64_t)1 << (s & 63));
        Py_ssize_t head = 0, tail = 0;
        queue[tail++] = s;
        while (head < tail) {
            int64_t v = queue[head++];
            labels[v] = n_comp;
            const uint64_t *row = p + v * w;
            for (Py_ssize_t k = lowest; k < w; k++) {
                uint64_t nb = row[k] & unseen[k];
                if (!nb) continue;
                unseen[k] &= ~nb;
                while (nb) {
                    queue[tail++] = (int64_t)(k << 6) + lowest_bit(nb);
                    nb &= nb - 1;
                }
            }
        }
        n_comp++;
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong(n_comp);
done:
    free(unseen);
    free(queue);
    PyBuffer_Release(&bp);
    PyBuffer_Release(&bl);
    return result;
}

/* The set bits of rows [0, n), row by row, ascending: (i, j) pairs of the upper triangle
 * (upper) or the column indices of every bit. Writes at most cap int64 values; returns
 * how many there are. */
static Py_ssize_t list_bits(const uint64_t *p, Py_ssize_t n, int upper, int64_t *out,
                            Py_ssize_t cap) {
    Py_ssize_t w = (n + 63) / 64, len = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint64_t *row = p + i * w;
        for (Py_ssize_t k = upper ? i >> 6 : 0; k < w; k++) {
            uint64_t bits = row[k];
            if (upper && k == i >> 6) bits &= ~(((uint64_t)2 << (i & 63)) - 1);  /* j > i */
            while (bits) {
                int64_t j = (int64_t)(k << 6) + lowest_bit(bits);
                bits &= bits - 1;
                if (upper) {
                    if (len + 2 <= cap) { out[len] = i; out[len + 1] = j; }
                    len += 2;
                } else {
                    if (len < cap) out[len] = j;
                    len++;
                }
            }
        }
    }
    return len;
}

static PyObject *bits_out(PyObject *args, int upper) {
    Py_buffer bp, bo;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*nw*", &bp, &n, &bo)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t w = (n + 63) / 64, len = 0, cap = bo.len / 8;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "need n >= 0");
        goto done;
    }
    if (!check_len(&bp, n * w * 8, "packed") || !check_len(&bo, cap * 8, "out")) goto done;
    Py_BEGIN_ALLOW_THREADS
    len = list_bits(bp.buf, n, upper, bo.buf, cap);
    Py_END_ALLOW_THREADS
    if (len != cap) {
        PyErr_Format(PyExc_ValueError, "out: room for %zd values, the bits give %zd", cap, len);
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&bp);
    PyBuffer_Release(&bo);
    return result;
}

static PyObject *edges(PyObject *self, PyObject *args) {
    (void)self;
    return bits_out(args, 1);
}

static PyObject *columns(PyObject *self, PyObject *args) {
    (void)self;
    return bits_out(args, 0);
}

static PyObject *lanes(PyObject *self, PyObject *args) {
    (void)self;
    int most;
    if (!PyArg_ParseTuple(args, "i", &most)) return NULL;
    return PyLong_FromLong(pick_lanes(most));
}

static PyMethodDef methods[] = {
    {"rows", rows, METH_VARARGS,
     "rows(xt, r, q, d, start, stop, slack, sure_ok, wide, packed) -> bytes: the upper-triangle "
     "words of rows [start, stop); the borderline pairs, int64 (i, j) each."},
    {"lanes", lanes, METH_VARARGS,
     "lanes(wide) -> int: the columns per vector rows() tests at once (4, 2 or 1)."},
    {"edges", edges, METH_VARARGS,
     "edges(packed, n, out): out int64 (E, 2) = the pairs i < j of the set bits, sorted."},
    {"columns", columns, METH_VARARGS,
     "columns(packed, n, out): out int64 = every row's set columns, row by row, ascending."},
    {"symmetrize", symmetrize, METH_VARARGS,
     "symmetrize(packed, n): packed |= its transpose."},
    {"components", components, METH_VARARGS,
     "components(packed, n, labels) -> int: labels numbered by their smallest vertex."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_overlap_kernel",
                                    "The overlap graph's all-pairs test, compiled.", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__overlap_kernel(void) { return PyModule_Create(&module); }
