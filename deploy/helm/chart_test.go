package helm_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite ../kubernetes/ and claimcheck/files/alerts.yaml from their sources")

const (
	chartDir = "claimcheck"
	release  = "claimcheck"
	// alertsSource is the one source of the alert rules; the chart holds a
	// copy because a chart cannot read files outside its directory.
	alertsSource = "../prometheus/alerts.yaml"
	alertsCopy   = "claimcheck/files/alerts.yaml"
)

// kubeVersion is the oldest Kubernetes the chart supports (Chart.yaml's
// kubeVersion); the API types it is decoded against are newer, so a field
// the chart uses must exist in both.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.27.0", Major: "1", Minor: "27"}

// decoder decodes Kubernetes objects strictly: an unknown kind, an
// unknown field or a field given twice is an error. The scheme holds the
// built-in API types and the prometheus-operator's (ServiceMonitor,
// PrometheusRule).
var decoder = func() runtime.Decoder {
	sch := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(sch); err != nil {
		panic(err)
	}
	if err := monitoringv1.AddToScheme(sch); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(sch, serializer.EnableStrict).UniversalDeserializer()
}()

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func readValues(t *testing.T, path string) map[string]any {
	t.Helper()
	vals, err := chartutil.ReadValuesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// render runs what `helm template` runs (an install, dry run, client
// only) and returns the manifest.
func render(ch *chart.Chart, vals map[string]any) (string, error) {
	install := action.NewInstall(&action.Configuration{})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = release
	install.Namespace = "claimcheck"
	install.KubeVersion = kubeVersion
	install.APIVersions = []string{"monitoring.coreos.com/v1"}
	rel, err := install.Run(ch, vals)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// decodeAll decodes every object of a manifest strictly, in order.
func decodeAll(manifest string) ([]runtime.Object, error) {
	docs := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return manifestIndex(a) - manifestIndex(b) })
	var objs []runtime.Object
	for _, k := range keys {
		doc := docs[k]
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		obj, gvk, err := decoder.Decode([]byte(doc), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%v\n%s", err, doc)
		}
		if gvk.Kind == "Secret" {
			return nil, fmt.Errorf("a Secret is rendered; the chart must reference Secrets, never create them:\n%s", doc)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

var manifestKey = regexp.MustCompile(`^manifest-(\d+)$`)

func manifestIndex(k string) int {
	var n int
	if m := manifestKey.FindStringSubmatch(k); m != nil {
		_, _ = fmt.Sscan(m[1], &n)
	}
	return n
}

func stripComments(doc string) string {
	var b strings.Builder
	for line := range strings.Lines(doc) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func examples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "examples", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("values examples: %v %v", files, err)
	}
	return files
}

// TestLint is `helm lint` with each values example: the chart's
// structure, Chart.yaml, values and templates.
func TestLint(t *testing.T) {
	for _, file := range examples(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			l := lint.AllWithKubeVersion(chartDir, readValues(t, file), "claimcheck", kubeVersion)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Error(m)
				}
			}
		})
	}
}

// TestExamples renders the chart with each values example and decodes
// every object strictly, then checks what each deployment shape promises.
func TestExamples(t *testing.T) {
	ch := loadChart(t)
	for _, file := range examples(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			manifest, err := render(ch, readValues(t, file))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := decodeAll(manifest)
			if err != nil {
				t.Fatal(err)
			}
			checkObjects(t, filepath.Base(file), objs, true)
		})
	}
}

