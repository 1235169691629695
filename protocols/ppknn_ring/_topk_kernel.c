/* The ring's two compiled loops: PP-TopK's step and the paper's class votes.
 *
 * One PP-TopK step (Algorithm 2) for ascending rows, compiled: the same outputs as
 * pp_topk._step_sorted_rows, bit for bit, in one pass per row instead of ~40 array
 * operations over the batch.
 *
 * step(g, g_prov, v, inserted, coins, uniforms, out, prov, real, fill, m,
 *      q, k, own, p_r, delta, check_v) -> int
 *
 * Inputs (C-contiguous buffers): g, v float64 (q, k); g_prov int32 (q, k); inserted
 * bool (q,); coins float64 (q,); uniforms float64 (q, k). Outputs written in place:
 * out float64 (q, k), prov int32 (q, k), real and fill bool (q,), m int64 (q,).
 *
 * Returns 1 when the outputs are written. Returns 0, writing nothing that the caller
 * keeps, when a row of g (or of v, with check_v) is not ascending or holds a NaN: the
 * caller takes the sorting path. Returns 2 when a random fill is drawn and some row's
 * lo or hi is not finite or is beyond 1e300 in size, or when hi = max(lo + delta,
 * G[k-m]) compares two zeros of opposite sign: numpy's own arithmetic decides those
 * (its floating-point warnings, its choice between -0.0 and 0.0), so the caller runs
 * the numpy path. Everything else is IEEE double arithmetic in numpy's order: built
 * with -ffp-contract=off, so that u * w + lo is a product rounded then a sum rounded,
 * as numpy computes it, never a fused multiply-add.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define RANDOM_FILL (-2)
#define BOUND 1e300

static int ascending(const double *a, Py_ssize_t k) {
    for (Py_ssize_t j = 0; j < k; j++) {
        if (isnan(a[j])) return 0;
        if (j > 0 && !(a[j] >= a[j - 1])) return 0;
    }
    return 1;
}

static int bounded(double x) { return isfinite(x) && fabs(x) <= BOUND; }

/* A row's tail length (slots i with V[k-1-i] < G[i]), then lo (G'[k], 1-indexed) and
 * G[k-m] as the numpy path reads them; ``reported`` is the m the step reports (0 once
 * inserted), which picks G[k-1] for g_km as numpy does. */
static Py_ssize_t tail_length(const double *gr, const double *vr, Py_ssize_t k) {
    Py_ssize_t mt = 0;
    for (Py_ssize_t i = 0; i < k; i++) mt += vr[k - 1 - i] < gr[i];
    return mt;
}

static void fill_bounds(const double *gr, const double *vr, Py_ssize_t k, Py_ssize_t mt,
                        int64_t reported, double *lo, double *g_km) {
    double v_last = vr[mt > 0 ? mt - 1 : 0];
    double g_last = gr[k - mt - 1 > 0 ? k - mt - 1 : 0];
    int v_later = mt > 0 && (mt == k || v_last >= g_last);
    *lo = v_later ? v_last : g_last;
    *g_km = gr[reported > 0 ? k - mt : k - 1];
}

static int check_len(Py_buffer *b, Py_ssize_t n, const char *name) {
    if (b->len != n) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, expected %zd", name, b->len, n);
        return 0;
    }
    return 1;
}

