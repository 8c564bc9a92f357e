/*
 * computenetwork.dll and vmcompute.dll for Windows programs under Wine, backed by the HNS simulator.
 *
 * Each export has the real Windows signature of what libhns.ctypes_backend binds (PCWSTR in,
 * GUID by pointer, HCN_* / HCS handles, PWSTR* out-strings the caller frees with CoTaskMemFree)
 * and forwards the call over loopback TCP to tests/fakedll/hnsserver.py, which runs libhns.sim on
 * Linux. So a plugin's real ctypes path runs, while the state lives where `hnsctl` on Linux sees
 * it, and LIBHNS_SIM_DIR / LIBHNS_SIM_VERSION / LIBHNS_SIM_FAULTS of the calling process reach the
 * simulator exactly as they would the in-process one (they are sent when the process connects).
 *
 * Wire format, both directions: u32 count, then count fields of u32 length + bytes (length
 * 0xFFFFFFFF: a NULL pointer). Request: name, GUID (16 bytes), handle (u64), up to three UTF-16LE
 * strings. Reply: HRESULT (i32), handle (u64), out-string, ErrorRecord (UTF-16LE or NULL).
 * The server's port is FAKEHNS_PORT.
 *
 * Build (the same source gives both DLLs; the exports a DLL does not need are harmless):
 *   x86_64-w64-mingw32-gcc -shared -O1 -o computenetwork.dll hnsbridge.c -lws2_32 -lole32
 */
#include <winsock2.h>
#include <windows.h>
#include <objbase.h>
#include <stdint.h>
#include <string.h>

#include "hcn_exports.h"

#define NULL_FIELD 0xFFFFFFFFu
#define MAX_FIELDS 8

static SRWLOCK lock = SRWLOCK_INIT;
static SOCKET conn = INVALID_SOCKET;

typedef struct {
    uint32_t len[MAX_FIELDS];
    char *data[MAX_FIELDS];
    uint32_t count;
} Fields;

static void fields_free(Fields *f) {
    uint32_t i;
    for (i = 0; i < f->count; i++) free(f->data[i]);
    f->count = 0;
}

static int send_all(const char *buf, int n) {
    while (n > 0) {
        int sent = send(conn, buf, n, 0);
        if (sent <= 0) return 0;
        buf += sent; n -= sent;
    }
    return 1;
}

static int recv_all(char *buf, int n) {
    while (n > 0) {
        int got = recv(conn, buf, n, 0);
        if (got <= 0) return 0;
        buf += got; n -= got;
    }
    return 1;
}

static int send_fields(uint32_t count, const uint32_t *len, const void *const *data) {
    uint32_t i;
    if (!send_all((const char *)&count, 4)) return 0;
    for (i = 0; i < count; i++) {
        uint32_t n = data[i] ? len[i] : NULL_FIELD;
        if (!send_all((const char *)&n, 4)) return 0;
        if (data[i] && n && !send_all((const char *)data[i], (int)n)) return 0;
    }
    return 1;
}

static int recv_fields(Fields *f) {
    uint32_t count, i;
    f->count = 0;
    if (!recv_all((char *)&count, 4) || count > MAX_FIELDS) return 0;
    for (i = 0; i < count; i++) {
        uint32_t n;
        if (!recv_all((char *)&n, 4)) return 0;
        f->len[i] = n;
        f->data[i] = NULL;
        f->count = i + 1;
        if (n == NULL_FIELD) continue;
        f->data[i] = malloc(n + 2);
        if (!f->data[i] || (n && !recv_all(f->data[i], (int)n))) return 0;
        f->data[i][n] = f->data[i][n + 1] = 0; /* a terminator for the string fields */
    }
    return 1;
}

static uint32_t wbytes(const wchar_t *s) { return s ? (uint32_t)(wcslen(s) * sizeof(wchar_t)) : 0; }

