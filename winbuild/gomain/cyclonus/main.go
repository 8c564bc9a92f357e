// Command cyclonus prints cyclonus's default generated NetworkPolicy cases, every step with the
// cluster as it stands after the step's actions and cyclonus's expected truth table, as one JSON
// document on stdout (the format of tests/netpol/README.md).
//
// It plays each case against cyclonus's in-memory mock cluster and asks cyclonus's own simulated
// runner (the engine `cyclonus generate` compares real probes with), so the tables are cyclonus's
// answer, not ours. Servers are TCP and UDP on ports 80 and 81 (`--server-protocol TCP,UDP`): the
// cases with SCTP policies probe every server, so they say what an SCTP policy does to TCP and UDP.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/mattfenwick/cyclonus/pkg/cli"
	"github.com/mattfenwick/cyclonus/pkg/connectivity"
	"github.com/mattfenwick/cyclonus/pkg/connectivity/probe"
	"github.com/mattfenwick/cyclonus/pkg/generator"
	"github.com/mattfenwick/cyclonus/pkg/kube"
	"github.com/mattfenwick/cyclonus/pkg/matcher"
	"github.com/sirupsen/logrus"
	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

const (
	oracle      = "cyclonus v0.5.6"
	nodeCount   = 3
	defaultNsLb = "kubernetes.io/metadata.name"
)

var (
	namespaces = []string{"x", "y", "z"}
	podNames   = []string{"a", "b", "c"}
	ports      = []int{80, 81}
	protocols  = []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP}
)

type probeRow struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	Port     *int    `json:"port"`
	PortName *string `json:"portName"`
	Protocol string  `json:"protocol"`
	Ingress  bool    `json:"ingress"`
	Egress   bool    `json:"egress"`
	Allowed  bool    `json:"allowed"`
}

type step struct {
	Namespaces []map[string]any `json:"namespaces"`
	Pods       []map[string]any `json:"pods"`
	Policies   []map[string]any `json:"policies"`
	Probes     []probeRow       `json:"probes"`
}

type testCase struct {
	Name  string   `json:"name"`
	Tags  []string `json:"tags"`
	Steps []step   `json:"steps"`
}

type document struct {
	Oracle string     `json:"oracle"`
	Cases  []testCase `json:"cases"`
}

// newCluster is a fresh mock cluster with cyclonus's default pods: every case starts from it, as
// `cyclonus generate` resets its cluster before each case.
func newCluster() (*kube.MockKubernetes, *probe.Resources, error) {
	mock := kube.NewMockKubernetes(1.0)
	resources, err := probe.NewDefaultResources(mock, namespaces, podNames, ports, protocols, nil, 60, false, "registry.k8s.io")
	return mock, resources, err
}

