# The kubeconfig a HostProcess container's Kubernetes client needs (dot-sourced by start-flanneld.ps1
# and start-kube-proxy.ps1). In a HostProcess container the pod's service account token and CA are
# under $env:CONTAINER_SANDBOX_MOUNT_POINT, not at /var/run/secrets where client-go's in-cluster config
# and kubeadm's kube-proxy kubeconfig.conf point (sig-windows-tools' kube-proxy start.ps1 rewrites
# those /var paths for the same reason), so the kubeconfig names the files there: the kubelet keeps
# the token fresh in place. The API server is the one the kubelet itself uses (the server: line of
# its kubeconfig on the node): the kubernetes service's ClusterIP works only once kube-proxy runs,
# and both flanneld and kube-proxy start before that.
function New-SandboxKubeconfig([string]$User, [string]$Path) {
    $sa = Join-Path $env:CONTAINER_SANDBOX_MOUNT_POINT 'var\run\secrets\kubernetes.io\serviceaccount'
    $kubelet = if ($env:KUBELET_KUBECONFIG) { $env:KUBELET_KUBECONFIG } else { 'C:\etc\kubernetes\kubelet.conf' }
    $found = Select-String -Path $kubelet -Pattern '^\s*server:\s*(\S+)' | Select-Object -First 1
    if (-not $found) {
        throw "no 'server:' line in $kubelet: set KUBELET_KUBECONFIG to the kubelet's kubeconfig on this node"
    }
    $server = $found.Matches[0].Groups[1].Value
    @"
apiVersion: v1
kind: Config
clusters:
- name: cluster
  cluster:
    server: $server
    certificate-authority: $sa\ca.crt
users:
- name: $User
  user:
    tokenFile: $sa\token
contexts:
- name: $User
  context:
    cluster: cluster
    user: $User
current-context: $User
"@ | Set-Content -Encoding ascii -Path $Path
    $Path
}
