// Command etcd is etcd's server, built from its published module: the Windows lane's flanneld
// reads its network config and leases from it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
