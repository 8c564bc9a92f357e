# flanneld in the wincni HostProcess container (deploy/wincni-flannel.yaml), with a kubeconfig for a
# HostProcess container (kubeconfig.ps1 says why one is needed).
$ErrorActionPreference = 'Stop'
$root = $env:CONTAINER_SANDBOX_MOUNT_POINT
. (Join-Path $PSScriptRoot 'kubeconfig.ps1')
$kubeconfig = New-SandboxKubeconfig -User 'flannel' -Path (Join-Path $root 'flannel\kubeconfig.yml')
New-Item -ItemType Directory -Force -Path 'C:\run\flannel' | Out-Null
& (Join-Path $root 'flannel\flanneld.exe') --kube-subnet-mgr --kubeconfig-file $kubeconfig `
    --net-config-path (Join-Path $root 'etc\kube-flannel\net-conf.json') --subnet-file 'C:\run\flannel\subnet.env'
exit $LASTEXITCODE
