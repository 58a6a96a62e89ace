/* One pass over JSON bytes that orjson accepted, proving the strict rules it does not check.
 *
 * `certain(raw, max_depth)` is True when `raw` certainly has no duplicate key in any object,
 * no integer that could pass 64 bits (19 digits or more) and no container nested deeper than
 * `max_depth`; False when it cannot prove that (a key written with an escape, a long integer,
 * anything unexpected), and the caller leaves the input to the strict decoder. orjson itself
 * refuses NaN, Infinity, floats that overflow and lone surrogates, so they are not looked at.
 *
 * Keys are compared as raw bytes: without escapes, two keys are the same string exactly when
 * their bytes are (UTF-8 that orjson accepted has one spelling per character). Each object's
 * keys are compared when it closes, pairwise when few, sorted when many: O(k log k) whatever
 * the input. The scan holds no Python object and runs without the GIL.
 *
 * Built by the Makefile (`make`'s install step); agentledger.records.fast_json checks in
 * Python when the module is not there.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

#define LONG_INTEGER 19   /* digits from which an integer may not fit in 64 bits */
#define DEPTH_CAP 1024    /* the deepest max_depth accepted */
#define FEW_KEYS 16       /* up to this many keys an object's keys are compared pairwise */

typedef struct {
    const unsigned char *start;
    Py_ssize_t size;
} Key;

typedef struct {
    Key *items;
    Py_ssize_t count;
    Py_ssize_t room;
} Keys;

static int keys_push(Keys *keys, const unsigned char *start, Py_ssize_t size) {
    if (keys->count == keys->room) {
        Py_ssize_t room = keys->room ? keys->room * 2 : 256;
        Key *items = realloc(keys->items, (size_t)room * sizeof(Key));
        if (items == NULL) {
            return -1;
        }
        keys->items = items;
        keys->room = room;
    }
    keys->items[keys->count].start = start;
    keys->items[keys->count].size = size;
    keys->count++;
    return 0;
}

static int key_order(const void *left, const void *right) {
    const Key *a = left, *b = right;
    if (a->size != b->size) {
        return a->size < b->size ? -1 : 1;
    }
    return memcmp(a->start, b->start, (size_t)a->size);
}

static int same_key(const Key *a, const Key *b) {
    return a->size == b->size && memcmp(a->start, b->start, (size_t)a->size) == 0;
}

/* 1 when two of the `count` keys from `first` are the same. */
static int has_duplicate(Key *first, Py_ssize_t count) {
    if (count <= FEW_KEYS) {
        for (Py_ssize_t i = 1; i < count; i++) {
            for (Py_ssize_t j = 0; j < i; j++) {
                if (same_key(&first[i], &first[j])) {
                    return 1;
                }
            }
        }
        return 0;
    }
    qsort(first, (size_t)count, sizeof(Key), key_order);
    for (Py_ssize_t i = 1; i < count; i++) {
        if (same_key(&first[i], &first[i - 1])) {
            return 1;
        }
    }
    return 0;
}

/* Where the string from `at` (after its opening quote) closes, or -1; `escaped` is set when
 * it holds an escape. memchr finds both quotes and backslashes (strings are most of the
 * bytes); a quote found beyond a backslash is kept, not searched for again. */
static Py_ssize_t string_end(const unsigned char *text, Py_ssize_t size, Py_ssize_t at,
                             int *escaped) {
    const unsigned char *end = text + size, *quote = NULL;
    const unsigned char *from = text + at;
    for (;;) {
        if (quote == NULL || quote < from) {
            quote = from < end ? memchr(from, '"', (size_t)(end - from)) : NULL;
            if (quote == NULL) {
                return -1;
            }
        }
        const unsigned char *slash = memchr(from, '\\', (size_t)(quote - from));
        if (slash == NULL) {
            return quote - text;
        }
        *escaped = 1;
        from = slash + 2;
    }
}

/* Where the items of one list lie (`items`): the positions of its opening bracket, of the
 * commas between its items and of its closing bracket. `wanted` is the list sought: 1 the
 * top-level list, 2 the list that is the value of the top-level object's key "history". */
typedef struct {
    long long *items; /* 64 bits wherever built: Python reads them as "q" */
    Py_ssize_t count;
    Py_ssize_t room;
    int wanted;
    int depth;      /* the list's depth once found (0 before) */
    int closed;     /* its closing bracket seen */
    int history;    /* the top-level key just read is "history" */
} Marks;

static int marks_push(Marks *marks, Py_ssize_t at) {
    if (marks->count == marks->room) {
        Py_ssize_t room = marks->room ? marks->room * 2 : 1024;
        long long *items = realloc(marks->items, (size_t)room * sizeof(long long));
        if (items == NULL) {
            return -1;
        }
        marks->items = items;
        marks->room = room;
    }
    marks->items[marks->count++] = (long long)at;
    return 0;
}

/* 1 certain, 0 doubt, -1 out of memory. With `marks`, the sought list's brackets and commas
 * are noted on the way (`marks->depth` stays 0 when there is no such list). */
