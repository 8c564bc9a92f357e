// Command cnidriver runs one CNI command through libcni as containerd's go-cni does: the first
// network config of a conf dir by name, a plugin path list, a libcni cache dir. It lets the tests
// drive our plugins with a runtime that is not ours.
//
//	cnidriver -confdir D -path D[;D] -cachedir D [-id ID -netns NS -ifname IF -args K=V;K=V] [-valid ID/IF,...] add|check|del|gc|status
//
// Stdout holds the result JSON (add) or nothing; on failure it holds the CNI error JSON (code 0
// when the error is not the plugin's) and the exit status is 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
)

func main() {
	confDir := flag.String("confdir", "", "folder holding the network config (first .conflist/.conf/.json by name)")
	path := flag.String("path", "", "plugin folders, separated as PATH is")
	cacheDir := flag.String("cachedir", "", "libcni's cache folder")
	rt := libcni.RuntimeConf{}
	flag.StringVar(&rt.ContainerID, "id", "", "container ID")
	flag.StringVar(&rt.NetNS, "netns", "", "network namespace")
	flag.StringVar(&rt.IfName, "ifname", "eth0", "interface name")
	args := flag.String("args", "", "CNI_ARGS, K=V;K=V")
	valid := flag.String("valid", "", "GC's valid attachments, ID/IFNAME,...")
	flag.Parse()
	if flag.NArg() != 1 {
		fail(fmt.Errorf("one command expected (add, check, del, gc, status), got %q", flag.Args()))
	}
	for _, kv := range strings.Split(*args, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			rt.Args = append(rt.Args, [2]string{k, v})
		}
	}
	list, err := loadFirst(*confDir)
	if err != nil {
		fail(err)
	}
	cni := libcni.NewCNIConfigWithCacheDir(filepath.SplitList(*path), *cacheDir, nil)
	ctx := context.Background() // go-cni's STATUS has no deadline either
	switch flag.Arg(0) {
	case "add":
		var result types.Result
		if result, err = cni.AddNetworkList(ctx, list, &rt); err == nil {
			err = result.Print()
		}
	case "check":
		err = cni.CheckNetworkList(ctx, list, &rt)
	case "del":
		err = cni.DelNetworkList(ctx, list, &rt)
	case "gc":
		err = cni.GCNetworkList(ctx, list, &libcni.GCArgs{ValidAttachments: attachments(*valid)})
	case "status":
		err = cni.GetStatusNetworkList(ctx, list)
	default:
		err = fmt.Errorf("unknown command %q: add, check, del, gc or status", flag.Arg(0))
	}
	if err != nil {
		fail(err)
	}
}

// loadFirst reads the config containerd would use: the first file by name.
func loadFirst(dir string) (*libcni.NetworkConfigList, error) {
	files, err := libcni.ConfFiles(dir, []string{".conf", ".conflist", ".json"})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no network config in %s", dir)
	}
	if filepath.Ext(files[0]) == ".conflist" {
		return libcni.ConfListFromFile(files[0])
	}
	conf, err := libcni.ConfFromFile(files[0])
	if err != nil {
		return nil, err
	}
	return libcni.ConfListFromConf(conf)
}

func attachments(valid string) []types.GCAttachment {
	out := []types.GCAttachment{}
	for _, a := range strings.Split(valid, ",") {
		if id, ifname, ok := strings.Cut(a, "/"); ok {
			out = append(out, types.GCAttachment{ContainerID: id, IfName: ifname})
		}
	}
	return out
}

// fail prints the error as CNI error JSON on stdout, keeping the plugin's code.
func fail(err error) {
	cniErr := &types.Error{Msg: err.Error()}
	var plugin *types.Error
	if errors.As(err, &plugin) {
		cniErr = &types.Error{Code: plugin.Code, Msg: plugin.Msg, Details: plugin.Details}
	}
	out, _ := json.Marshal(cniErr)
	fmt.Println(string(out))
	os.Exit(1)
}
