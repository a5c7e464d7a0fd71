package check

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
)

// dir is deploy/kubernetes, where the manifests are.
const dir = ".."

// decoder decodes YAML or JSON into the API types of the kinds the
// manifests may hold, strictly: an unknown or repeated field is an error,
// as is a kind it does not know.
var decoder = func() kruntime.Decoder {
	scheme := kruntime.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// decodeAll decodes every YAML document of b that holds more than
// comments.
func decodeAll(b []byte) ([]kruntime.Object, error) {
	var objs []kruntime.Object
	r := yamlutil.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if onlyComments(doc) {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		objs = append(objs, obj)
	}
}

func onlyComments(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		if line = strings.TrimSpace(line); line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

// manifests decodes the objects of the manifest files, by file name.
func manifests(t *testing.T) map[string][]kruntime.Object {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml*"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]kruntime.Object{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeAll(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = objs
	}
	return out
}

func TestManifestsDecodeStrictly(t *testing.T) {
	got := map[string][]string{}
	for file, objs := range manifests(t) {
		for _, o := range objs {
			gvk := o.GetObjectKind().GroupVersionKind()
			got[file] = append(got[file], gvk.Kind)
		}
	}
	want := map[string][]string{
		"pastenode.yaml":      {"Service", "Service", "StatefulSet", "PodDisruptionBudget"},
		"secret.yaml.example": {"Secret"},
	}
	for file, kinds := range want {
		if !slices.Equal(got[file], kinds) {
			t.Errorf("%s holds %v, want %v", file, got[file], kinds)
		}
	}
	for file := range got {
		if _, ok := want[file]; !ok {
			t.Errorf("%s: a manifest this test does not know; add what it must hold", file)
		}
	}
}

// The decoder is strict: a misspelt field, a repeated one, a wrong type
// or an unknown kind fails instead of being dropped.
func TestDecoderIsStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":  "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {clusterIp: None}\n",
		"repeated field": "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {type: ClusterIP, type: NodePort}\n",
		"wrong type":     "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec: {replicas: three}\n",
		"unknown kind":   "apiVersion: v1\nkind: Servise\nmetadata: {name: x}\n",
	} {
		if _, err := decodeAll([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
	if objs, err := decodeAll([]byte("# only a comment\n---\napiVersion: v1\nkind: Service\nmetadata: {name: x}\n")); err != nil || len(objs) != 1 {
		t.Errorf("a comment and a Service: %d objects, %v; want the Service", len(objs), err)
	}
}

// cluster is the objects of pastenode.yaml and the example Secret.
type cluster struct {
	peers, clients *corev1.Service
	sts            *appsv1.StatefulSet
	pdb            *policyv1.PodDisruptionBudget
	secret         *corev1.Secret
}

func loadCluster(t *testing.T) cluster {
	t.Helper()
	var c cluster
	for _, objs := range manifests(t) {
		for _, o := range objs {
			switch o := o.(type) {
			case *corev1.Service:
				if o.Spec.ClusterIP == corev1.ClusterIPNone {
					c.peers = o
				} else {
					c.clients = o
				}
			case *appsv1.StatefulSet:
				c.sts = o
			case *policyv1.PodDisruptionBudget:
				c.pdb = o
			case *corev1.Secret:
				c.secret = o
			}
		}
	}
	if c.peers == nil || c.clients == nil || c.sts == nil || c.pdb == nil || c.secret == nil {
		t.Fatalf("want a headless Service, a client Service, a StatefulSet, a PodDisruptionBudget and a Secret; got %+v", c)
	}
	return c
}

// env returns the container's environment by name.
func env(ctr corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range ctr.Env {
		m[e.Name] = e
	}
	return m
}

func TestClusterFitsTogether(t *testing.T) {
	c := loadCluster(t)
	sts := c.sts.Spec
	pod := labels.Set(sts.Template.Labels)

	// Three voters, started together, named through the headless Service,
	// which publishes them before they are ready.
	if sts.Replicas == nil || *sts.Replicas != 3 {
		t.Errorf("replicas: %v, want 3", sts.Replicas)
	}
	if sts.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: the pods must start together to bootstrap", sts.PodManagementPolicy)
	}
	if sts.ServiceName != c.peers.Name || !c.peers.Spec.PublishNotReadyAddresses {
		t.Errorf("serviceName %q: want the headless Service %q, publishing pods before they are ready", sts.ServiceName, c.peers.Name)
	}
	sel, err := metav1.LabelSelectorAsSelector(sts.Selector)
	if err != nil || !sel.Matches(pod) {
		t.Errorf("the StatefulSet's selector %v does not select its pods %v (%v)", sts.Selector, pod, err)
	}
	for _, svc := range []*corev1.Service{c.peers, c.clients} {
		if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(pod) {
			t.Errorf("Service %s selects %v, not the pods %v", svc.Name, svc.Spec.Selector, pod)
		}
	}
	pdbSel, err := metav1.LabelSelectorAsSelector(c.pdb.Spec.Selector)
	if err != nil || !pdbSel.Matches(pod) {
		t.Errorf("the PodDisruptionBudget selects %v, not the pods", c.pdb.Spec.Selector)
	}
	if mu := c.pdb.Spec.MaxUnavailable; mu == nil || *mu != intstr.FromInt32(1) || c.pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget: maxUnavailable %v, minAvailable %v; want maxUnavailable 1 alone", mu, c.pdb.Spec.MinAvailable)
	}

	if len(sts.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(sts.Template.Spec.Containers))
	}
	ctr := sts.Template.Spec.Containers[0]
	ports := map[string]corev1.ContainerPort{}
	for _, p := range ctr.Ports {
		ports[p.Name] = p
	}
	for _, svc := range []*corev1.Service{c.peers, c.clients} {
		for _, sp := range svc.Spec.Ports {
			cp, ok := ports[sp.TargetPort.StrVal]
			if !ok || protocol(cp.Protocol) != protocol(sp.Protocol) {
				t.Errorf("Service %s port %s: targetPort %q is no %s port of the container", svc.Name, sp.Name, sp.TargetPort.String(), protocol(sp.Protocol))
			}
		}
	}

	// Readiness on /readyz, liveness on /healthz, on the HTTP port.
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", ctr.ReadinessProbe, "/readyz"}, {"liveness", ctr.LivenessProbe, "/healthz"}, {"startup", ctr.StartupProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || ports[p.probe.HTTPGet.Port.StrVal].ContainerPort != 8080 {
			t.Errorf("%s probe %+v: want GET %s on the HTTP port", p.name, p.probe, p.path)
		}
	}

	// Resource requests, and the claim's volume as the data dir.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := ctr.Resources.Requests[r]; !ok || q.IsZero() {
			t.Errorf("no %s request", r)
		}
	}
	e := env(ctr)
	if len(c.sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("%d volumeClaimTemplates, want 1", len(c.sts.Spec.VolumeClaimTemplates))
	}
	claim := c.sts.Spec.VolumeClaimTemplates[0]
	mounted := false
	for _, m := range ctr.VolumeMounts {
		mounted = mounted || m.Name == claim.Name && m.MountPath == e["PASTE_DATA_DIR"].Value
	}
	if !mounted {
		t.Errorf("the claim %q is not mounted at PASTE_DATA_DIR %q", claim.Name, e["PASTE_DATA_DIR"].Value)
	}
	if _, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		t.Errorf("the claim %q asks for no storage", claim.Name)
	}

	// --join names each pod through the headless Service, on the gossip
	// port, and --bootstrap-expect waits for all of them.
	var want []string
	for i := range int(*sts.Replicas) {
		want = append(want, fmt.Sprintf("%s-%d.%s:%d", c.sts.Name, i, c.peers.Name, ports["gossip-tcp"].ContainerPort))
	}
	if got := strings.Split(e["PASTE_JOIN"].Value, ","); !slices.Equal(got, want) {
		t.Errorf("PASTE_JOIN %v, want %v", got, want)
	}
	if got := e["PASTE_BOOTSTRAP_EXPECT"].Value; got != strconv.Itoa(int(*sts.Replicas)) {
		t.Errorf("PASTE_BOOTSTRAP_EXPECT %q, want the replicas, %d", got, *sts.Replicas)
	}
	if f := e["PASTE_NODE_ID"].ValueFrom; f == nil || f.FieldRef == nil || f.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("PASTE_NODE_ID: want the pod's name, which the StatefulSet keeps")
	}
}