static int scan(const unsigned char *text, Py_ssize_t size, int max_depth, Keys *keys,
                Marks *marks) {
    char is_object[DEPTH_CAP + 2];
    Py_ssize_t key_base[DEPTH_CAP + 2];
    int depth = 0;
    int expect_key = 0;
    int values = 0; /* set by the first container, string or scalar: no value is not JSON */
    Py_ssize_t at = 0;
    while (at < size) {
        unsigned char byte = text[at];
        if (byte != ' ' && byte != '\t' && byte != '\n' && byte != '\r') {
            values = 1;
        }
        switch (byte) {
        case ' ': case '\t': case '\n': case '\r': case ':':
            at++;
            break;
        case ',':
            expect_key = depth > 0 && is_object[depth];
            if (marks != NULL && depth == marks->depth && !marks->closed &&
                marks_push(marks, at) < 0) {
                return -1;
            }
            at++;
            break;
        case '{': case '[':
            if (depth >= max_depth) {
                return 0;
            }
            depth++;
            is_object[depth] = byte == '{';
            if (marks != NULL && marks->depth == 0 && byte == '[' &&
                ((marks->wanted == 1 && depth == 1) ||
                 (marks->wanted == 2 && depth == 2 && marks->history))) {
                marks->depth = depth;
                if (marks_push(marks, at) < 0) {
                    return -1;
                }
            }
            key_base[depth] = keys->count;
            expect_key = byte == '{';
            at++;
            break;
        case '}': case ']':
            if (depth == 0 || is_object[depth] != (byte == '}')) {
                return 0;
            }
            if (byte == '}') {
                Py_ssize_t base = key_base[depth];
                if (has_duplicate(keys->items + base, keys->count - base)) {
                    return 0;
                }
                keys->count = base;
            }
            if (marks != NULL && depth == marks->depth && !marks->closed) {
                marks->closed = 1;
                if (marks_push(marks, at) < 0) {
                    return -1;
                }
            }
            depth--;
            expect_key = 0;
            at++;
            break;
        case '"': {
            Py_ssize_t start = ++at;
            int escaped = 0;
            at = string_end(text, size, at, &escaped);
            if (at < 0) {
                return 0;
            }
            if (expect_key) {
                if (escaped) {
                    return 0;
                }
                if (keys_push(keys, text + start, at - start) < 0) {
                    return -1;
                }
                if (marks != NULL && depth == 1) {
                    marks->history = at - start == 7 && memcmp(text + start, "history", 7) == 0;
                }
                expect_key = 0;
            }
            at++;
            break;
        }
        case '-': case '0': case '1': case '2': case '3': case '4':
        case '5': case '6': case '7': case '8': case '9': {
            int digits = 0;
            if (byte == '-') {
                at++;
            }
            while (at < size && text[at] >= '0' && text[at] <= '9') {
                digits++;
                at++;
            }
            int fraction = at < size && (text[at] == '.' || text[at] == 'e' || text[at] == 'E');
            if (digits >= LONG_INTEGER && !fraction) {
                return 0;
            }
            while (at < size && ((text[at] >= '0' && text[at] <= '9') || text[at] == '.' ||
                                 text[at] == 'e' || text[at] == 'E' || text[at] == '+' ||
                                 text[at] == '-')) {
                at++;
            }
            break;
        }
        case 't': case 'f': case 'n':
            while (at < size && text[at] >= 'a' && text[at] <= 'z') {
                at++;
            }
            break;
        default:
            return 0;
        }
    }
    return depth == 0 && values;
}

static PyObject *certain(PyObject *module, PyObject *args) {
    Py_buffer view;
    int max_depth;
    if (!PyArg_ParseTuple(args, "y*i:certain", &view, &max_depth)) {
        return NULL;
    }
    if (max_depth < 0 || max_depth > DEPTH_CAP) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "max_depth must be within 0 and %d", DEPTH_CAP);
        return NULL;
    }
    Keys keys = {NULL, 0, 0};
    int found;
    Py_BEGIN_ALLOW_THREADS
    found = scan(view.buf, view.len, max_depth, &keys, NULL);
    Py_END_ALLOW_THREADS
    free(keys.items);
    PyBuffer_Release(&view);
    if (found < 0) {
        return PyErr_NoMemory();
    }
    return PyBool_FromLong(found);
}

static PyObject *items(PyObject *module, PyObject *args) {
    Py_buffer view;
    int max_depth, wanted;
    if (!PyArg_ParseTuple(args, "y*ii:items", &view, &max_depth, &wanted)) {
        return NULL;
    }
    if (max_depth < 0 || max_depth > DEPTH_CAP || (wanted != 1 && wanted != 2)) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "max_depth must be within 0 and %d, wanted 1 or 2",
                     DEPTH_CAP);
        return NULL;
    }
    Keys keys = {NULL, 0, 0};
    Marks marks = {NULL, 0, 0, wanted, 0, 0, 0};
    int found;
    Py_BEGIN_ALLOW_THREADS
    found = scan(view.buf, view.len, max_depth, &keys, &marks);
    Py_END_ALLOW_THREADS
    free(keys.items);
    PyBuffer_Release(&view);
    PyObject *result;
    if (found < 0) {
        result = PyErr_NoMemory();
    } else if (found == 0 || !marks.closed) {
        result = Py_NewRef(Py_None);
    } else {
        result = PyBytes_FromStringAndSize((const char *)marks.items,
                                           marks.count * (Py_ssize_t)sizeof(long long));
    }
    free(marks.items);
    return result;
}

static PyMethodDef methods[] = {
    {"certain", certain, METH_VARARGS,
     "certain(raw, max_depth) -> bool: no duplicate key, long integer or deeper nesting."},
    {"items", items, METH_VARARGS,
     "items(raw, max_depth, wanted) -> bytes | None: certain's answer, and where the items of "
     "the top-level list (wanted 1) or of the top-level object's history list (wanted 2) lie."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef definition = {
    PyModuleDef_HEAD_INIT, "_strict_scan",
    "The strict rules orjson does not check, proven in one pass over the bytes.", -1, methods,
};

PyMODINIT_FUNC PyInit__strict_scan(void) {
    return PyModule_Create(&definition);
}
