package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// documents parses the YAML documents of a manifest strictly, each into
// the next of vs.
func documents(t *testing.T, path string, vs ...any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1)
	if len(docs) != len(vs) {
		t.Fatalf("%s has %d documents, want %d", path, len(docs), len(vs))
	}
	for i, d := range docs {
		if err := yaml.UnmarshalStrict([]byte(d), vs[i]); err != nil {
			t.Fatalf("%s, document %d: %v", path, i+1, err)
		}
	}
}

// TestServiceManifests: the decision service's manifests parse into the
// Kubernetes API types, and fit together: 3 replicas of `dpbandit serve
// --replica` advertising their pod IP, with readiness and liveness probes
// on the service's health routes, the token file mounted from the Secret
// and the database URL from the other; a Service and a
// PodDisruptionBudget selecting the pods; PostgreSQL as a StatefulSet
// whose credentials match the URL. Every flag exists in the command.
func TestServiceManifests(t *testing.T) {
	const dir = "kubernetes/service/"
	var dep appsv1.Deployment
	var svc, pgSvc corev1.Service
	var pdb policyv1.PodDisruptionBudget
	var tokens, dbSecret corev1.Secret
	var pg appsv1.StatefulSet
	documents(t, dir+"deployment.yaml", &dep)
	documents(t, dir+"service.yaml", &svc)
	documents(t, dir+"pdb.yaml", &pdb)
	documents(t, dir+"secret.yaml", &tokens, &dbSecret)
	documents(t, dir+"postgres.yaml", &pg, &pgSvc)
	if dep.Kind != "Deployment" || dep.APIVersion != "apps/v1" || dep.Spec.Replicas == nil || *dep.Spec.Replicas != 3 {
		t.Fatalf("deployment.yaml: %s %s with %v replicas, want an apps/v1 Deployment of 3", dep.APIVersion, dep.Kind, dep.Spec.Replicas)
	}
	pod := dep.Spec.Template
	for k, v := range dep.Spec.Selector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("the Deployment's selector %s=%s does not match its pods", k, v)
		}
	}
	if ru := dep.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Error("the rolling update may take a replica down before its successor is ready (maxUnavailable != 0)")
	}
	c := pod.Spec.Containers[0]
	if c.Args[0] != "serve" || !slices.Contains(c.Args, "--replica") {
		t.Fatalf("args %v: want serve --replica", c.Args)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if flagValue(c.Args, "--advertise") != "http://$(POD_IP):8080" || env["POD_IP"].ValueFrom == nil || env["POD_IP"].ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("the replicas do not advertise their pod IP: %v", c.Args)
	}
	if port := c.Ports[0]; port.ContainerPort != 8080 || !strings.HasSuffix(flagValue(c.Args, "--addr"), ":8080") {
		t.Errorf("listening on %s, container port %d", flagValue(c.Args, "--addr"), port.ContainerPort)
	}
	for probe, path := range map[*corev1.Probe]string{c.ReadinessProbe: "/readyz", c.LivenessProbe: "/healthz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port != intstr.FromString(c.Ports[0].Name) {
			t.Errorf("no probe of %s on the service's port", path)
		}
	}
	// The token file comes from the tokens Secret, the URL from the other.
	tokenFile := flagValue(c.Args, "--token-file")
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == tokens.Name && strings.HasPrefix(tokenFile, m.MountPath+"/") {
				_, mounted = tokens.StringData[strings.TrimPrefix(tokenFile, m.MountPath+"/")]
			}
		}
	}
	if !mounted {
		t.Errorf("--token-file %s is not a key of Secret %s mounted in the pod", tokenFile, tokens.Name)
	}
	for _, line := range strings.Split(strings.TrimSpace(tokens.StringData["tokens"]), "\n") {
		if f := strings.Fields(line); len(f) != 3 || len(f[0]) < 16 {
			t.Errorf("token line %q: want TOKEN TENANT ROLE, a token of 16 characters or more", line)
		}
	}
	ref := env["DATABASE_URL"].ValueFrom
	if flagValue(c.Args, "--db") != "$(DATABASE_URL)" || ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != dbSecret.Name {
		t.Fatal("--db does not come from the database Secret")
	}
	url := dbSecret.StringData[ref.SecretKeyRef.Key]
	if !strings.HasPrefix(url, "postgres://") || !strings.Contains(url, "@"+pgSvc.Name+":5432/") || !strings.Contains(url, ":"+dbSecret.StringData["password"]+"@") {
		t.Errorf("the database URL %q does not reach Service %s with the StatefulSet's password", url, pgSvc.Name)
	}
	// The Service and the budget select the replicas.
	for name, sel := range map[string]map[string]string{"Service": svc.Spec.Selector, "PodDisruptionBudget": pdb.Spec.Selector.MatchLabels} {
		if len(sel) == 0 {
			t.Errorf("the %s selects nothing", name)
		}
		for k, v := range sel {
			if pod.Labels[k] != v {
				t.Errorf("the %s's selector %s=%s does not match the replicas", name, k, v)
			}
		}
	}
	if svc.Spec.Ports[0].TargetPort != intstr.FromString(c.Ports[0].Name) {
		t.Errorf("the Service targets %v", svc.Spec.Ports[0].TargetPort)
	}
	if m := pdb.Spec.MinAvailable; m == nil || m.IntValue() < 1 || m.IntValue() >= int(*dep.Spec.Replicas) {
		t.Errorf("the budget's minAvailable %v lets no replica go, or all", m)
	}
	// PostgreSQL: a StatefulSet with a volume, behind its Service.
	if pg.Kind != "StatefulSet" || len(pg.Spec.VolumeClaimTemplates) != 1 || pg.Spec.ServiceName != pgSvc.Name {
		t.Errorf("postgres.yaml: a %s with %d claim templates, service %q", pg.Kind, len(pg.Spec.VolumeClaimTemplates), pg.Spec.ServiceName)
	}
	for k, v := range pgSvc.Spec.Selector {
		if pg.Spec.Template.Labels[k] != v {
			t.Errorf("the PostgreSQL Service does not select its StatefulSet's pods")
		}
	}
	// Every flag exists in the command.
	out, _ := exec.Command(build(t), "serve", "-h").CombinedOutput()
	for _, a := range c.Args[1:] {
		if strings.HasPrefix(a, "--") && !regexp.MustCompile(`(?m)^\s+-`+strings.TrimPrefix(a, "--")+`(\s|$)`).Match(out) {
			t.Errorf("serve has no flag %s", a)
		}
	}
}