// defaulted is the policy as the API server stores it: policyTypes filled (Ingress, plus Egress
// when there are egress rules) and every port's protocol filled (TCP).
func defaulted(policy *networkingv1.NetworkPolicy) *networkingv1.NetworkPolicy {
	out := policy.DeepCopy()
	out.APIVersion, out.Kind = "networking.k8s.io/v1", "NetworkPolicy"
	if len(out.Spec.PolicyTypes) == 0 {
		out.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(out.Spec.Egress) > 0 {
			out.Spec.PolicyTypes = append(out.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
	tcp := v1.ProtocolTCP
	for i := range out.Spec.Ingress {
		for j := range out.Spec.Ingress[i].Ports {
			if out.Spec.Ingress[i].Ports[j].Protocol == nil {
				out.Spec.Ingress[i].Ports[j].Protocol = &tcp
			}
		}
	}
	for i := range out.Spec.Egress {
		for j := range out.Spec.Egress[i].Ports {
			if out.Spec.Egress[i].Ports[j].Protocol == nil {
				out.Spec.Egress[i].Ports[j].Protocol = &tcp
			}
		}
	}
	return out
}

// withDefaultLabel is what the API server keeps on every namespace whatever its labels are set to.
func withDefaultLabel(ns string, labels map[string]string) map[string]string {
	out := map[string]string{defaultNsLb: ns}
	for k, v := range labels {
		out[k] = v
	}
	return out
}

func apply(state *connectivity.TestCaseState, action *generator.Action) error {
	switch {
	case action.CreatePolicy != nil:
		return state.CreatePolicy(defaulted(action.CreatePolicy.Policy))
	case action.UpdatePolicy != nil:
		return state.UpdatePolicy(defaulted(action.UpdatePolicy.Policy))
	case action.DeletePolicy != nil:
		return state.DeletePolicy(action.DeletePolicy.Namespace, action.DeletePolicy.Name)
	case action.CreateNamespace != nil:
		ns := action.CreateNamespace.Namespace
		return state.CreateNamespace(ns, withDefaultLabel(ns, action.CreateNamespace.Labels))
	case action.SetNamespaceLabels != nil:
		ns := action.SetNamespaceLabels.Namespace
		return state.SetNamespaceLabels(ns, withDefaultLabel(ns, action.SetNamespaceLabels.Labels))
	case action.DeleteNamespace != nil:
		return state.DeleteNamespace(action.DeleteNamespace.Namespace)
	case action.CreatePod != nil:
		return state.CreatePod(action.CreatePod.Namespace, action.CreatePod.Pod, action.CreatePod.Labels)
	case action.SetPodLabels != nil:
		return state.SetPodLabels(action.SetPodLabels.Namespace, action.SetPodLabels.Pod, action.SetPodLabels.Labels)
	case action.DeletePod != nil:
		return state.DeletePod(action.DeletePod.Namespace, action.DeletePod.Pod)
	}
	return fmt.Errorf("unsupported action %+v", action)
}

func namespaceObjects(resources *probe.Resources) []map[string]any {
	var out []map[string]any
	for _, ns := range resources.NamespacesSlice() {
		out = append(out, map[string]any{
			"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": ns, "labels": withDefaultLabel(ns, resources.Namespaces[ns])},
		})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i]["metadata"].(map[string]any)["name"].(string) < out[j]["metadata"].(map[string]any)["name"].(string)
	})
	return out
}

// nodes spreads the pods over nodeCount nodes, each pod keeping its node for the whole run.
type nodes map[string]string

func (n nodes) of(pod string) string {
	if node, ok := n[pod]; ok {
		return node
	}
	n[pod] = fmt.Sprintf("node-%d", len(n)%nodeCount)
	return n[pod]
}

func podObjects(resources *probe.Resources, placed nodes) []map[string]any {
	var out []map[string]any
	for _, pod := range resources.Pods {
		var containers []map[string]any
		for _, c := range pod.Containers {
			containers = append(containers, map[string]any{
				"name":  c.Name,
				"ports": []map[string]any{{"name": c.PortName, "containerPort": c.Port, "protocol": string(c.Protocol)}},
			})
		}
		out = append(out, map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"namespace": pod.Namespace, "name": pod.Name, "labels": pod.Labels},
			"spec":     map[string]any{"nodeName": placed.of(pod.PodString().String()), "containers": containers},
			"status":   map[string]any{"podIP": pod.IP},
		})
	}
	return out
}

func policyObjects(policies []*networkingv1.NetworkPolicy) ([]map[string]any, error) {
	out := []map[string]any{}
	for _, policy := range policies {
		text, err := json.Marshal(policy)
		if err != nil {
			return nil, err
		}
		var object map[string]any
		if err := json.Unmarshal(text, &object); err != nil {
			return nil, err
		}
		delete(object["metadata"].(map[string]any), "creationTimestamp")
		out = append(out, object)
	}
	return out, nil
}

// checkedProbe refuses a probe of a protocol no server speaks: cyclonus resolves a numbered port
// whatever its protocol, so it would answer for a server that is not there.
func checkedProbe(config *generator.ProbeConfig) error {
	if config.PortProtocol != nil && !contains(protocols, config.PortProtocol.Protocol) {
		return fmt.Errorf("the probe asks %s, served: %v", config.PortProtocol.Protocol, protocols)
	}
	return nil
}

