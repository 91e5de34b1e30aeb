/* mask(text): the templater's masking of variable parts, as one native left-to-right pass.
 *
 * It gives exactly what this alternation gives under Python's re.sub (tests/parsers/test_masking.py holds it
 * as the reference and compares the two on every line of the project's real logs): at each position the first alternative
 * that matches is replaced by its label and the pass goes on after it.
 *   NCCLHOST  ^[\w.-]+:\d+:\d+(?= \[\d+\])                                   -> <HOST>
 *   IP        (?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?:<\d+>|:\d+)?(?![\w.])       -> <IP>
 *   HEX       \b0x[0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b  -> <HEX>
 *   PATH      (?<![\w.])(?:[A-Za-z]:)?(?:[/\\][\w.@+~-]+){2,}[/\\]?         -> <PATH>
 *   HOST      (?i:\b(?:node|gpu|host|worker|compute|dgx|nid|cn|ip)[-_]?(?:[a-z]+[-_])*[a-z]*\d+(?:[-_]\d+)*\b)
 *                                                                            -> <HOST>
 *   RANK      (?i:(?<=\brank)[ =:]?\d+|(?<=\blocal_rank)[ =:]+\d+)            -> " <RANK>"
 *   NUM       (?<![\w<])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?:%|ms|s|GiB|MiB|GB|MB|KB)?(?![\w>])  -> <NUM>
 * \w, \d and \b are Unicode's, as Python's re has them for str: a word character is alphanumeric or '_', a digit
 * any decimal; (?i:) also lets İ and ı stand for i, ſ for s and the Kelvin sign for k.
 * Each alternative is matched by hand, with the backtracking the regex would do where it can change the match
 * (a trailing group given up so a lookahead holds), and none where it provably cannot.
 * Why C: this runs once per new message shape, and Python's re, trying seven alternatives with lookarounds at
 * every position, took about 50 us a line: the cost of a job whose lines are mostly distinct.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static inline int ascii_alnum(Py_UCS4 c) { return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z'); }
static inline int ascii_alpha(Py_UCS4 c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; }
static inline int ascii_hex(Py_UCS4 c) { return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'f'); }

typedef struct {
    const void *data;
    int kind;
    Py_ssize_t n;
} Text;

static inline Py_UCS4 at(const Text *t, Py_ssize_t i) { return PyUnicode_READ(t->kind, t->data, i); }
static inline int is_word(Py_UCS4 c) { return c < 128 ? (ascii_alnum(c) || c == '_') : Py_UNICODE_ISALNUM(c); }
static inline int is_digit(Py_UCS4 c) { return c < 128 ? (c >= '0' && c <= '9') : Py_UNICODE_ISDECIMAL(c); }
static inline int is_hex(Py_UCS4 c) { return ascii_hex(c); }
static inline int word_at(const Text *t, Py_ssize_t i) { return i >= 0 && i < t->n && is_word(at(t, i)); }
static inline int digit_at(const Text *t, Py_ssize_t i) { return i < t->n && is_digit(at(t, i)); }
static inline int char_at(const Text *t, Py_ssize_t i, Py_UCS4 c) { return i >= 0 && i < t->n && at(t, i) == c; }
static inline int boundary(const Text *t, Py_ssize_t i) { return word_at(t, i - 1) != word_at(t, i); }

/* A character as (?i:) compares it to an ASCII letter: lowercased, with the four non-ASCII folds. */
static inline Py_UCS4 fold(Py_UCS4 c) {
    if (c < 128) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c == 0x130 || c == 0x131) return 'i';
    if (c == 0x17f) return 's';
    if (c == 0x212a) return 'k';
    return c;
}
static inline int letter_at(const Text *t, Py_ssize_t i) {
    if (i >= t->n) return 0;
    Py_UCS4 c = fold(at(t, i));
    return c >= 'a' && c <= 'z';
}
static int word_is(const Text *t, Py_ssize_t i, const char *w) { /* case-folded w at i */
    for (; *w; w++, i++) {
        if (i >= t->n || fold(at(t, i)) != (Py_UCS4)*w) return 0;
    }
    return 1;
}
static int same_at(const Text *t, Py_ssize_t i, const char *w) { /* w exactly at i */
    for (; *w; w++, i++) {
        if (i >= t->n || at(t, i) != (Py_UCS4)*w) return 0;
    }
    return 1;
}
static Py_ssize_t digits_from(const Text *t, Py_ssize_t i) { /* end of the \d+ run at i (i when none) */
    while (digit_at(t, i)) i++;
    return i;
}

static Py_ssize_t m_ncclhost(const Text *t, Py_ssize_t p) {
    if (p != 0) return -1;
    Py_ssize_t i = 0;
    while (i < t->n && (is_word(at(t, i)) || at(t, i) == '.' || at(t, i) == '-')) i++;
    if (i == 0 || !char_at(t, i, ':')) return -1;
    Py_ssize_t j = digits_from(t, i + 1);
    if (j == i + 1 || !char_at(t, j, ':')) return -1;
    Py_ssize_t e = digits_from(t, j + 1);
    if (e == j + 1 || !char_at(t, e, ' ') || !char_at(t, e + 1, '[')) return -1;
    Py_ssize_t d = digits_from(t, e + 2);
    return (d > e + 2 && char_at(t, d, ']')) ? e : -1;
}

