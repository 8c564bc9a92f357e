/*
 * powershell.exe for the Windows lane: what flanneld.exe runs, recorded and answered from a state
 * file, so a test can read the routes flanneld made and the interfaces it set to forward. Wine has
 * no PowerShell; this is never shipped.
 *
 * flanneld (pkg/powershell) runs `powershell.exe -NoLogo -NoProfile -NonInteractive -Command S`
 * with S = `$ErrorActionPreference="Stop";try { C } catch { Write-Host $_; os.Exit(-1) }`, C
 * itself wrapped the same way around `ConvertTo-Json (Q)` when it parses the answer. The commands
 * it sends (pkg/routing/router_windows.go, pkg/ip/iface_windows.go):
 *   Get-NetRoute | Where { $_.DestinationPrefix -eq '0.0.0.0/0' } | Select-Object -Property ifIndex
 *   @(Get-NetRoute | Select-Object -Property IfIndex,DestinationPrefix,NextHop)
 *   @(Get-NetRoute -InterfaceIndex I -DestinationPrefix P | Select-Object -Property ...)
 *   New-NetRoute -InterfaceIndex I -DestinationPrefix P -NextHop  G
 *   Remove-NetRoute -InterfaceIndex I -DestinationPrefix P -NextHop G -Verbose -Confirm:$false
 *   Set-NetIPInterface -ifIndex I -AddressFamily IPv4 -Forwarding Enabled|Disabled
 *   Get-NetIPInterface -ifIndex I -AddressFamily IPv4 | Select-Object -Property Forwarding
 *
 * %FAKEPS_DIR% is the folder holding both files:
 *   commands.log  one line per run: its arguments as a JSON array (appended);
 *   state         one line per fact: `route IFINDEX PREFIX NEXTHOP` or `forwarding IFINDEX`.
 * Like PowerShell under that wrapper, a failure (no such route, a route that exists, a command
 * this stand-in does not know) prints the reason on stdout and exits non-zero.
 *
 * Build: x86_64-w64-mingw32-gcc -o powershell.exe powershell.c
 */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FACTS 512
#define FACT_LEN 160

static char facts[MAX_FACTS][FACT_LEN];
static int nfacts;
static char dir[1024];

static void path_of(char *out, size_t size, const char *name) { snprintf(out, size, "%s\\%s", dir, name); }