/* Connect once per process and send LIBHNS_SIM_* of this process. Caller holds the lock. */
static HRESULT connect_server(void) {
    static const wchar_t *names[] = {L"LIBHNS_SIM_DIR", L"LIBHNS_SIM_VERSION", L"LIBHNS_SIM_FAULTS"};
    wchar_t values[3][4096];
    const void *data[4];
    uint32_t len[4], i;
    char port[16];
    struct sockaddr_in addr;
    WSADATA wsa;
    DWORD n;
    BOOL nodelay = TRUE;

    if (conn != INVALID_SOCKET) return S_OK;
    n = GetEnvironmentVariableA("FAKEHNS_PORT", port, sizeof port);
    if (n == 0 || n >= sizeof port) return HRESULT_FROM_WIN32(ERROR_ENVVAR_NOT_FOUND);
    if (WSAStartup(MAKEWORD(2, 2), &wsa)) return E_FAIL;
    conn = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    if (conn == INVALID_SOCKET) return HRESULT_FROM_WIN32(WSAGetLastError());
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((u_short)atoi(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* Requests go out as several small sends: without TCP_NODELAY, Nagle's algorithm holds each
       one back until the server's delayed ACK (40 ms a call), and every HNS call would look slow. */
    setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, (const char *)&nodelay, sizeof nodelay);
    if (connect(conn, (struct sockaddr *)&addr, sizeof addr)) {
        HRESULT hr = HRESULT_FROM_WIN32(WSAGetLastError());
        closesocket(conn);
        conn = INVALID_SOCKET;
        return hr;
    }
    data[0] = "hello"; len[0] = 5;
    for (i = 0; i < 3; i++) {
        DWORD got = GetEnvironmentVariableW(names[i], values[i], 4096);
        data[i + 1] = got && got < 4096 ? values[i] : NULL;
        len[i + 1] = wbytes(data[i + 1]);
    }
    return send_fields(4, len, data) ? S_OK : E_FAIL;
}

static wchar_t *task_string(const Fields *f, uint32_t i) {
    wchar_t *p;
    if (i >= f->count || !f->data[i]) return NULL;
    p = CoTaskMemAlloc(f->len[i] + sizeof(wchar_t));
    if (!p) return NULL;
    memcpy(p, f->data[i], f->len[i]);
    p[f->len[i] / sizeof(wchar_t)] = 0;
    return p;
}

/* The simulator server cannot be reached: an ErrorRecord saying so, in HCN's JSON shape. */
static wchar_t *unreachable_record(void) {
    static const wchar_t text[] =
        L"{\"Success\":false,\"Error\":\"fakehns: the simulator server (FAKEHNS_PORT) is not reachable\"}";
    wchar_t *p = CoTaskMemAlloc(sizeof text);
    if (p) memcpy(p, text, sizeof text);
    return p;
}

/* Forward one call; fills the out-string, the ErrorRecord and the new handle from the reply. */
static HRESULT forward(const char *name, const GUID *guid, void *handle, const wchar_t *s0,
                       const wchar_t *s1, const wchar_t *s2, wchar_t **out, wchar_t **record,
                       void **handle_out) {
    uint64_t h = (uint64_t)(uintptr_t)handle;
    const void *data[6] = {name, guid, &h, s0, s1, s2};
    uint32_t len[6] = {(uint32_t)strlen(name), 16, 8, wbytes(s0), wbytes(s1), wbytes(s2)};
    Fields reply = {0};
    HRESULT hr;

    if (out) *out = NULL;
    if (record) *record = NULL;
    if (handle_out) *handle_out = NULL;
    AcquireSRWLockExclusive(&lock);
    hr = connect_server();
    if (SUCCEEDED(hr) && !(send_fields(6, len, data) && recv_fields(&reply) && reply.count == 4
                           && reply.len[0] == 4 && reply.len[1] == 8)) {
        closesocket(conn);
        conn = INVALID_SOCKET;
        hr = E_FAIL;
    }
    ReleaseSRWLockExclusive(&lock);
    if (FAILED(hr)) {
        if (record) *record = unreachable_record();
        fields_free(&reply);
        return hr;
    }
    memcpy(&hr, reply.data[0], 4);
    memcpy(&h, reply.data[1], 8);
    if (handle_out) *handle_out = (void *)(uintptr_t)h;
    if (out) *out = task_string(&reply, 2);
    if (record) *record = task_string(&reply, 3);
    fields_free(&reply);
    return hr;
}

#define EXPORT __declspec(dllexport) HRESULT WINAPI

/* The marker: real computenetwork.dll has no such export, so a caller that must reach real HNS
   (the self-test's hcn backend) asks for it and refuses when it answers. */
__declspec(dllexport) const wchar_t *WINAPI WincniFakeHns(void) {
    return L"wincni fake HNS (tests/fakedll/hnsbridge.c): every call goes to the HNS simulator";
}

/* --- computenetwork.dll --- */
#define HCN_KIND(K, Ks)                                                                            \
    EXPORT HcnEnumerate##Ks(PCWSTR query, PWSTR *out, PWSTR *record) {                            \
        return forward("HcnEnumerate" #Ks, NULL, NULL, query, NULL, NULL, out, record, NULL);      \
    }                                                                                              \
    EXPORT HcnOpen##K(const GUID *id, void **handle, PWSTR *record) {                             \
        return forward("HcnOpen" #K, id, NULL, NULL, NULL, NULL, NULL, record, handle);            \
    }                                                                                              \
    EXPORT HcnModify##K(void *handle, PCWSTR settings, PWSTR *record) {                           \
        return forward("HcnModify" #K, NULL, handle, settings, NULL, NULL, NULL, record, NULL);    \
    }                                                                                              \
    EXPORT HcnQuery##K##Properties(void *handle, PCWSTR query, PWSTR *out, PWSTR *record) {       \
        return forward("HcnQuery" #K "Properties", NULL, handle, query, NULL, NULL, out, record,   \
                       NULL);                                                                      \
    }                                                                                              \
    EXPORT HcnDelete##K(const GUID *id, PWSTR *record) {                                          \
        return forward("HcnDelete" #K, id, NULL, NULL, NULL, NULL, NULL, record, NULL);            \
    }                                                                                              \
    EXPORT HcnClose##K(void *handle) {                                                            \
        return forward("HcnClose" #K, NULL, handle, NULL, NULL, NULL, NULL, NULL, NULL);           \
    }

