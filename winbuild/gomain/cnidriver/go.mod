module wincni.local/gomain/cnidriver

go 1.24

require github.com/containernetworking/cni v1.3.0
