# kube-proxy (winkernel) in its HostProcess container (deploy/kube-proxy-windows.yaml): kube-proxy.exe
# from the kube-proxy image, this script and kubeconfig.ps1 copied from the wincni image. The network
# name is the installed CNI config's "name" (what flanneld named the HNS network; the config is in
# the conf dir `wincni dirs` wrote to cni-dirs.json, as wincni install found it), the cluster CIDR
# net-conf.json's Network; on overlay (SOURCE_VIP_FILE set by modes/vxlan) the source VIP `wincni
# sourcevip` reserved. The flags are the ones kube-proxy 1.34 takes without a warning: NodePorts
# answer on the node's primary addresses only (`--nodeport-addresses=primary`, kube-proxy's own advice
# when the flag is unset), and no WinOverlay feature gate (generally available and locked on).
$ErrorActionPreference = 'Stop'
$root = $env:CONTAINER_SANDBOX_MOUNT_POINT
. (Join-Path $PSScriptRoot 'kubeconfig.ps1')
$kubeconfig = New-SandboxKubeconfig -User 'kube-proxy' -Path (Join-Path $PSScriptRoot 'kubeconfig.conf')
$dirs = Get-Content -Raw (Join-Path $PSScriptRoot 'cni-dirs.json') | ConvertFrom-Json
$network = (Get-Content -Raw (Join-Path $dirs.confDir '10-flannel.conflist') | ConvertFrom-Json).name
$cluster = (Get-Content -Raw (Join-Path $root 'etc\kube-flannel\net-conf.json') | ConvertFrom-Json).Network
$flags = @("--hostname-override=$env:NODE_NAME", "--kubeconfig=$kubeconfig", '--proxy-mode=kernelspace',
    "--network-name=$network", "--cluster-cidr=$cluster", '--nodeport-addresses=primary', '--enable-dsr=false', '--v=2')
if ($env:SOURCE_VIP_FILE) {
    $vip = ((Get-Content -Raw $env:SOURCE_VIP_FILE | ConvertFrom-Json).ip4.ip -split '/')[0]
    $flags += "--source-vip=$vip"
}
& (Join-Path $root 'kube-proxy\kube-proxy.exe') @flags
exit $LASTEXITCODE
