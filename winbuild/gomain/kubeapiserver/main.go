// Command kube-apiserver is Kubernetes' API server, built from its published module: the Windows
// lane's control plane on loopback, which kube-proxy and flanneld read Nodes and Services from.
//
// `kube-apiserver write-service-account-key PATH` writes a new ECDSA private key (PEM, mode 0600)
// for --service-account-key-file and --service-account-signing-key-file, so the lane needs no
// openssl to start it.
package main

import (
	"fmt"
	"os"

	"k8s.io/client-go/util/keyutil"
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "write-service-account-key" {
		os.Exit(writeKey(os.Args[2]))
	}
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}

func writeKey(path string) int {
	key, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err == nil {
		err = keyutil.WriteKey(path, key)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "write-service-account-key: %v\n", err)
		return 1
	}
	return 0
}
