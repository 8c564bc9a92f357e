/*
 * A Wine 8 gap, filled for the Windows lane only: Windows 10+ has bcryptprimitives.dll, whose
 * ProcessPrng every Rust-built extension imports (here rpds-py, which jsonschema needs). Wine 8.0
 * lacks the DLL, so the import fails with "DLL load failed ... Module not found". This stand-in
 * exports ProcessPrng over BCryptGenRandom. It is never shipped: real Windows has the DLL.
 *
 * Build: x86_64-w64-mingw32-gcc -shared -o bcryptprimitives.dll bcryptprimitives.c -lbcrypt
 */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T size) {
    while (size) {
        ULONG chunk = size > 0x40000000 ? 0x40000000 : (ULONG)size;
        if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG))) return FALSE;
        data += chunk;
        size -= chunk;
    }
    return TRUE;
}