static int fail(const char *why, const char *detail) {
    printf("%s%s\n", why, detail);
    return 1;
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void record(int argc, char **argv) {
    char path[1100];
    path_of(path, sizeof path, "commands.log");
    FILE *f = fopen(path, "ab");
    if (!f) return;
    fputc('[', f);
    for (int i = 1; i < argc; i++) {
        if (i > 1) fputs(", ", f);
        json_string(f, argv[i]);
    }
    fputs("]\n", f);
    fclose(f);
}

static void load(void) {
    char path[1100];
    path_of(path, sizeof path, "state");
    FILE *f = fopen(path, "rb");
    if (!f) return;
    while (nfacts < MAX_FACTS && fgets(facts[nfacts], FACT_LEN, f)) {
        facts[nfacts][strcspn(facts[nfacts], "\r\n")] = 0;
        if (facts[nfacts][0]) nfacts++;
    }
    fclose(f);
}

static int save(void) {
    char path[1100], tmp[1100];
    path_of(path, sizeof path, "state");
    path_of(tmp, sizeof tmp, "state.tmp");
    FILE *f = fopen(tmp, "wb");
    if (!f) return fail("cannot write ", tmp);
    for (int i = 0; i < nfacts; i++)
        if (facts[i][0]) fprintf(f, "%s\n", facts[i]);
    fclose(f);
    remove(path);
    return rename(tmp, path) ? fail("cannot replace ", path) : 0;
}

/* The word after `-name ` (case-insensitive) in the command, into out; 0 when absent. */
static int option(const char *cmd, const char *name, char *out, size_t size) {
    size_t n = strlen(name);
    for (const char *p = cmd; (p = strchr(p, '-')) != NULL; p++) {
        if (_strnicmp(p + 1, name, n) || p[1 + n] != ' ') continue;
        p += 1 + n;
        while (*p == ' ') p++;
        size_t len = strcspn(p, " |)}");
        if (!len || len >= size) return 0;
        memcpy(out, p, len);
        out[len] = 0;
        return 1;
    }
    return 0;
}

static int find_route(const char *ifindex, const char *prefix, const char *nexthop) {
    char want[FACT_LEN];
    snprintf(want, sizeof want, "route %s %s %s", ifindex, prefix, nexthop);
    for (int i = 0; i < nfacts; i++)
        if (!strcmp(facts[i], want)) return i;
    return -1;
}

static int route_args(const char *cmd, char *ifindex, char *prefix, char *nexthop) {
    return option(cmd, "InterfaceIndex", ifindex, 16) && option(cmd, "DestinationPrefix", prefix, 64) &&
           option(cmd, "NextHop", nexthop, 64);
}

static int new_route(const char *cmd) {
    char ifindex[16], prefix[64], nexthop[64];
    if (!route_args(cmd, ifindex, prefix, nexthop)) return fail("New-NetRoute: missing a parameter: ", cmd);
    if (find_route(ifindex, prefix, nexthop) >= 0) return fail("Instance MSFT_NetRoute already exists: ", prefix);
    if (nfacts == MAX_FACTS) return fail("state is full", "");
    snprintf(facts[nfacts++], FACT_LEN, "route %s %s %s", ifindex, prefix, nexthop);
    return save();
}

static int remove_route(const char *cmd) {
    char ifindex[16], prefix[64], nexthop[64];
    if (!route_args(cmd, ifindex, prefix, nexthop)) return fail("Remove-NetRoute: missing a parameter: ", cmd);
    int i = find_route(ifindex, prefix, nexthop);
    if (i < 0) return fail("No matching MSFT_NetRoute objects found: ", prefix);
    facts[i][0] = 0;
    return save();
}

/* Routes as ConvertTo-Json prints them: an array when the query is `@(...)`, else one object
 * for one route. `Where ... '0.0.0.0/0'` keeps default routes; -InterfaceIndex/-DestinationPrefix
 * filter, and finding nothing with them is an error, as in PowerShell. */
static int get_routes(const char *cmd) {
    char ifindex[16] = "", prefix[64] = "", f_if[16], f_prefix[64], f_hop[64];
    int filtered = option(cmd, "InterfaceIndex", ifindex, sizeof ifindex);
    filtered |= option(cmd, "DestinationPrefix", prefix, sizeof prefix);
    if (strstr(cmd, "'0.0.0.0/0'")) strcpy(prefix, "0.0.0.0/0");
    int only_index = strstr(cmd, "NextHop") == NULL;
    int shown = 0;
    static char out[MAX_FACTS * FACT_LEN];
    size_t used = 0;
    for (int i = 0; i < nfacts; i++) {
        if (sscanf(facts[i], "route %15s %63s %63s", f_if, f_prefix, f_hop) != 3) continue;
        if ((ifindex[0] && strcmp(ifindex, f_if)) || (prefix[0] && strcmp(prefix, f_prefix))) continue;
        used += only_index ? snprintf(out + used, sizeof out - used, "%s{\"ifIndex\": %s}", shown ? ", " : "", f_if)
                           : snprintf(out + used, sizeof out - used,
                                      "%s{\"ifIndex\": %s, \"DestinationPrefix\": \"%s\", \"NextHop\": \"%s\"}",
                                      shown ? ", " : "", f_if, f_prefix, f_hop);
        shown++;
    }
    if (!shown && filtered) return fail("No MSFT_NetRoute objects found matching: ", cmd);
    if (strstr(cmd, "@(") || shown != 1) printf("[%s]\n", out);
    else printf("%s\n", out);
    return 0;
}

static int forwarding_index(const char *ifindex) {
    char want[FACT_LEN];
    snprintf(want, sizeof want, "forwarding %s", ifindex);
    for (int i = 0; i < nfacts; i++)
        if (!strcmp(facts[i], want)) return i;
    return -1;
}

static int set_interface(const char *cmd) {
    char ifindex[16], value[16];
    if (!option(cmd, "ifIndex", ifindex, sizeof ifindex) || !option(cmd, "Forwarding", value, sizeof value))
        return fail("Set-NetIPInterface: missing a parameter: ", cmd);
    int i = forwarding_index(ifindex);
    if (!_stricmp(value, "Enabled") && i < 0 && nfacts == MAX_FACTS) return fail("state is full", "");
    if (!_stricmp(value, "Enabled") && i < 0) snprintf(facts[nfacts++], FACT_LEN, "forwarding %s", ifindex);
    else if (!_stricmp(value, "Disabled") && i >= 0) facts[i][0] = 0;
    else if (_stricmp(value, "Enabled") && _stricmp(value, "Disabled")) return fail("bad -Forwarding: ", value);
    return save();
}

static int get_interface(const char *cmd) {
    char ifindex[16];
    if (!option(cmd, "ifIndex", ifindex, sizeof ifindex)) return fail("Get-NetIPInterface: missing -ifIndex: ", cmd);
    printf("{\"Forwarding\": %d}\n", forwarding_index(ifindex) >= 0);
    return 0;
}

/* flanneld's route check runs beside its lease watch: one run at a time changes the state. */
static HANDLE lock_state(void) {
    char path[1100];
    path_of(path, sizeof path, "state.lock");
    for (int tries = 0; tries < 1000; tries++) {
        HANDLE h = CreateFileA(path, GENERIC_WRITE, 0, NULL, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
        if (h != INVALID_HANDLE_VALUE) return h;
        Sleep(10);
    }
    return INVALID_HANDLE_VALUE;
}

static int answer(const char *cmd) {
    if (strstr(cmd, "New-NetRoute")) return new_route(cmd);
    if (strstr(cmd, "Remove-NetRoute")) return remove_route(cmd);
    if (strstr(cmd, "Get-NetRoute")) return get_routes(cmd);
    if (strstr(cmd, "Set-NetIPInterface")) return set_interface(cmd);
    if (strstr(cmd, "Get-NetIPInterface")) return get_interface(cmd);
    return fail("powershell.exe stand-in: unknown command: ", cmd);
}

int main(int argc, char **argv) {
    const char *env = getenv("FAKEPS_DIR");
    if (!env || !*env || strlen(env) >= sizeof dir - 1) return fail("powershell.exe stand-in: set FAKEPS_DIR", "");
    strcpy(dir, env);
    record(argc, argv);
    const char *cmd = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (!_stricmp(argv[i], "-Command")) cmd = argv[i + 1];
    if (!cmd) return fail("powershell.exe stand-in: only -Command is known", "");
    HANDLE lock = lock_state();
    if (lock == INVALID_HANDLE_VALUE) return fail("powershell.exe stand-in: cannot lock the state in ", dir);
    load();
    int rc = answer(cmd);
    fflush(stdout);
    CloseHandle(lock);
    return rc;
}
