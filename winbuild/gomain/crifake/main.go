// crifake: a CRI runtime service that answers ListPodSandbox from a JSON file, over the real
// k8s.io/cri-api protobufs and google.golang.org/grpc. The tests of wincni's own CRI client
// (tools/wincni/cri) talk to it: a real gRPC server, not a recording of one.
//
// The file is read at every call, so a test changes the runtime's pods by rewriting it:
//
//	{"pods": [{"id": "...", "name": "...", "uid": "...", "namespace": "...", "attempt": 0,
//	           "state": "SANDBOX_READY", "createdAt": 0, "labels": {}, "annotations": {}}],
//	 "error": "",        // non-empty: the call fails with gRPC code Unavailable and this message
//	 "delayMs": 0}       // answer only after this long (a hung runtime)
//
// Every other CRI method answers Unimplemented, as the embedded server type does.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type pod struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	UID         string            `json:"uid"`
	Namespace   string            `json:"namespace"`
	Attempt     uint32            `json:"attempt"`
	State       string            `json:"state"`
	CreatedAt   int64             `json:"createdAt"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type answer struct {
	Pods    []pod  `json:"pods"`
	Error   string `json:"error"`
	DelayMs int    `json:"delayMs"`
}

type server struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	file string
}

func (s *server) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	data, err := os.ReadFile(s.file)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reading %s: %v", s.file, err)
	}
	var a answer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, status.Errorf(codes.Internal, "parsing %s: %v", s.file, err)
	}
	if a.DelayMs > 0 {
		select {
		case <-time.After(time.Duration(a.DelayMs) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if a.Error != "" {
		return nil, status.Error(codes.Unavailable, a.Error)
	}
	resp := &runtimeapi.ListPodSandboxResponse{}
	for _, p := range a.Pods {
		state := runtimeapi.PodSandboxState_SANDBOX_READY
		if v, ok := runtimeapi.PodSandboxState_value[p.State]; ok {
			state = runtimeapi.PodSandboxState(v)
		}
		resp.Items = append(resp.Items, &runtimeapi.PodSandbox{
			Id:          p.ID,
			Metadata:    &runtimeapi.PodSandboxMetadata{Name: p.Name, Uid: p.UID, Namespace: p.Namespace, Attempt: p.Attempt},
			State:       state,
			CreatedAt:   p.CreatedAt,
			Labels:      p.Labels,
			Annotations: p.Annotations,
		})
	}
	return resp, nil
}

func main() {
	socket := flag.String("socket", "", "unix socket to listen on")
	pods := flag.String("pods", "", "the JSON file of pods")
	flag.Parse()
	if *socket == "" || *pods == "" {
		fmt.Fprintln(os.Stderr, "usage: crifake -socket PATH -pods FILE")
		os.Exit(2)
	}
	os.Remove(*socket)
	lis, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, &server{file: *pods})
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go func() { <-stop; srv.Stop() }()
	fmt.Println("listening", *socket)
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