func probeRows(table *probe.Table) ([]probeRow, error) {
	var rows []probeRow
	for _, key := range table.Wrapped.Keys() {
		item := table.Get(key.From, key.To)
		var resultKeys []string
		for k := range item.JobResults {
			resultKeys = append(resultKeys, k)
		}
		sort.Strings(resultKeys)
		for _, k := range resultKeys {
			result := item.JobResults[k]
			job := result.Job
			row := probeRow{From: key.From, To: key.To, Protocol: string(job.Protocol)}
			if job.ResolvedPortName != "" {
				name := job.ResolvedPortName
				row.PortName = &name
			}
			switch result.Combined {
			case probe.ConnectivityAllowed, probe.ConnectivityBlocked:
				port := job.ResolvedPort
				row.Port = &port
				row.Ingress = *result.Ingress == probe.ConnectivityAllowed
				row.Egress = *result.Egress == probe.ConnectivityAllowed
				row.Allowed = result.Combined == probe.ConnectivityAllowed
			case probe.ConnectivityInvalidNamedPort:
				// no port of that name on the destination: nothing to reach, so blocked
			default:
				return nil, fmt.Errorf("probe %s -> %s %s: cyclonus answered %q", key.From, key.To, k, result.Combined)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

func runCase(tc *generator.TestCase, placed nodes) (testCase, error) {
	out := testCase{Name: tc.Description, Tags: tc.Tags.Keys()}
	mock, resources, err := newCluster()
	if err != nil {
		return out, err
	}
	state := &connectivity.TestCaseState{Kubernetes: mock, Resources: resources, Policies: []*networkingv1.NetworkPolicy{}}
	jobs := &probe.JobBuilder{TimeoutSeconds: 1}
	for i, s := range tc.Steps {
		for _, action := range s.Actions {
			if err := apply(state, action); err != nil {
				return out, fmt.Errorf("step %d: %w", i+1, err)
			}
		}
		if err := checkedProbe(s.Probe); err != nil {
			return out, fmt.Errorf("step %d: %w", i+1, err)
		}
		table := probe.NewSimulatedRunner(matcher.BuildNetworkPolicies(true, state.Policies), jobs).RunProbeForConfig(s.Probe, state.Resources)
		rows, err := probeRows(table)
		if err != nil {
			return out, fmt.Errorf("step %d: %w", i+1, err)
		}
		policies, err := policyObjects(state.Policies)
		if err != nil {
			return out, err
		}
		out.Steps = append(out.Steps, step{
			Namespaces: namespaceObjects(state.Resources),
			Pods:       podObjects(state.Resources, placed),
			Policies:   policies,
			Probes:     rows,
		})
	}
	sort.Strings(out.Tags)
	return out, nil
}

func contains[T comparable](items []T, item T) bool {
	for _, i := range items {
		if i == item {
			return true
		}
	}
	return false
}

func run() error {
	_, resources, err := newCluster()
	if err != nil {
		return err
	}
	zc, err := resources.GetPod("z", "c")
	if err != nil {
		return err
	}
	cases := generator.NewTestCaseGenerator(true, zc.IP, namespaces, nil, cli.DefaultExcludeTags).GenerateTestCases()
	doc := document{Oracle: oracle}
	placed := nodes{}
	for _, tc := range cases {
		out, err := runCase(tc, placed)
		if err != nil {
			return fmt.Errorf("case %q: %w", tc.Description, err)
		}
		doc.Cases = append(doc.Cases, out)
	}
	return json.NewEncoder(os.Stdout).Encode(doc)
}

func main() {
	logrus.SetOutput(os.Stderr)
	logrus.SetLevel(logrus.WarnLevel)
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "cyclonus: %v\n", err)
		os.Exit(1)
	}
}