static inline int not_word_or(const Text *t, Py_ssize_t i, Py_UCS4 extra) { /* (?![\w<extra>]) at i */
    return !(word_at(t, i) || char_at(t, i, extra));
}

static Py_ssize_t m_ip(const Text *t, Py_ssize_t p) {
    if (!digit_at(t, p) || word_at(t, p - 1) || char_at(t, p - 1, '.')) return -1;
    Py_ssize_t i = p;
    for (int g = 0; g < 4; g++) {
        Py_ssize_t e = digits_from(t, i);
        if (e == i || e - i > 3) return -1; /* a shorter group leaves a digit where '.' or the end must be */
        i = e;
        if (g < 3) {
            if (!char_at(t, i, '.')) return -1;
            i++;
        }
    }
    if (char_at(t, i, '<')) { /* (?:<\d+>|:\d+)? tried with each port form, then without */
        Py_ssize_t e = digits_from(t, i + 1);
        if (e > i + 1 && char_at(t, e, '>') && not_word_or(t, e + 1, '.')) return e + 1;
    } else if (char_at(t, i, ':')) {
        Py_ssize_t e = digits_from(t, i + 1);
        if (e > i + 1 && not_word_or(t, e, '.')) return e;
    }
    return not_word_or(t, i, '.') ? i : -1;
}

static Py_ssize_t m_hex(const Text *t, Py_ssize_t p) {
    if (!boundary(t, p)) return -1;
    if (char_at(t, p, '0') && char_at(t, p + 1, 'x')) {
        Py_ssize_t e = p + 2;
        while (e < t->n && is_hex(at(t, e))) e++;
        if (e > p + 2 && boundary(t, e)) return e;
    }
    Py_ssize_t e = p;
    int digit = 0, letter = 0;
    while (e < t->n && is_hex(at(t, e))) {
        Py_UCS4 c = at(t, e++);
        digit |= c <= '9';
        letter |= c > '9';
    }
    /* a decimal right after the run would satisfy the digit look-ahead, but it is a word character: no \b */
    return (digit && letter && e - p >= 8 && boundary(t, e)) ? e : -1;
}

static inline int path_char(Py_UCS4 c) {
    return is_word(c) || c == '.' || c == '@' || c == '+' || c == '~' || c == '-';
}

static Py_ssize_t m_path(const Text *t, Py_ssize_t p) {
    if (word_at(t, p - 1) || char_at(t, p - 1, '.')) return -1;
    Py_ssize_t i = p;
    if (p < t->n && ascii_alpha(at(t, p)) && char_at(t, p + 1, ':')) i = p + 2;
    int segments = 0;
    while (i + 1 < t->n && (at(t, i) == '/' || at(t, i) == '\\') && path_char(at(t, i + 1))) {
        i += 2;
        while (i < t->n && path_char(at(t, i))) i++;
        segments++;
    }
    if (segments < 2) return -1; /* greedy segments end where none can follow: no backtracking makes more */
    if (i < t->n && (at(t, i) == '/' || at(t, i) == '\\')) i++;
    return i;
}

static Py_ssize_t m_host(const Text *t, Py_ssize_t p) {
    static const char *words[] = {"node", "gpu", "host", "worker", "compute", "dgx", "nid", "cn", "ip"};
    if (!boundary(t, p) || !word_at(t, p)) return -1;
    Py_ssize_t q = -1;
    for (size_t w = 0; w < sizeof words / sizeof *words && q < 0; w++) {
        if (word_is(t, p, words[w])) q = p + (Py_ssize_t)strlen(words[w]);
    }
    if (q < 0) return -1;
    /* [-_]?(?:[a-z]+[-_])*[a-z]* must run from q up to the first digit: letters and single separators, the
     * first separator optional; \d+ needs a digit right after it, and no earlier stop is followed by one. */
    Py_ssize_t i = q;
    if (char_at(t, i, '-') || char_at(t, i, '_')) i++;
    int after_sep = 1;
    while (i < t->n) {
        if (letter_at(t, i)) {
            after_sep = 0;
            i++;
        } else if (!after_sep && (at(t, i) == '-' || at(t, i) == '_')) {
            after_sep = 1;
            i++;
        } else {
            break;
        }
    }
    if (!digit_at(t, i)) return -1;
    /* \d+(?:[-_]\d+)*\b: greedy, then groups given back one by one until \b holds. A group's digits are
     * followed by a separator: '-' makes a boundary, '_' (a word character) does not. So the match ends at the
     * greedy end, else before the last group that a '-' began. */
    i = digits_from(t, i);
    Py_ssize_t before_dash = -1;
    while ((char_at(t, i, '-') || char_at(t, i, '_')) && digit_at(t, i + 1)) {
        if (at(t, i) == '-') before_dash = i;
        i = digits_from(t, i + 1);
    }
    return boundary(t, i) ? i : before_dash;
}

