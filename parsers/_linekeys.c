/* The templater's cache key of a block of log lines, in one native pass (used by parsers/templater.py).
 *
 * Each maximal run of hex characters [0-9A-Fa-f] that holds a digit becomes one '0': numbers of any length,
 * hex pointers after their 0x, UUID groups, IP octets and timestamp fields all collapse, so lines of one
 * message shape share one key. Runs without a digit (words such as "Added" or "deface") stay as they are.
 * Carriage returns are dropped; newlines are kept, so the key splits into the block's lines one for one.
 *
 * Written in C because no library does this one pass at memory speed: Python's re.sub over the block runs at
 * about 55 MB/s, google-re2's sub at 8 MB/s, and bytes.translate cannot collapse a run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { HEX = 1, DIGIT = 2, CR = 3 };
static unsigned char kind[256]; /* 0 other, HEX a hex letter, DIGIT, CR a carriage return */

/* Whether the hex run starting at src[i] holds a digit. */
static int run_has_digit(const unsigned char *src, Py_ssize_t i, Py_ssize_t n) {
    for (; i < n && kind[src[i]] != 0 && kind[src[i]] != 3; i++) {
        if (kind[src[i]] == 2) return 1;
    }
    return 0;
}

/* collapse() one byte at a time: for text with carriage returns, which are dropped wherever they stand.
 * A group of a dashed id (a UUID's `dfcc` between digit groups) is collapsed too though it holds no digit:
 * four or more hex letters joined by a dash to a group that was, or will be, collapsed. */
static Py_ssize_t collapse_bytewise(const unsigned char *src, Py_ssize_t n, unsigned char *dst) {
    Py_ssize_t w = 0, i = 0;
    while (i < n) {
        unsigned char k = kind[src[i]];
        if (k == 0) {
            dst[w++] = src[i++];
        } else if (k == 3) {
            i++;
        } else {
            Py_ssize_t start = i;
            int digit = 0;
            while (i < n && (k = kind[src[i]]) != 0 && k != 3) {
                digit |= (k == 2);
                i++;
            }
            int dashed = i - start >= 4 &&
                         ((w >= 2 && dst[w - 1] == '-' && dst[w - 2] == '0') ||
                          (i + 1 < n && src[i] == '-' && run_has_digit(src, i + 1, n)));
            if (digit || dashed) {
                dst[w++] = '0';
            } else {
                memcpy(dst + w, src + start, (size_t)(i - start));
                w += i - start;
            }
        }
    }
    return w;
}

/* The bytes of a word that are ASCII digits, as their high bits (SWAR: no byte of 128 or more counts). */
static inline uint64_t digit_bytes(uint64_t x) {
    const uint64_t ones = 0x0101010101010101ULL, low7 = ones * 127;
    return ((ones * (127 + '9' + 1) - (x & low7)) & ~x & ((x & low7) + ones * (127 - ('0' - 1)))) & (ones * 128);
}

/* The first ASCII digit in src[i:n], or n: eight bytes a step where the machine is little-endian. */
static inline Py_ssize_t next_digit(const unsigned char *src, Py_ssize_t i, Py_ssize_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, src + i, 8);
        uint64_t found = digit_bytes(x);
        if (found) return i + (__builtin_ctzll(found) >> 3);
    }
#endif
    for (; i < n; i++) {
        if (kind[src[i]] == DIGIT) return i;
    }
    return n;
}

/* Collapse src[0:n] into dst (which has room for n bytes); returns the bytes written.
 * A group of a dashed id (a UUID's `dfcc` between digit groups) is collapsed too though it holds no digit:
 * four or more hex letters joined by a dash to a group that was, or will be, collapsed.
 * It goes from digit to digit, not byte by byte: the text between two runs that hold a digit is copied as it
 * is, found eight bytes at a time, and each run is widened from its digit to its hex letters on either side.
 * A byte-by-byte pass spent most of its time entering and leaving the short hex-letter runs of plain words
 * ("added", "cafe"), which this pass never looks at. Text with a carriage return (`has_cr`: looked for once
 * per block by the caller) goes byte by byte. */
static Py_ssize_t collapse(const unsigned char *src, Py_ssize_t n, unsigned char *dst, int has_cr) {
    if (has_cr) return collapse_bytewise(src, n, dst);
    Py_ssize_t w = 0, i = 0; /* src[i] starts the text not yet written; it is never a hex character past 0 */
    for (;;) {
        Py_ssize_t d = next_digit(src, i, n);
        if (d == n) {
            memcpy(dst + w, src + i, (size_t)(n - i));
            return w + n - i;
        }
        Py_ssize_t start = d, end = d + 1;
        while (start > i && kind[src[start - 1]] == HEX) start--;
        while (end < n && kind[src[end]] != 0) end++;
        Py_ssize_t kept = start; /* a letters-only group of four or more, dashed to this run, goes too */
        if (start - 1 > i && src[start - 1] == '-') {
            Py_ssize_t group = start - 1;
            while (group > i && kind[src[group - 1]] == HEX) group--;
            if (start - 1 - group >= 4 && (group == 0 || kind[src[group - 1]] == 0)) kept = group;
        }
        memcpy(dst + w, src + i, (size_t)(kept - i));
        w += kept - i;
        if (kept < start) {
            dst[w++] = '0';
            dst[w++] = '-';
        }
        dst[w++] = '0';
        i = end;
        /* and the letters-only groups of four or more that follow it, dash by dash */
        while (i + 1 < n && src[i] == '-' && kind[src[i + 1]] == HEX) {
            Py_ssize_t group_end = i + 1;
            while (group_end < n && kind[src[group_end]] == HEX) group_end++;
            if (group_end - (i + 1) < 4 || (group_end < n && kind[src[group_end]] != 0)) break;
            dst[w++] = '-';
            dst[w++] = '0';
            i = group_end;
        }
    }
}

