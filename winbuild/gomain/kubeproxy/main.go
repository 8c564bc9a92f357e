// Command kube-proxy is Kubernetes' service proxy, built from its published module: the Windows
// lane runs it in kernelspace mode (winkernel) against the HNS simulator.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
