/*
 * A stand-in for computenetwork.dll, vmcompute.dll and CoTaskMemFree with the same export names and
 * parameter shapes (wchar_t strings, GUID by pointer, void* handles, PWSTR* out-strings), so that
 * libhns.ctypes_backend runs its Windows code path on Linux. It records what it received and is
 * scripted through the fake_* exports; every string it hands out is counted and must come back
 * through CoTaskMemFree exactly once.
 *
 * Build: cc -shared -fPIC -o libfakehns.so fakehns.c
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hcn_exports.h"
#include <wchar.h>

typedef int32_t HRESULT; /* 32 bits, as on Windows */

typedef struct {
    uint32_t Data1;
    uint16_t Data2;
    uint16_t Data3;
    uint8_t Data4[8];
} GUID;

#define MAX_LIVE 64
#define MAX_STRINGS 3

/* --- script for the next call --- */
static HRESULT next_hr;
static wchar_t *next_out;
static wchar_t *next_record;

/* --- what the last call received --- */
static char last_call[64];
static uint8_t last_guid[16];
static int last_guid_null;
static wchar_t *last_strings[MAX_STRINGS];
static int last_string_set[MAX_STRINGS];
static uintptr_t last_handle_in;
static uintptr_t last_handle_out;

/* --- accounting --- */
static void *live[MAX_LIVE];
static int alloc_count, free_count, bad_free_count, call_count, close_count;
static uintptr_t handle_counter;

static wchar_t *dup(const wchar_t *s) {
    size_t n;
    wchar_t *p;
    if (!s) return NULL;
    n = wcslen(s) + 1;
    p = malloc(n * sizeof(wchar_t));
    memcpy(p, s, n * sizeof(wchar_t));
    return p;
}

/* A CoTaskMem-style allocation the caller must free. */
static wchar_t *task_alloc(const wchar_t *s) {
    int i;
    wchar_t *p = dup(s);
    if (!p) return NULL;
    for (i = 0; i < MAX_LIVE; i++) {
        if (!live[i]) { live[i] = p; break; }
    }
    alloc_count++;
    return p;
}

void CoTaskMemFree(void *p) {
    int i;
    if (!p) return;
    for (i = 0; i < MAX_LIVE; i++) {
        if (live[i] == p) {
            live[i] = NULL;
            free_count++;
            free(p);
            return;
        }
    }
    bad_free_count++; /* double free or a pointer we never handed out */
}

/* --- test controls --- */
/* The marker real computenetwork.dll lacks (libhns.ctypes_backend.STAND_IN_EXPORT). */
const wchar_t *WincniFakeHns(void) { return L"wincni fake HNS (tests/fakedll/fakehns.c): scripted answers"; }

void fake_reset(void) {
    int i;
    free(next_out); free(next_record);
    next_out = next_record = NULL;
    next_hr = 0;
    for (i = 0; i < MAX_STRINGS; i++) { free(last_strings[i]); last_strings[i] = NULL; last_string_set[i] = 0; }
    for (i = 0; i < MAX_LIVE; i++) { free(live[i]); live[i] = NULL; }
    memset(last_guid, 0, sizeof last_guid);
    last_guid_null = 0;
    last_call[0] = 0;
    last_handle_in = last_handle_out = 0;
    alloc_count = free_count = bad_free_count = call_count = close_count = 0;
    handle_counter = 0;
}

void fake_set_next(HRESULT hr, const wchar_t *out, const wchar_t *record) {
    free(next_out); free(next_record);
    next_hr = hr;
    next_out = dup(out);
    next_record = dup(record);
}

const char *fake_last_call(void) { return last_call; }
int fake_last_guid(uint8_t out[16]) { memcpy(out, last_guid, 16); return last_guid_null; }
const wchar_t *fake_last_string(int idx) { return idx >= 0 && idx < MAX_STRINGS ? last_strings[idx] : NULL; }
int fake_last_string_set(int idx) { return idx >= 0 && idx < MAX_STRINGS ? last_string_set[idx] : 0; }
uintptr_t fake_last_handle_in(void) { return last_handle_in; }
uintptr_t fake_last_handle_out(void) { return last_handle_out; }
int fake_alloc_count(void) { return alloc_count; }
int fake_free_count(void) { return free_count; }
int fake_bad_free_count(void) { return bad_free_count; }
int fake_call_count(void) { return call_count; }
int fake_close_count(void) { return close_count; }

/* --- recording helpers --- */
static void begin(const char *name) {
    int i;
    strncpy(last_call, name, sizeof last_call - 1);
    last_call[sizeof last_call - 1] = 0;
    for (i = 0; i < MAX_STRINGS; i++) { free(last_strings[i]); last_strings[i] = NULL; last_string_set[i] = 0; }
    last_guid_null = 0;
    memset(last_guid, 0, sizeof last_guid);
    last_handle_in = 0;
    call_count++;
}