static PyObject *step(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer bg, bgp, bv, bins, bcoins, bu, bout, bprov, breal, bfill, bm;
    Py_ssize_t q, k;
    int own, check_v;
    double p_r, delta;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*w*w*w*w*w*nnidd" "p", &bg, &bgp, &bv, &bins,
                          &bcoins, &bu, &bout, &bprov, &breal, &bfill, &bm, &q, &k, &own,
                          &p_r, &delta, &check_v))
        return NULL;
    Py_buffer *all[] = {&bg, &bgp, &bv, &bins, &bcoins, &bu, &bout, &bprov, &breal, &bfill, &bm};
    PyObject *result = NULL;
    int status = 1;
    if (q < 0 || k < 1) {
        PyErr_SetString(PyExc_ValueError, "q must be >= 0 and k >= 1");
        goto done;
    }
    Py_ssize_t n = q * k;
    if (!check_len(&bg, n * 8, "g") || !check_len(&bgp, n * 4, "g_prov") ||
        !check_len(&bv, n * 8, "v") || !check_len(&bins, q, "inserted") ||
        !check_len(&bcoins, q * 8, "coins") || !check_len(&bu, n * 8, "uniforms") ||
        !check_len(&bout, n * 8, "out") || !check_len(&bprov, n * 4, "prov") ||
        !check_len(&breal, q, "real") || !check_len(&bfill, q, "fill") ||
        !check_len(&bm, q * 8, "m"))
        goto done;

    const double *g = bg.buf, *v = bv.buf, *coins = bcoins.buf, *u = bu.buf;
    const int32_t *gp = bgp.buf;
    const uint8_t *ins = bins.buf;
    double *out = bout.buf;
    int32_t *prov = bprov.buf;
    uint8_t *real = breal.buf, *fill = bfill.buf;
    int64_t *m = bm.buf;

    /* pass 1: row order, the tail's length and each row's kind (as the numpy path) */
    int any_fill = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < q && status == 1; r++) {
        const double *gr = g + r * k, *vr = v + r * k;
        if (!ascending(gr, k) || (check_v && !ascending(vr, k))) {
            status = 0;
            break;
        }
        Py_ssize_t mt = tail_length(gr, vr, k);
        int active = (vr[0] < gr[k - 1]) && !ins[r];  /* tail[:, k-1] & ~inserted */
        int randomise = coins[r] < p_r;
        real[r] = active && !randomise;
        fill[r] = active && randomise;
        m[r] = active ? mt : 0;
        any_fill |= fill[r];
    }
    /* pass 2: the outputs. With a fill anywhere, numpy computes lo and hi for every row:
     * a row whose lo or hi arithmetic could warn, or whose maximum meets zeros of
     * opposite sign, hands the whole step back (status 2; the caller discards what was
     * written), so every row's bounds are checked here, and a fill row's are used. */
    if (status == 1 && any_fill && !bounded(delta)) status = 2;
    for (Py_ssize_t r = 0; r < q && status == 1; r++) {
        const double *gr = g + r * k, *vr = v + r * k;
        const int32_t *gpr = gp + r * k;
        double *o = out + r * k;
        int32_t *p = prov + r * k;
        double lo = 0.0, g_km = 0.0;
        if (any_fill) {
            fill_bounds(gr, vr, k, tail_length(gr, vr, k), m[r], &lo, &g_km);
            double a = lo + delta;
            if (!bounded(lo) || !bounded(a) || !bounded(g_km) ||
                (a == 0.0 && g_km == 0.0 && signbit(a) != signbit(g_km))) {
                status = 2;
                break;
            }
        }
        if (real[r]) {  /* the stable merge of G and V, G first among equals */
            Py_ssize_t i = 0, j = 0;
            for (Py_ssize_t s = 0; s < k; s++) {
                if (vr[j] < gr[i]) { o[s] = vr[j++]; p[s] = own; }
                else { o[s] = gr[i++]; p[s] = gpr[i - 1]; }
            }
        } else if (fill[r]) {  /* G[:k-m], then m draws; the values sorted, stably */
            /* a fill row is active: m is the tail's length, and lo and G[k-m] are the
             * bounds checked above (fill_bounds with the tail's length reported) */
            Py_ssize_t mt = m[r];
            double a = lo + delta;
            double hi = (a >= g_km) ? a : g_km;  /* np.maximum, no NaN, zeros agree */
            double w = hi - lo;
            for (Py_ssize_t s = 0; s < k; s++) {
                if (s >= k - mt) {
                    volatile double d = u[r * k + s] * w;  /* rounded, then the sum */
                    o[s] = d + lo;
                    p[s] = RANDOM_FILL;
                } else {
                    o[s] = gr[s];
                    p[s] = gpr[s];
                }
            }
            for (Py_ssize_t s = 1; s < k; s++) {  /* insertion sort: stable */
                double x = o[s];
                Py_ssize_t t = s - 1;
                while (t >= 0 && o[t] > x) { o[t + 1] = o[t]; t--; }
                o[t + 1] = x;
            }
        } else {
            memcpy(o, gr, k * sizeof(double));
            memcpy(p, gpr, k * sizeof(int32_t));
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromLong(status);
done:
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) PyBuffer_Release(all[i]);
    return result;
}

/* class_counts(dist, final, labels, counts, q, w, k, c) -> int
 *
 * The paper's vote with uniform weights (votes.voter_mask(dist, final, "paper") counted
 * per class, as RingDataOwner._class_votes counts it): counts[r, labels[j]] += 1 for
 * every column j of row r with dist[r, j] <= final[r, k - 1], in one pass over the
 * distances (numpy builds the mask, finds its entries and counts them in four).
 *
 * dist float64 (q, w), final float64 (q, k), labels int64 (w,), counts uint64 (q, c),
 * overwritten (C-contiguous buffers). A NaN compares false, as in numpy.
 * Returns 1 when the counts are written; 0 when a label is outside [0, c), writing
 * nothing (the caller takes the numpy path, which decides what such a label does).
 */
static PyObject *class_counts(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer bd, bf, bl, bc;
    Py_ssize_t q, w, k, c;
    if (!PyArg_ParseTuple(args, "y*y*y*w*nnnn", &bd, &bf, &bl, &bc, &q, &w, &k, &c))
        return NULL;
    Py_buffer *all[] = {&bd, &bf, &bl, &bc};
    PyObject *result = NULL;
    int status = 1;
    if (q < 0 || w < 0 || k < 1 || c < 1) {
        PyErr_SetString(PyExc_ValueError, "q, w must be >= 0 and k, c >= 1");
        goto done;
    }
    if (!check_len(&bd, q * w * 8, "dist") || !check_len(&bf, q * k * 8, "final") ||
        !check_len(&bl, w * 8, "labels") || !check_len(&bc, q * c * 8, "counts"))
        goto done;
    const double *dist = bd.buf, *final = bf.buf;
    const int64_t *labels = bl.buf;
    uint64_t *counts = bc.buf;
    for (Py_ssize_t j = 0; j < w; j++)
        if (labels[j] < 0 || labels[j] >= c) status = 0;
    if (status == 1) {
        Py_BEGIN_ALLOW_THREADS
        memset(counts, 0, (size_t)(q * c) * sizeof(uint64_t));
        for (Py_ssize_t r = 0; r < q; r++) {
            const double *d = dist + r * w;
            const double delta = final[r * k + k - 1];
            uint64_t *out = counts + r * c;
            for (Py_ssize_t j = 0; j < w; j++)
                if (d[j] <= delta) out[labels[j]]++;  /* few columns vote: a branch */
        }
        Py_END_ALLOW_THREADS
    }
    result = PyLong_FromLong(status);
done:
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) PyBuffer_Release(all[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"step", step, METH_VARARGS, "One PP-TopK step over ascending rows (see the source)."},
    {"class_counts", class_counts, METH_VARARGS,
     "The paper's uniform class votes per query, in one pass (see the source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_topk_kernel",
                                    "The ring's compiled loops (see the source).",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__topk_kernel(void) { return PyModule_Create(&module); }