static PyObject *keys(PyObject *self, PyObject *arg) {
    Py_buffer in;
    if (PyObject_GetBuffer(arg, &in, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, in.len);
    if (out == NULL) {
        PyBuffer_Release(&in);
        return NULL;
    }
    Py_ssize_t w;
    Py_BEGIN_ALLOW_THREADS
    w = collapse((const unsigned char *)in.buf, in.len, (unsigned char *)PyBytes_AS_STRING(out),
                 memchr(in.buf, '\r', (size_t)in.len) != NULL);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    if (_PyBytes_Resize(&out, w) < 0) {
        return NULL;
    }
    return out;
}

/* The length of a line's launcher prefixes, kept as they are in its tally key so each rank keeps its own
 * slot: srun's label ` 12: `, and bracketed tags ending in `:` (`[default3]:`, `[rank12]:`,
 * `[1,12]<stdout>:`), in any number and order. Wider than the exact grammar (parsers/attribution.py reads
 * the rank off the line): what it keeps in addition only splits keys finer, never merges two ranks. */
static Py_ssize_t prefix_length(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t j = i;
        while (j < n && j - i < 4 && s[j] == ' ') j++;
        Py_ssize_t d = j;
        while (d < n && d - j < 6 && kind[s[d]] == 2) d++;
        if (d > j && d + 1 < n && s[d] == ':' && s[d + 1] == ' ') {
            i = d + 2;
            continue;
        }
        if (i < n && s[i] == '[') {
            Py_ssize_t e = i + 1;
            while (e < n && e - i <= 32 && s[e] != ']' && s[e] != '\n') e++;
            if (e < n && s[e] == ']') {
                Py_ssize_t after = e + 1;
                static const char *tails[] = {"<stdout>:", "<stderr>:", ":"};
                int matched = 0;
                for (int t = 0; t < 3 && !matched; t++) {
                    Py_ssize_t len = (Py_ssize_t)strlen(tails[t]);
                    if (after + len <= n && memcmp(s + after, tails[t], (size_t)len) == 0) {
                        i = after + len;
                        matched = 1;
                    }
                }
                if (matched) continue;
            }
        }
        return i;
    }
}

typedef struct {
    Py_ssize_t count, prefix, first, first_start, first_end, last, last_start, last_end;
    Py_ssize_t key_at, key_len; /* the key's bytes in the tally's arena */
    uint64_t hash;
} Slot;

/* A block's distinct keys, counted without a Python object per line: slots in order of first appearance,
 * an open-addressing table of slot numbers over them, the key bytes in one arena. A dict took one bytes
 * object, one SipHash and one look-up per line: a third of the tally's time on lines that are mostly alike. */
typedef struct {
    Slot *slots;
    Py_ssize_t used, room;
    Py_ssize_t *table; /* slot number + 1, 0 for empty; size a power of two, kept at most half full */
    Py_ssize_t mask;
    unsigned char *arena;
    Py_ssize_t arena_used, arena_room;
} Keys;

/* A multiply-xorshift hash eight bytes a step: keys are compared in full on a match, so it only has to spread. */
static uint64_t hash_bytes(const unsigned char *s, Py_ssize_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n, x;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&x, s + i, 8);
        h = (h ^ x) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    x = 0;
    memcpy(&x, s + i, (size_t)(n - i));
    h = (h ^ x) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

static int keys_init(Keys *k) {
    *k = (Keys){0};
    k->room = 64;
    k->mask = 127;
    k->arena_room = 1 << 14;
    k->slots = PyMem_Malloc(sizeof(Slot) * (size_t)k->room);
    k->table = PyMem_Calloc((size_t)k->mask + 1, sizeof(Py_ssize_t));
    k->arena = PyMem_Malloc((size_t)k->arena_room);
    return k->slots && k->table && k->arena ? 0 : -1;
}

static void keys_free(Keys *k) {
    PyMem_Free(k->slots);
    PyMem_Free(k->table);
    PyMem_Free(k->arena);
}

static int keys_grow_table(Keys *k) {
    Py_ssize_t mask = k->mask * 2 + 1;
    Py_ssize_t *table = PyMem_Calloc((size_t)mask + 1, sizeof(Py_ssize_t));
    if (table == NULL) return -1;
    for (Py_ssize_t i = 0; i < k->used; i++) {
        Py_ssize_t at = (Py_ssize_t)(k->slots[i].hash & (uint64_t)mask);
        while (table[at]) at = (at + 1) & mask;
        table[at] = i + 1;
    }
    PyMem_Free(k->table);
    k->table = table;
    k->mask = mask;
    return 0;
}