static Py_ssize_t m_rank(const Text *t, Py_ssize_t p) {
    if (p >= 4 && word_is(t, p - 4, "rank") && !word_at(t, p - 5)) { /* (?<=\brank)[ =:]?\d+ */
        Py_ssize_t i = p;
        if (char_at(t, i, ' ') || char_at(t, i, '=') || char_at(t, i, ':')) i++;
        Py_ssize_t e = digits_from(t, i);
        if (e > i) return e;
    }
    if (p >= 10 && word_is(t, p - 10, "local_rank") && !word_at(t, p - 11)) { /* (?<=\blocal_rank)[ =:]+\d+ */
        Py_ssize_t i = p;
        while (char_at(t, i, ' ') || char_at(t, i, '=') || char_at(t, i, ':')) i++;
        Py_ssize_t e = digits_from(t, i);
        if (i > p && e > i) return e;
    }
    return -1;
}

static Py_ssize_t num_tail(const Text *t, Py_ssize_t i) { /* (?:%|ms|s|GiB|MiB|GB|MB|KB)?(?![\w>]) at i */
    static const char *units[] = {"%", "ms", "s", "GiB", "MiB", "GB", "MB", "KB"};
    for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
        if (same_at(t, i, units[u])) {
            Py_ssize_t e = i + (Py_ssize_t)strlen(units[u]);
            if (not_word_or(t, e, '>')) return e;
        }
    }
    return not_word_or(t, i, '>') ? i : -1;
}

static Py_ssize_t m_num(const Text *t, Py_ssize_t p) {
    if (word_at(t, p - 1) || char_at(t, p - 1, '<')) return -1;
    Py_ssize_t i = p;
    if (char_at(t, i, '-') || char_at(t, i, '+')) i++;
    Py_ssize_t e = digits_from(t, i);
    if (e == i) return -1;
    /* (?:[.,]\d+)* greedy; when the rest fails after the last group, that group is given back: its '.' or ','
     * then satisfies (?![\w>]) with no exponent or unit, so the match ends before it. */
    Py_ssize_t before_last = -1;
    while ((char_at(t, e, '.') || char_at(t, e, ',')) && digit_at(t, e + 1)) {
        before_last = e;
        e = digits_from(t, e + 1);
    }
    if (char_at(t, e, 'e') || char_at(t, e, 'E')) { /* the exponent, its sign tried first */
        Py_ssize_t x = e + 1;
        if (char_at(t, x, '-') || char_at(t, x, '+')) x++;
        Py_ssize_t xe = digits_from(t, x);
        if (xe > x) {
            Py_ssize_t end = num_tail(t, xe);
            if (end >= 0) return end;
        }
    }
    Py_ssize_t end = num_tail(t, e);
    return end >= 0 ? end : before_last;
}

static PyObject *mask(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "mask() takes a str");
        return NULL;
    }
    Text t = {PyUnicode_DATA(arg), PyUnicode_KIND(arg), PyUnicode_GET_LENGTH(arg)};
    Py_ssize_t room = t.n + 64, w = 0, p = 0; /* grown when labels outgrow what they replace */
    Py_UCS4 *out = PyMem_Malloc(sizeof(Py_UCS4) * (size_t)room);
    if (out == NULL) return PyErr_NoMemory();
    while (p < t.n) {
        if (w + 8 > room) { /* a label is seven characters at most */
            Py_UCS4 *grown = PyMem_Realloc(out, sizeof(Py_UCS4) * (size_t)(room * 2));
            if (grown == NULL) {
                PyMem_Free(out);
                return PyErr_NoMemory();
            }
            out = grown;
            room *= 2;
        }
        const char *label = NULL;
        Py_ssize_t e;
        if ((e = m_ncclhost(&t, p)) >= 0) label = "<HOST>";
        else if ((e = m_ip(&t, p)) >= 0) label = "<IP>";
        else if ((e = m_hex(&t, p)) >= 0) label = "<HEX>";
        else if ((e = m_path(&t, p)) >= 0) label = "<PATH>";
        else if ((e = m_host(&t, p)) >= 0) label = "<HOST>";
        else if ((e = m_rank(&t, p)) >= 0) label = " <RANK>";
        else if ((e = m_num(&t, p)) >= 0) label = "<NUM>";
        if (label == NULL) {
            out[w++] = at(&t, p++);
            continue;
        }
        for (const char *c = label; *c; c++) out[w++] = (Py_UCS4)*c;
        p = e;
    }
    PyObject *result = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, w);
    PyMem_Free(out);
    return result;
}

static PyMethodDef methods[] = {
    {"mask", mask, METH_O,
     "mask(text) -> str: numbers, hex, IPs, paths, hostnames and ranks replaced by <NUM>, <HEX>, <IP>, <PATH>, "
     "<HOST> and <RANK>."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_masking", NULL, -1, methods};

PyMODINIT_FUNC PyInit__masking(void) { return PyModule_Create(&module); }
