// Command knp answers single-packet NetworkPolicy questions with kube-network-policies v1.1.1's
// evaluator (networkpolicy.EvaluatePolicyDirection), the judge tests/netpol holds our model to.
//
// Stdin is a stream of JSON questions, {"namespaces", "pods", "policies", "packets"} (the format of
// tests/netpol/README.md); each is answered by one line on stdout, {"verdicts": [...]}, one verdict
// per packet, so one process answers many clusters. A question it cannot answer ends it with the
// reason on stderr and exit status 1.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/kube-network-policies/pkg/api"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

type packet struct {
	SrcIP    string `json:"srcIP"`
	DstIP    string `json:"dstIP"`
	DstPort  int    `json:"dstPort"`
	Protocol string `json:"protocol"`
}

type question struct {
	Namespaces []v1.Namespace               `json:"namespaces"`
	Pods       []v1.Pod                     `json:"pods"`
	Policies   []networkingv1.NetworkPolicy `json:"policies"`
	Packets    []packet                     `json:"packets"`
}

type verdict struct {
	Ingress bool `json:"ingress"`
	Egress  bool `json:"egress"`
	Allowed bool `json:"allowed"`
}

type answer struct {
	Verdicts []verdict `json:"verdicts"`
}

// cluster is a question's pods by address, with the policies that select each of them.
type cluster struct {
	byIP     map[string]*api.PodInfo
	policies []*networkingv1.NetworkPolicy
}

// checkDefaulted refuses what the API server never returns: the evaluator skips a policy with no
// policyTypes, dereferences every port's protocol, and reads an empty rule list as allowing all
// (the API server returns none: an empty list is not stored, and means isolation).
func checkDefaulted(policy *networkingv1.NetworkPolicy) error {
	name := policy.Namespace + "/" + policy.Name
	if len(policy.Spec.PolicyTypes) == 0 {
		return fmt.Errorf("policy %s: spec.policyTypes is empty (give it as the API server returns it)", name)
	}
	if policy.Spec.Ingress != nil && len(policy.Spec.Ingress) == 0 || policy.Spec.Egress != nil && len(policy.Spec.Egress) == 0 {
		return fmt.Errorf("policy %s: an empty spec.ingress or spec.egress list (the API server returns none: leave it out)", name)
	}
	var ports []networkingv1.NetworkPolicyPort
	for _, rule := range policy.Spec.Ingress {
		ports = append(ports, rule.Ports...)
	}
	for _, rule := range policy.Spec.Egress {
		ports = append(ports, rule.Ports...)
	}
	for _, port := range ports {
		if port.Protocol == nil {
			return fmt.Errorf("policy %s: a port has no protocol (give it as the API server returns it)", name)
		}
	}
	return nil
}

func newCluster(q *question) (*cluster, error) {
	nsLabels := map[string]map[string]string{}
	for _, ns := range q.Namespaces {
		nsLabels[ns.Name] = ns.Labels
	}
	c := &cluster{byIP: map[string]*api.PodInfo{}}
	for i := range q.Pods {
		pod := &q.Pods[i]
		labels, ok := nsLabels[pod.Namespace]
		if !ok {
			return nil, fmt.Errorf("pod %s/%s: no namespace %q", pod.Namespace, pod.Name, pod.Namespace)
		}
		ip := net.ParseIP(pod.Status.PodIP)
		if ip == nil {
			return nil, fmt.Errorf("pod %s/%s: status.podIP %q is not an address", pod.Namespace, pod.Name, pod.Status.PodIP)
		}
		if _, taken := c.byIP[ip.String()]; taken {
			return nil, fmt.Errorf("pod %s/%s: address %s is another pod's too", pod.Namespace, pod.Name, ip)
		}
		c.byIP[ip.String()] = api.NewPodInfo(pod, labels, nil, "")
	}
	for i := range q.Policies {
		if err := checkDefaulted(&q.Policies[i]); err != nil {
			return nil, err
		}
		c.policies = append(c.policies, &q.Policies[i])
	}
	return c, nil
}

// selecting is the policies that select the pod: its namespace's, whose podSelector matches it
// (what the evaluator's own unexported getNetworkPoliciesForPod does from its listers).
func (c *cluster) selecting(pod *api.PodInfo) []*networkingv1.NetworkPolicy {
	var out []*networkingv1.NetworkPolicy
	if pod == nil {
		return out
	}
	for _, policy := range c.policies {
		if policy.Namespace == pod.Namespace.Name && networkpolicy.MatchesSelector(&policy.Spec.PodSelector, pod.Labels) {
			out = append(out, policy)
		}
	}
	return out
}

// judge asks the evaluator as its own packet path does: egress of the source pod, ingress of the
// destination pod, each with the other side as the peer. Source ports are not asked (policy has
// none); 0 stands for them.
func (c *cluster) judge(ctx context.Context, p packet) (verdict, error) {
	src, dst := net.ParseIP(p.SrcIP), net.ParseIP(p.DstIP)
	if src == nil || dst == nil {
		return verdict{}, fmt.Errorf("packet %+v: srcIP and dstIP must be addresses", p)
	}
	proto := v1.Protocol(p.Protocol)
	if proto != v1.ProtocolTCP && proto != v1.ProtocolUDP && proto != v1.ProtocolSCTP {
		return verdict{}, fmt.Errorf("packet %+v: protocol must be TCP, UDP or SCTP", p)
	}
	if p.DstPort < 1 || p.DstPort > 65535 {
		return verdict{}, fmt.Errorf("packet %+v: dstPort must be 1-65535", p)
	}
	srcPod, dstPod := c.byIP[src.String()], c.byIP[dst.String()]
	egress := networkpolicy.EvaluatePolicyDirection(ctx, c.selecting(srcPod), networkingv1.PolicyTypeEgress, srcPod, 0, dstPod, dst, p.DstPort, proto)
	ingress := networkpolicy.EvaluatePolicyDirection(ctx, c.selecting(dstPod), networkingv1.PolicyTypeIngress, dstPod, p.DstPort, srcPod, src, 0, proto)
	return verdict{Ingress: ingress, Egress: egress, Allowed: ingress && egress}, nil
}

func answerOne(ctx context.Context, q *question) (answer, error) {
	c, err := newCluster(q)
	if err != nil {
		return answer{}, err
	}
	out := answer{Verdicts: []verdict{}}
	for _, p := range q.Packets {
		v, err := c.judge(ctx, p)
		if err != nil {
			return answer{}, err
		}
		out.Verdicts = append(out.Verdicts, v)
	}
	return out, nil
}

func run(in io.Reader, out io.Writer) error {
	ctx := context.Background()
	decoder := json.NewDecoder(bufio.NewReader(in))
	decoder.DisallowUnknownFields()
	writer := bufio.NewWriter(out)
	encoder := json.NewEncoder(writer)
	for n := 1; ; n++ {
		var q question
		if err := decoder.Decode(&q); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("question %d is not the JSON asked for: %w", n, err)
		}
		a, err := answerOne(ctx, &q)
		if err != nil {
			return fmt.Errorf("question %d: %w", n, err)
		}
		if err := encoder.Encode(a); err != nil {
			return err
		}
		if err := writer.Flush(); err != nil {
			return err
		}
	}
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "knp: %v\n", err)
		os.Exit(1)
	}
}