// of returns the objects of type T.
func of[T runtime.Object](objs []runtime.Object) []T {
	var out []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// checkObjects checks what a deployment shape promises; monitoring says
// whether the prometheus-operator's objects were asked for.
func checkObjects(t *testing.T, example string, objs []runtime.Object, monitoring bool) {
	deps := of[*appsv1.Deployment](objs)
	sets := of[*appsv1.StatefulSet](objs)
	var pod corev1.PodTemplateSpec
	switch example {
	case "embedded.yaml":
		// One replica, never two pods on one SQLite database: a
		// StatefulSet with a claim template mounted at the data directory.
		if len(deps) != 0 || len(sets) != 1 {
			t.Fatalf("embedded: %d Deployments, %d StatefulSets; want one StatefulSet", len(deps), len(sets))
		}
		s := sets[0]
		if s.Spec.Replicas == nil || *s.Spec.Replicas != 1 {
			t.Errorf("embedded: replicas %v, want 1", s.Spec.Replicas)
		}
		if len(s.Spec.VolumeClaimTemplates) != 1 || s.Spec.VolumeClaimTemplates[0].Name != "data" {
			t.Fatalf("embedded: volume claim templates %v, want one named data", s.Spec.VolumeClaimTemplates)
		}
		pod = s.Spec.Template
		if !mounted(pod, "data", "/var/lib/claimcheck/data") {
			t.Error("embedded: the claim is not mounted at /var/lib/claimcheck/data, where the image's embedded defaults keep their data")
		}
		if n := len(of[*policyv1.PodDisruptionBudget](objs)); n != 0 {
			t.Error("embedded: a PodDisruptionBudget on one pod would block every drain")
		}
	case "postgres-s3.yaml":
		if len(deps) != 1 || len(sets) != 0 {
			t.Fatalf("postgres-s3: %d Deployments, %d StatefulSets; want one Deployment", len(deps), len(sets))
		}
		d := deps[0]
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			t.Errorf("postgres-s3: replicas %v, want several", d.Spec.Replicas)
		}
		pod = d.Spec.Template
		if len(of[*policyv1.PodDisruptionBudget](objs)) != 1 {
			t.Error("postgres-s3: no PodDisruptionBudget")
		}
		secrets := map[string]bool{}
		for _, e := range pod.Spec.Containers[0].Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				secrets[e.Name] = true
			}
		}
		for _, v := range []string{"CLAIMCHECK_METADATA", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "CLAIMCHECK_MASTER_KEY"} {
			if !secrets[v] {
				t.Errorf("postgres-s3: %s is not read from a Secret", v)
			}
		}
		monitors, rules := of[*monitoringv1.ServiceMonitor](objs), of[*monitoringv1.PrometheusRule](objs)
		if !monitoring {
			if len(monitors)+len(rules) != 0 {
				t.Error("postgres-s3: prometheus-operator objects that were not asked for")
			}
			break
		}
		if len(monitors) != 1 {
			t.Error("postgres-s3: no ServiceMonitor")
		}
		if len(rules) != 1 {
			t.Fatal("postgres-s3: no PrometheusRule")
		}
		checkRules(t, rules[0])
	default:
		t.Fatalf("%s: an example this test does not know; add what it promises here", example)
	}
	if len(of[*corev1.Service](objs)) != 1 || len(of[*corev1.ConfigMap](objs)) != 1 {
		t.Fatal("want one Service and one ConfigMap")
	}
	checkPod(t, pod)
	checkExposure(t, example, objs)
}

// checkExposure checks what keeps the server's ports to who should reach
// them (ADR 0271): every example runs with auth on; /metrics is on the
// metrics port (the API port does not serve it with auth on), which the
// Service and a ServiceMonitor name; and a NetworkPolicy admits to that
// port only the peers networkPolicy.metricsFrom lists, never any source.
func checkExposure(t *testing.T, example string, objs []runtime.Object) {
	t.Helper()
	var cfg struct {
		Auth bool `json:"auth"`
	}
	if err := yaml.Unmarshal([]byte(of[*corev1.ConfigMap](objs)[0].Data["claimcheck.yaml"]), &cfg); err != nil || !cfg.Auth {
		t.Errorf("%s: the config does not turn auth on (%v)", example, err)
	}
	ports := map[string]int32{}
	for _, p := range of[*corev1.Service](objs)[0].Spec.Ports {
		ports[p.Name] = p.Port
	}
	if ports["http"] == 0 || ports["metrics"] != 9090 {
		t.Errorf("%s: Service ports %v, want http and metrics 9090", example, ports)
	}
	for _, m := range of[*monitoringv1.ServiceMonitor](objs) {
		if len(m.Spec.Endpoints) != 1 || m.Spec.Endpoints[0].Port != "metrics" {
			t.Errorf("%s: the ServiceMonitor scrapes %+v, want the metrics port", example, m.Spec.Endpoints)
		}
	}
	policies := of[*networkingv1.NetworkPolicy](objs)
	if len(policies) != 1 {
		t.Fatalf("%s: %d NetworkPolicies, want one", example, len(policies))
	}
	np := policies[0].Spec
	if !slices.Equal(np.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.PodSelector.MatchLabels) == 0 {
		t.Errorf("%s: NetworkPolicy %+v, want ingress rules on the chart's pods", example, np)
	}
	admitted := map[string]bool{}
	for _, rule := range np.Ingress {
		for _, p := range rule.Ports {
			if p.Port == nil {
				t.Errorf("%s: a NetworkPolicy rule admits every port", example)
				continue
			}
			admitted[p.Port.String()] = true
			if p.Port.String() == "metrics" && len(rule.From) == 0 {
				t.Errorf("%s: the NetworkPolicy admits any source to the metrics port", example)
			}
		}
	}
	if len(admitted) != 2 || !admitted["http"] || !admitted["metrics"] {
		t.Errorf("%s: the NetworkPolicy admits ports %v, want http and metrics", example, admitted)
	}
}