static void take_string(int idx, const wchar_t *s) {
    last_strings[idx] = dup(s);
    last_string_set[idx] = 1;
}

static void take_guid(const GUID *g) {
    if (!g) { last_guid_null = 1; return; }
    memcpy(last_guid, g, 16);
}

/* Consume the script: fill the out-string, the ErrorRecord and a new handle; return the HRESULT. */
static HRESULT finish(wchar_t **out, wchar_t **record, void **handle) {
    HRESULT hr = next_hr;
    if (out) *out = task_alloc(next_out);
    if (record) *record = task_alloc(next_record);
    if (handle) {
        *handle = hr < 0 ? NULL : (void *)(0x1000 + ++handle_counter);
        last_handle_out = (uintptr_t)*handle;
    }
    free(next_out); free(next_record);
    next_out = next_record = NULL;
    next_hr = 0;
    return hr;
}

/* --- computenetwork.dll --- */
#define HCN_KIND(K, Ks)                                                                            \
    HRESULT HcnEnumerate##Ks(const wchar_t *query, wchar_t **out, wchar_t **record) {              \
        begin("HcnEnumerate" #Ks); take_string(0, query);                                          \
        return finish(out, record, NULL);                                                          \
    }                                                                                              \
    HRESULT HcnOpen##K(const GUID *id, void **handle, wchar_t **record) {                          \
        begin("HcnOpen" #K); take_guid(id);                                                        \
        return finish(NULL, record, handle);                                                       \
    }                                                                                              \
    HRESULT HcnModify##K(void *handle, const wchar_t *settings, wchar_t **record) {                \
        begin("HcnModify" #K); last_handle_in = (uintptr_t)handle; take_string(0, settings);       \
        return finish(NULL, record, NULL);                                                         \
    }                                                                                              \
    HRESULT HcnQuery##K##Properties(void *handle, const wchar_t *query, wchar_t **out,             \
                                    wchar_t **record) {                                            \
        begin("HcnQuery" #K "Properties"); last_handle_in = (uintptr_t)handle;                     \
        take_string(0, query);                                                                     \
        return finish(out, record, NULL);                                                          \
    }                                                                                              \
    HRESULT HcnDelete##K(const GUID *id, wchar_t **record) {                                       \
        begin("HcnDelete" #K); take_guid(id);                                                      \
        return finish(NULL, record, NULL);                                                         \
    }                                                                                              \
    HRESULT HcnClose##K(void *handle) {                                                            \
        begin("HcnClose" #K); last_handle_in = (uintptr_t)handle; close_count++;                   \
        return finish(NULL, NULL, NULL);                                                           \
    }

#define HCN_CREATE(K)                                                                              \
    HRESULT HcnCreate##K(const GUID *id, const wchar_t *settings, void **handle,                   \
                         wchar_t **record) {                                                       \
        begin("HcnCreate" #K); take_guid(id); take_string(0, settings);                            \
        return finish(NULL, record, handle);                                                       \
    }

HCN_KINDS(HCN_KIND)
HCN_CREATE_KINDS(HCN_CREATE)

/* The network handle comes first. */
HRESULT HcnCreateEndpoint(void *network, const GUID *id, const wchar_t *settings, void **handle,
                          wchar_t **record) {
    begin("HcnCreateEndpoint"); last_handle_in = (uintptr_t)network;
    take_guid(id); take_string(0, settings);
    return finish(NULL, record, handle);
}

/* --- vmcompute.dll --- */
HRESULT HNSCall(const wchar_t *method, const wchar_t *path, const wchar_t *request,
                wchar_t **response) {
    begin("HNSCall");
    take_string(0, method); take_string(1, path); take_string(2, request);
    return finish(response, NULL, NULL);
}

HRESULT HcsOpenComputeSystem(const wchar_t *id, void **handle, wchar_t **result) {
    begin("HcsOpenComputeSystem"); take_string(0, id);
    return finish(result, NULL, handle);
}

HRESULT HcsModifyComputeSystem(void *handle, const wchar_t *configuration, wchar_t **result) {
    begin("HcsModifyComputeSystem"); last_handle_in = (uintptr_t)handle;
    take_string(0, configuration);
    return finish(result, NULL, NULL);
}

HRESULT HcsCloseComputeSystem(void *handle) {
    begin("HcsCloseComputeSystem"); last_handle_in = (uintptr_t)handle; close_count++;
    return finish(NULL, NULL, NULL);
}