// The cluster key and the admin token come from the Secret, whose keys the
// example shows; no value in the repository is one.
func TestSecretsComeFromTheSecret(t *testing.T) {
	c := loadCluster(t)
	e := env(c.sts.Spec.Template.Spec.Containers[0])
	for _, name := range []string{"PASTE_CLUSTER_KEY", "PASTE_ADMIN_TOKEN"} {
		v, ok := e[name]
		if !ok || v.Value != "" || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil {
			t.Errorf("%s: want it from a secretKeyRef, got %+v", name, v)
			continue
		}
		ref := v.ValueFrom.SecretKeyRef
		if _, ok := c.secret.StringData[ref.Key]; ref.Name != c.secret.Name || !ok {
			t.Errorf("%s reads %s/%s, which the example Secret %s does not show", name, ref.Name, ref.Key, c.secret.Name)
		}
	}
	for k, v := range c.secret.StringData {
		if !strings.HasPrefix(v, "REPLACE") {
			t.Errorf("the example Secret's %s is %q: want a placeholder, never a value", k, v)
		}
	}
	if len(c.secret.Data) != 0 {
		t.Errorf("the example Secret has data %v: want placeholders in stringData only", c.secret.Data)
	}
}

// Every PASTE_ variable of the manifest is the twin of a flag of the
// pastenode binary built from this repository: a misspelt one would be
// ignored.
func TestEnvNamesAreFlags(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := filepath.Join(t.TempDir(), "pastenode")
	build := exec.Command(goTool, "build", "-o", bin, "./cmd/pastenode")
	build.Dir = filepath.Join(dir, "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build pastenode: %v\n%s", err, out)
	}
	help, _ := exec.Command(bin, "--help").CombinedOutput()
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+--?([a-z][a-z-]*)`).FindAllStringSubmatch(string(help), -1) {
		flags["PASTE_"+strings.ToUpper(strings.ReplaceAll(m[1], "-", "_"))] = true
	}
	if !flags["PASTE_NODE_ID"] || !flags["PASTE_JOIN"] {
		t.Fatalf("pastenode --help lists no flags this test can read:\n%s", help)
	}
	c := loadCluster(t)
	for _, e := range c.sts.Spec.Template.Spec.Containers[0].Env {
		if strings.HasPrefix(e.Name, "PASTE_") && !flags[e.Name] {
			t.Errorf("%s is the twin of no pastenode flag", e.Name)
		}
	}
}

func protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}