func mounted(pod corev1.PodTemplateSpec, volume, path string) bool {
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.Name == volume && m.MountPath == path {
			return true
		}
	}
	return false
}

// checkPod checks the probes and the hardening every pod gets.
func checkPod(t *testing.T, pod corev1.PodTemplateSpec) {
	t.Helper()
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe %+v, want GET %s on port http", name, p, path)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")
	if len(c.Ports) != 2 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 || c.Ports[1].Name != "metrics" || c.Ports[1].ContainerPort != 9090 {
		t.Errorf("ports %v, want http 8080 (the image's CLAIMCHECK_LISTEN) and metrics 9090", c.Ports)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "CLAIMCHECK_METRICS__LISTEN" && e.Value == ":9090" }) {
		t.Errorf("env %v: want CLAIMCHECK_METRICS__LISTEN=:9090 (metrics.listen)", c.Env)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %v: want cpu and memory requests and a memory limit", c.Resources)
	}
	ps, sc := pod.Spec.SecurityContext, c.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 {
		t.Errorf("pod security context %+v: want runAsNonRoot and a non-zero runAsUser", ps)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container security context %+v: want a read-only root, no privilege escalation, all capabilities dropped", sc)
	}
	if !mounted(pod, "config", "/etc/claimcheck") || !slices.Contains(c.Args, "/etc/claimcheck/claimcheck.yaml") {
		t.Errorf("the ConfigMap is not mounted and passed as the config (args %v)", c.Args)
	}
}

// checkRules checks that the PrometheusRule holds exactly the rules of
// deploy/prometheus/alerts.yaml, decoded as the operator would.
func checkRules(t *testing.T, rule *monitoringv1.PrometheusRule) {
	t.Helper()
	src, err := os.ReadFile(alertsSource)
	if err != nil {
		t.Fatal(err)
	}
	var want monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(src, &want); err != nil {
		t.Fatalf("%s as a PrometheusRule spec: %v", alertsSource, err)
	}
	if len(want.Groups) == 0 || !reflect.DeepEqual(rule.Spec, want) {
		t.Errorf("the PrometheusRule's groups differ from %s", alertsSource)
	}
}

