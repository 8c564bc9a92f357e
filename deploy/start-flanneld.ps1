# flanneld in the wincni HostProcess container (deploy/wincni-flannel.yaml). In a HostProcess
# container the pod's service account and volumes live under $env:CONTAINER_SANDBOX_MOUNT_POINT, not
# at the paths client-go's in-cluster config reads, so flanneld gets a kubeconfig pointing there.
$ErrorActionPreference = 'Stop'
$root = $env:CONTAINER_SANDBOX_MOUNT_POINT
$sa = Join-Path $root 'var\run\secrets\kubernetes.io\serviceaccount'
$kubeconfig = Join-Path $root 'flannel\kubeconfig.yml'
@"
apiVersion: v1
kind: Config
clusters:
- name: cluster
  cluster:
    server: https://$($env:KUBERNETES_SERVICE_HOST):$($env:KUBERNETES_SERVICE_PORT)
    certificate-authority: $sa\ca.crt
users:
- name: flannel
  user:
    tokenFile: $sa\token
contexts:
- name: flannel
  context:
    cluster: cluster
    user: flannel
current-context: flannel
"@ | Set-Content -Encoding ascii -Path $kubeconfig
New-Item -ItemType Directory -Force -Path 'C:\run\flannel' | Out-Null
& (Join-Path $root 'flannel\flanneld.exe') --kube-subnet-mgr --kubeconfig-file $kubeconfig `
    --net-config-path (Join-Path $root 'etc\kube-flannel\net-conf.json') --subnet-file 'C:\run\flannel\subnet.env'
exit $LASTEXITCODE