/* The slot of key[0:len], made when new (with prefix and place from the caller); NULL when out of memory. */
static Slot *keys_slot(Keys *k, const unsigned char *key, Py_ssize_t len, Py_ssize_t prefix, Py_ssize_t line,
                       Py_ssize_t start, Py_ssize_t end) {
    uint64_t h = hash_bytes(key, len);
    Py_ssize_t at = (Py_ssize_t)(h & (uint64_t)k->mask);
    for (Py_ssize_t held; (held = k->table[at]) != 0; at = (at + 1) & k->mask) {
        Slot *s = &k->slots[held - 1];
        if (s->hash == h && s->key_len == len && memcmp(k->arena + s->key_at, key, (size_t)len) == 0) return s;
    }
    if (k->used == k->room) {
        Slot *grown = PyMem_Realloc(k->slots, sizeof(Slot) * (size_t)(k->room * 2));
        if (grown == NULL) return NULL;
        k->slots = grown;
        k->room *= 2;
    }
    while (k->arena_used + len > k->arena_room) {
        unsigned char *grown = PyMem_Realloc(k->arena, (size_t)(k->arena_room * 2));
        if (grown == NULL) return NULL;
        k->arena = grown;
        k->arena_room *= 2;
    }
    memcpy(k->arena + k->arena_used, key, (size_t)len);
    Slot *s = &k->slots[k->used];
    *s = (Slot){0, prefix, line, start, end, line, start, end, k->arena_used, len, h};
    k->arena_used += len;
    k->table[at] = ++k->used;
    if (k->used * 2 > k->mask + 1 && keys_grow_table(k) < 0) return NULL;
    return &k->slots[k->used - 1];
}

static PyObject *tally(PyObject *self, PyObject *args) {
    Py_buffer in;
    int ranked;
    Py_ssize_t max_chars;
    if (!PyArg_ParseTuple(args, "y*pn", &in, &ranked, &max_chars)) {
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)in.buf;
    Py_ssize_t n = in.len, pos = 0, line = 0;
    int has_cr = memchr(buf, '\r', (size_t)n) != NULL;
    Keys k;
    unsigned char *scratch = PyMem_Malloc((size_t)(max_chars > 0 ? max_chars : 1));
    PyObject *result = NULL, *rows = NULL;
    if (keys_init(&k) < 0 || scratch == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    while (pos < n) {
        const unsigned char *nl = memchr(buf + pos, '\n', (size_t)(n - pos));
        Py_ssize_t end = nl ? nl - buf : n;
        Py_ssize_t len = end - pos;
        Py_ssize_t head = len < max_chars ? len : max_chars;
        Py_ssize_t keep = ranked ? prefix_length(buf + pos, head) : 0;
        memcpy(scratch, buf + pos, (size_t)keep);
        Py_ssize_t klen = keep + collapse(buf + pos + keep, head - keep, scratch + keep, has_cr);
        if (klen > 0) {
            Slot *slot = keys_slot(&k, scratch, klen, keep, line, pos, end);
            if (slot == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            slot->count++;
            slot->last = line;
            slot->last_start = pos;
            slot->last_end = end;
        }
        line++;
        pos = end + 1;
    }
    rows = PyList_New(k.used);
    if (rows == NULL) goto done;
    for (Py_ssize_t i = 0; i < k.used; i++) {
        Slot *s = &k.slots[i];
        PyObject *row = Py_BuildValue("(y#nnnnnnnn)", (const char *)k.arena + s->key_at, s->key_len, s->prefix,
                                      s->count, s->first, s->first_start, s->first_end, s->last, s->last_start,
                                      s->last_end);
        if (row == NULL) goto done;
        PyList_SET_ITEM(rows, i, row);
    }
    result = Py_BuildValue("(nO)", line, rows);
done:
    Py_XDECREF(rows);
    keys_free(&k);
    PyMem_Free(scratch);
    PyBuffer_Release(&in);
    return result;
}

static PyMethodDef methods[] = {
    {"keys", keys, METH_O,
     "keys(block) -> bytes: the block with every run of hex characters holding a digit made one '0', CRs dropped."},
    {"tally", tally, METH_VARARGS,
     "tally(block, ranked, max_chars) -> (lines, [(key, prefix_len, count, first, first_start, first_end, last, "
     "last_start, last_end)]): each distinct line key of the block once, in order of first appearance."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_linekeys", NULL, -1, methods};

PyMODINIT_FUNC PyInit__linekeys(void) {
    for (int c = '0'; c <= '9'; c++) kind[c] = 2;
    for (int c = 'a'; c <= 'f'; c++) kind[c] = 1;
    for (int c = 'A'; c <= 'F'; c++) kind[c] = 1;
    kind['\r'] = 3;
    return PyModule_Create(&module);
}