// TestAlertRulesCopy keeps the chart's copy of the alert rules equal to
// deploy/prometheus/alerts.yaml, the one source; -update copies it.
func TestAlertRulesCopy(t *testing.T) {
	src, err := os.ReadFile(alertsSource)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(alertsCopy, src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := os.ReadFile(alertsCopy)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(src, cp) {
		t.Errorf("%s differs from %s: run `GOWORK=off go test ./... -update` in deploy/helm", alertsCopy, alertsSource)
	}
}

// TestRefusals checks that values that cannot work fail the render with
// a message naming what to set, instead of deploying pods that crash.
func TestRefusals(t *testing.T) {
	ch := loadChart(t)
	cases := []struct {
		name string
		vals string
		want string
	}{
		{"defaults", ``, "secretEnv.CLAIMCHECK_METADATA"},
		{"no storage", `secretEnv: {CLAIMCHECK_METADATA: {name: s, key: k}}`, "config.storage"},
		{"embedded replicas", `{embedded: {enabled: true}, replicaCount: 3}`, "replicaCount: 3 with embedded.enabled"},
		{"secret without key", `{config: {storage: "mem://"}, secretEnv: {CLAIMCHECK_METADATA: {name: s}}}`, "secretEnv.CLAIMCHECK_METADATA.key"},
		{"metrics open to any source", `{embedded: {enabled: true}, replicaCount: 1, networkPolicy: {metricsFrom: []}}`, "networkPolicy.metricsFrom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vals, err := chartutil.ReadValues([]byte(c.vals))
			if err != nil {
				t.Fatal(err)
			}
			_, err = render(ch, vals)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("render: %v, want an error naming %q", err, c.want)
			}
		})
	}
}

// TestStrictDecoding makes sure the decoder the other tests rely on
// refuses a misspelt field, so that their passing means something.
func TestStrictDecoding(t *testing.T) {
	doc := "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {prots: [{port: 80}]}\n"
	if _, err := decodeAll(doc); err == nil || !strings.Contains(err.Error(), "prots") {
		t.Errorf("decoding a Service with spec.prots: %v, want an unknown-field error", err)
	}
	if _, err := decodeAll("apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n"); err == nil {
		t.Error("a rendered Secret was accepted")
	}
}

// plain are the manifests in ../kubernetes/, each the chart rendered with
// a values example, minus what only Helm-managed objects carry.
var plain = []struct{ file, example string }{
	{"postgres-s3.yaml", "postgres-s3.yaml"},
	{"embedded.yaml", "embedded.yaml"},
}

// plainOverrides leave out the prometheus-operator's objects (a cluster
// without its CRDs would refuse the whole file) and use the image name
// scripts/image.sh builds.
const plainOverrides = `{metrics: {serviceMonitor: {enabled: false}, prometheusRule: {enabled: false}}, image: {repository: claimcheck}}`

var helmOnly = regexp.MustCompile(`(?m)^\s*(helm\.sh/chart|app\.kubernetes\.io/managed-by): .*\n`)

func plainHeader(example string, secrets bool) string {
	h := "# claimcheck for `kubectl apply -n NAMESPACE -f`: deploy/helm/claimcheck rendered\n" +
		"# with examples/" + example + " (no ServiceMonitor or PrometheusRule), by\n" +
		"# `GOWORK=off go test ./... -update` in deploy/helm; do not edit by hand.\n" +
		"# Set the image to the one you pushed"
	if secrets {
		return h + ", and create the Secret it reads\n# first (docs/OPERATIONS.md, \"Running in production\").\n"
	}
	return h + ".\n"
}

// TestPlainManifests checks that ../kubernetes/ is the chart's current
// rendering (-update rewrites it) and decodes it strictly.
func TestPlainManifests(t *testing.T) {
	ch := loadChart(t)
	for _, p := range plain {
		t.Run(p.file, func(t *testing.T) {
			// CoalesceTables merges into its first argument: a fresh copy each time.
			over, err := chartutil.ReadValues([]byte(plainOverrides))
			if err != nil {
				t.Fatal(err)
			}
			vals := readValues(t, filepath.Join(chartDir, "examples", p.example))
			vals = chartutil.CoalesceTables(over.AsMap(), vals)
			manifest, err := render(ch, vals)
			if err != nil {
				t.Fatal(err)
			}
			want := plainHeader(p.example, strings.Contains(manifest, "secretKeyRef:")) + helmOnly.ReplaceAllString(manifest, "")
			path := filepath.Join("..", "kubernetes", p.file)
			if *update {
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want {
				t.Errorf("%s is not the chart's rendering: run `GOWORK=off go test ./... -update` in deploy/helm", path)
			}
			objs, err := decodeAll(string(got))
			if err != nil {
				t.Fatal(err)
			}
			checkObjects(t, p.example, objs, false)
		})
	}
}
