<#
.SYNOPSIS
    Build the wincni plugins for Windows (win-bridge, win-overlay, flannel, host-local, hnsctl, wincni)
    as one folder, dist\wincni\ (every <name>.exe beside one shared _wincni-<build>\ folder), and
    optionally install that folder where the kubelet finds the executables.

.DESCRIPTION
    1. Finds Python >= 3.10 (-Python, else the py launcher, else python/python3 on PATH).
    2. Creates .venv next to this script and installs the project with its build extra
       (again only when setup.cfg or pyproject.toml changed since the last install).
    3. Runs PyInstaller with specs\wincni.spec into dist\wincni\ (the same spec `make dist` uses).
    4. -Test runs the test suite afterwards (so the frozen-executable tests see dist\wincni\).
    5. -TestRealHns runs the parity suite (tests\parity) on this node's real HNS afterwards: as
       administrator, on a spare node; it refuses to start where HNS is not real (no HNS, or the
       Wine lane's fake DLLs) and leaves nothing behind. The report and every transcript go to
       build\parity\. Networks are bound only to -Adapter, never to the adapter carrying this
       machine's connection unless -AllowConnectedAdapter says so.
    6. -Release writes dist-release\: the package zip (dist\wincni\ with INSTALL.txt, samples\ and
       THIRD-PARTY.txt), its CycloneDX SBOM, the release notes (CHANGELOG.md's section) and
       SHA256SUMS, as `make release` does on Linux (winbuild\release.py); the image archive is
       made on Linux only (`make image`: crane is built with Go there).
    7. -Install copies the whole of dist\wincni\ (the .exe files and _wincni-<build>\) into -CniBinDir
       (needs an elevated shell); it stops, naming the file, when a running call holds one open.
       The folder gets an admin-only ACL first: SYSTEM and Administrators full control, Users
       read and execute, nothing inherited from above, owner Administrators; everything in it is
       reset to inherit exactly that (the runtime runs these files, the _wincni-<build>\ contents folder included, as SYSTEM).

.PARAMETER Release
    Also write the release files into dist-release\ (see 6. above).

.PARAMETER Install
    Copy dist\wincni\ (executables and _wincni-<build>\) into -CniBinDir. Requires "Run as administrator".
    On a node with pods, prefer dist\wincni\wincni.exe install: it upgrades while plugins run.

.PARAMETER CniBinDir
    The CNI binary directory of the node (containerd's bin_dir / kubelet --cni-bin-dir).

.PARAMETER Test
    Also install the test extra and run pytest after the build.

.PARAMETER TestRealHns
    Run the parity suite against this node's real HNS (Windows, HNS, "Run as administrator").

.PARAMETER Adapter
    The host adapter the parity scenarios that bind a network (L2Bridge, Overlay) may use.

.PARAMETER AllowConnectedAdapter
    -Adapter may be the adapter carrying this machine's own connection (a vSwitch on it blips it).

.PARAMETER Python
    A python.exe (>= 3.10) to create .venv with, instead of searching for one.

.EXAMPLE
    .\build.ps1
.EXAMPLE
    .\build.ps1 -Install
.EXAMPLE
    .\build.ps1 -Release
.EXAMPLE
    .\build.ps1 -Test -Install -CniBinDir 'C:\opt\cni\bin'
.EXAMPLE
    .\build.ps1 -TestRealHns -Adapter 'Ethernet 2'
#>
[CmdletBinding()]
param(
    [switch]$Install,
    [switch]$Release,
    [string]$CniBinDir = 'C:\k\cni',
    [switch]$Test,
    [switch]$TestRealHns,
    [string]$Adapter = '',
    [switch]$AllowConnectedAdapter,
    [string]$Python = ''
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'

$Root = $PSScriptRoot
$Commands = @('win-bridge', 'win-overlay', 'flannel', 'host-local', 'hnsctl', 'wincni')
$VenvPython = Join-Path $Root '.venv\Scripts\python.exe'
$Dist = Join-Path $Root 'dist'
$Bundle = Join-Path $Dist 'wincni'

function Invoke-Native {
    # Run a program and stop on a non-zero exit status. Native stderr (pip and PyInstaller log
    # there) must not count as a PowerShell error, which Windows PowerShell 5.1 does under 'Stop'.
    param([Parameter(Mandatory)][string]$Exe, [string[]]$Arguments = @())
    $ErrorActionPreference = 'Continue'
    & $Exe @Arguments
    if ($LASTEXITCODE -ne 0) {
        throw "'$Exe $($Arguments -join ' ')' failed with exit status $LASTEXITCODE"
    }
}

function Test-Python {
    # True when $Exe (with launcher arguments such as '-3.12') runs a Python >= 3.10.
    param([string]$Exe, [string[]]$Prefix = @())
    if (-not (Get-Command $Exe -ErrorAction SilentlyContinue)) { return $false }  # else $LASTEXITCODE is stale
    $ErrorActionPreference = 'Continue'
    try {
        & $Exe @Prefix -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>$null | Out-Null
        return ($LASTEXITCODE -eq 0)
    } catch {
        return $false
    }
}

function Find-Python {
    # Returns the program and its leading arguments, e.g. @('py', '-3.12') or @('C:\Python312\python.exe').
    if ($Python) {
        if (Test-Python $Python) { return , @($Python) }
        throw "-Python '$Python' is not a runnable Python 3.10 or newer."
    }
    if (Get-Command py -CommandType Application -ErrorAction SilentlyContinue) {
        foreach ($version in @('-3.13', '-3.12', '-3.11', '-3.10')) {
            if (Test-Python 'py' @($version)) { return , @('py', $version) }
        }
    }
    foreach ($name in @('python', 'python3')) {
        # The Microsoft Store's python.exe alias fails this test, so it is skipped naturally.
        foreach ($cmd in @(Get-Command $name -CommandType Application -All -ErrorAction SilentlyContinue)) {
            if (Test-Python $cmd.Path) { return , @($cmd.Path) }
        }
    }
    throw ('No Python 3.10 or newer found. Install one from https://www.python.org/downloads/windows/ ' +
           '(tick "Add python.exe to PATH" or use the py launcher), or pass -Python C:\path\to\python.exe.')
}

function Test-Elevated {
    $identity = [Security.Principal.WindowsIdentity]::GetCurrent()
    $principal = New-Object Security.Principal.WindowsPrincipal($identity)
    return $principal.IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator)
}

function Initialize-Venv {
    # .venv with the project installed in editable mode plus the extras this run needs.
    if (-not (Test-Path $VenvPython)) {
        $found = Find-Python
        $launcherArgs = @($found | Select-Object -Skip 1)
        Write-Host "Creating .venv with $($found -join ' ')"
        Invoke-Native $found[0] ($launcherArgs + @('-m', 'venv', (Join-Path $Root '.venv')))
    }
    $extras = (@('build') + @(if ($Test -or $TestRealHns) { 'test' }) + @(if ($Release) { 'release' })) -join ','
    $stamp = Join-Path $Root ".venv\.installed-$($extras -replace ',', '-')"
    $inputs = @('setup.cfg', 'pyproject.toml') | ForEach-Object { Get-Item (Join-Path $Root $_) }
    $stale = -not (Test-Path $stamp)
    if (-not $stale) {
        $stampTime = (Get-Item $stamp).LastWriteTimeUtc
        $stale = @($inputs | Where-Object { $_.LastWriteTimeUtc -gt $stampTime }).Count -gt 0
    }
    if ($stale) {
        Write-Host "Installing wincni[$extras] into .venv"
        Invoke-Native $VenvPython @('-m', 'pip', 'install', '--quiet', '--upgrade', 'pip')
        Invoke-Native $VenvPython @('-m', 'pip', 'install', '--quiet', '-e', ".[$extras]")
        Set-Content -Path $stamp -Value (Get-Date -Format o)
    }
}

function Assert-NotLocked {
    # A running plugin holds its .exe and the DLLs in its contents folder open; replacing only some files of
    # the folder would mix two builds, so every target is checked before anything is copied.
    param([string]$Path)
    if (-not (Test-Path $Path)) { return }
    try {
        $stream = [System.IO.File]::Open($Path, 'Open', 'ReadWrite', 'None')
        $stream.Close()
    } catch {
        throw "Cannot replace $Path because a running call holds it open (a plugin serving a pod, or hnsctl). Nothing was copied. Wait until no pods are being created or deleted on this node (or drain it), then run -Install again."
    }
}

function Protect-CniBinDir {
    # Well-known SIDs, so any Windows language works: SYSTEM, Administrators, Users. A default C:\
    # lets Authenticated Users modify a new folder, and a folder a user created first is theirs.
    Invoke-Native 'icacls.exe' @($CniBinDir, '/setowner', '*S-1-5-32-544', '/Q')
    Invoke-Native 'icacls.exe' @($CniBinDir, '/inheritance:r', '/grant:r', '*S-1-5-18:(OI)(CI)F',
                                '*S-1-5-32-544:(OI)(CI)F', '*S-1-5-32-545:(OI)(CI)RX', '/Q')
}

function Reset-CniBinDirContents {
    # Earlier installs and overwritten files keep their own ACLs: make all of them inherit the folder's.
    Invoke-Native 'icacls.exe' @((Join-Path $CniBinDir '*'), '/setowner', '*S-1-5-32-544', '/T', '/C', '/Q')
    Invoke-Native 'icacls.exe' @((Join-Path $CniBinDir '*'), '/reset', '/T', '/C', '/Q')
}

function Install-Bundle {
    if (-not (Test-Path $CniBinDir)) {
        New-Item -ItemType Directory -Path $CniBinDir -Force | Out-Null
    }
    Protect-CniBinDir
    $files = @(Get-ChildItem -Path $Bundle -Recurse -File)
    foreach ($file in $files) {
        Assert-NotLocked (Join-Path $CniBinDir $file.FullName.Substring($Bundle.Length + 1))
    }
    foreach ($file in $files) {
        $target = Join-Path $CniBinDir $file.FullName.Substring($Bundle.Length + 1)
        $parent = Split-Path -Parent $target
        if (-not (Test-Path $parent)) {
            New-Item -ItemType Directory -Path $parent -Force | Out-Null
        }
        try {
            Copy-Item -Path $file.FullName -Destination $target -Force
        } catch {
            throw "Could not replace $target (a call started meanwhile holds it open?): $($_.Exception.Message)"
        }
    }
    Reset-CniBinDirContents
    foreach ($name in $Commands) {
        Write-Host "  $(Join-Path $CniBinDir "$name.exe")"
    }
    $contents = (Get-ChildItem -Path $Bundle -Directory -Filter '_wincni-*' | Select-Object -First 1).Name
    Write-Host "  $(Join-Path $CniBinDir $contents) ($($files.Count) files in all)"
}

function Invoke-ParitySuite {
    # The parity suite on this node's real HNS; tests\parity\conftest.py refuses to start where
    # HNS is not real, and the suite removes everything it made.
    $env:LIBHNS_BACKEND = 'hcn'
    $env:WINCNI_PARITY_OUT = Join-Path $Root 'build\parity'
    $env:WINCNI_PARITY_ADAPTER = $Adapter
    $env:WINCNI_PARITY_ALLOW_CONNECTED_ADAPTER = if ($AllowConnectedAdapter) { '1' } else { '' }
    try {
        Invoke-Native $VenvPython @('-m', 'pytest', (Join-Path $Root 'tests\parity'), '-q', '-p', 'no:cacheprovider')
    } finally {
        foreach ($name in @('LIBHNS_BACKEND', 'WINCNI_PARITY_OUT', 'WINCNI_PARITY_ADAPTER',
                            'WINCNI_PARITY_ALLOW_CONNECTED_ADAPTER')) {
            Remove-Item "Env:$name" -ErrorAction SilentlyContinue
        }
    }
}

if ($TestRealHns -and -not (Test-Elevated)) {
    throw "-TestRealHns calls HNS, which needs an elevated shell: start PowerShell with 'Run as administrator'."
}

if ($Install -and -not (Test-Elevated)) {
    # Checked first so nobody waits for a build that cannot be installed.
    throw "-Install writes to $CniBinDir and needs an elevated shell: start PowerShell with 'Run as administrator' (or build without -Install and copy the contents of dist\wincni\ yourself)."
}

Push-Location $Root
try {
    Initialize-Venv

    # The build's ID (version, commit, time) is worked out here, once, and handed to the spec.
    $ErrorActionPreference = 'Continue'
    $env:WINCNI_BUILD = & $VenvPython -m winbuild.buildid
    $ErrorActionPreference = 'Stop'
    if ($LASTEXITCODE -ne 0) { throw "winbuild.buildid failed with exit status ${LASTEXITCODE}: no build ID, nothing built" }
    Write-Host "Building dist\wincni\ with PyInstaller (specs\wincni.spec), build $env:WINCNI_BUILD"
    Invoke-Native $VenvPython @('-m', 'PyInstaller', '--noconfirm', '--distpath', $Dist,
                                '--workpath', (Join-Path $Root 'build\pyinstaller'),
                                (Join-Path $Root 'specs\wincni.spec'))
    $missing = @($Commands | Where-Object { -not (Test-Path (Join-Path $Bundle "$_.exe")) })
    if ($missing.Count -gt 0) {
        throw "PyInstaller finished but dist\wincni\ lacks: $($missing -join ', ')"
    }
    $bytes = (Get-ChildItem $Bundle -Recurse -File | Measure-Object -Property Length -Sum).Sum
    Write-Host ('  dist\wincni\ {0:N1} MB' -f ($bytes / 1048576))

    if ($Release) {
        Write-Host 'Writing the release into dist-release\ (zip, SBOM, release notes, SHA256SUMS)'
        Invoke-Native $VenvPython @('-m', 'winbuild.release', '--bundle', $Bundle, '--no-image',
                                    '--out', (Join-Path $Root 'dist-release'))
    }

    if ($Test) {
        Write-Host 'Running the tests'
        Invoke-Native $VenvPython @('-m', 'pytest')
    }

    if ($TestRealHns) {
        Write-Host "Running the parity suite against this node's HNS (report in build\parity\)"
        Invoke-ParitySuite
    }

    if ($Install) {
        Write-Host "Installing into $CniBinDir"
        Install-Bundle
        Write-Host "Done. Point the container runtime's CNI bin_dir (or kubelet --cni-bin-dir) at $CniBinDir."
    }
} finally {
    Remove-Item Env:WINCNI_BUILD -ErrorAction SilentlyContinue  # this build's alone
    Pop-Location
}