#define HCN_CREATE(K)                                                                              \
    EXPORT HcnCreate##K(const GUID *id, PCWSTR settings, void **handle, PWSTR *record) {          \
        return forward("HcnCreate" #K, id, NULL, settings, NULL, NULL, NULL, record, handle);      \
    }

HCN_KINDS(HCN_KIND)
HCN_CREATE_KINDS(HCN_CREATE)

/* The network handle comes first. */
EXPORT HcnCreateEndpoint(void *network, const GUID *id, PCWSTR settings, void **handle,
                         PWSTR *record) {
    return forward("HcnCreateEndpoint", id, network, settings, NULL, NULL, NULL, record, handle);
}

/* --- vmcompute.dll --- */
EXPORT HNSCall(PCWSTR method, PCWSTR path, PCWSTR request, PWSTR *response) {
    return forward("HNSCall", NULL, NULL, method, path, request, response, NULL, NULL);
}

EXPORT HcsOpenComputeSystem(PCWSTR id, void **handle, PWSTR *result) {
    return forward("HcsOpenComputeSystem", NULL, NULL, id, NULL, NULL, result, NULL, handle);
}

EXPORT HcsModifyComputeSystem(void *handle, PCWSTR configuration, PWSTR *result) {
    return forward("HcsModifyComputeSystem", NULL, handle, configuration, NULL, NULL, result, NULL,
                   NULL);
}

EXPORT HcsCloseComputeSystem(void *handle) {
    return forward("HcsCloseComputeSystem", NULL, handle, NULL, NULL, NULL, NULL, NULL, NULL);
}

/* The three hcsshim adds around a V1 hot-attach (the Go reference plugins call them; libhns does
   not). The fake HCS sends no notifications, so the callback is kept but never called: hcsshim
   waits for one only when it starts or stops a compute system, which no CNI plugin does. */
EXPORT HcsRegisterComputeSystemCallback(void *handle, void *callback, void *context,
                                        void **callback_handle) {
    (void)callback;
    (void)context;
    return forward("HcsRegisterComputeSystemCallback", NULL, handle, NULL, NULL, NULL, NULL, NULL,
                   callback_handle);
}

EXPORT HcsUnregisterComputeSystemCallback(void *callback_handle) {
    return forward("HcsUnregisterComputeSystemCallback", NULL, callback_handle, NULL, NULL, NULL,
                   NULL, NULL, NULL);
}

EXPORT HcsGetComputeSystemProperties(void *handle, PCWSTR query, PWSTR *properties,
                                     PWSTR *result) {
    return forward("HcsGetComputeSystemProperties", NULL, handle, query, NULL, NULL, properties,
                   result, NULL);
}
