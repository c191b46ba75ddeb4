// Package deploy holds the recipes that run dpbandit's sharded sweeps on
// batch schedulers (a Dockerfile, a Kubernetes Indexed Job and a Slurm job
// array) and the tests that check them. It is a module of its own, so
// that the Kubernetes API types it validates the manifests against stay
// out of the library's dependencies.
package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// load parses a manifest strictly (unknown fields are errors) into v.
func load(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// flagValue returns the value after flag in args.
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestKubernetesManifests: the shards parse into a batch/v1 Job with
// completionMode Indexed whose pods read their shard from the
// environment, with DPBANDIT_SHARDS equal to completions; the merge Job
// merges the shards' --out; both mount the shared claim, which is
// ReadWriteMany.
func TestKubernetesManifests(t *testing.T) {
	var shards, merge batchv1.Job
	var pvc corev1.PersistentVolumeClaim
	load(t, "kubernetes/shards.yaml", &shards)
	load(t, "kubernetes/merge.yaml", &merge)
	load(t, "kubernetes/results-pvc.yaml", &pvc)
	if shards.Kind != "Job" || shards.APIVersion != "batch/v1" {
		t.Fatalf("shards.yaml is a %s %s", shards.APIVersion, shards.Kind)
	}
	s := shards.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("completionMode %v, want Indexed", s.CompletionMode)
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions < 1 || *s.Parallelism != *s.Completions {
		t.Errorf("completions %v, parallelism %v", s.Completions, s.Parallelism)
	}
	c := s.Template.Spec.Containers[0]
	if flagValue(c.Args, "--shard") != "env" {
		t.Errorf("shard args %v: want --shard env", c.Args)
	}
	n := ""
	for _, e := range c.Env {
		if e.Name == "DPBANDIT_SHARDS" {
			n = e.Value
		}
	}
	if want := strconv.Itoa(int(*s.Completions)); n != want {
		t.Errorf("DPBANDIT_SHARDS=%q, completions %s", n, want)
	}
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q", s.Template.Spec.RestartPolicy)
	}
	m := merge.Spec.Template.Spec.Containers[0]
	if len(m.Args) < 2 || m.Args[0] != "merge" || m.Args[1] != flagValue(c.Args, "--out") {
		t.Errorf("merge args %v do not merge the shards' --out %q", m.Args, flagValue(c.Args, "--out"))
	}
	for _, j := range []batchv1.Job{shards, merge} {
		v := j.Spec.Template.Spec.Volumes
		if len(v) != 1 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != pvc.Name {
			t.Errorf("%s does not mount claim %s", j.Name, pvc.Name)
		}
	}
	if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("the results claim is %v, not ReadWriteMany", pvc.Spec.AccessModes)
	}
	// Every flag the manifests pass exists in the command's help.
	bin := build(t)
	for _, args := range [][]string{c.Args, m.Args} {
		out, _ := exec.Command(bin, args[0], "-h").CombinedOutput()
		for _, a := range args[1:] {
			if strings.HasPrefix(a, "--") && !regexp.MustCompile(`(?m)^\s+-`+strings.TrimPrefix(a, "--")+`(\s|$)`).Match(out) {
				t.Errorf("%s has no flag %s", args[0], a)
			}
		}
	}
}

// build builds the dpbandit command of the parent module.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dpbandit")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/dpbandit")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestSlurmArray runs the Slurm recipe as Slurm would, on a quick preset:
// the array's tasks (srun standing for itself) with their
// SLURM_ARRAY_TASK_* variables, then the merge; the merged summary equals
// an unsharded reproduction's (bar wall_seconds). The scripts also pass
// bash -n and submit.sh chains the merge with afterok.
func TestSlurmArray(t *testing.T) {
	for _, f := range []string{"slurm/shards.sbatch", "slurm/merge.sbatch", "slurm/submit.sh"} {
		if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", f, err, out)
		}
	}
	sub, _ := os.ReadFile("slurm/submit.sh")
	if !bytes.Contains(sub, []byte("--dependency=afterok:")) {
		t.Error("submit.sh does not queue the merge after the array")
	}
	sb, _ := os.ReadFile("slurm/shards.sbatch")
	m := regexp.MustCompile(`#SBATCH --array=(\d+)-(\d+)`).FindSubmatch(sb)
	if m == nil {
		t.Fatal("shards.sbatch declares no --array=LO-HI")
	}
	lo, _ := strconv.Atoi(string(m[1]))
	hi, _ := strconv.Atoi(string(m[2]))
	bin := build(t)
	dir := t.TempDir()
	// srun runs its command here.
	fake := filepath.Join(dir, "bin")
	os.MkdirAll(fake, 0o755)
	os.WriteFile(filepath.Join(fake, "srun"), []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755)
	results := filepath.Join(dir, "results")
	for id := lo; id <= hi; id++ {
		cmd := exec.Command("bash", "slurm/shards.sbatch")
		cmd.Env = append(os.Environ(), "PATH="+fake+":"+os.Getenv("PATH"), "DPBANDIT="+bin, "RESULTS="+results,
			"SCALE=quick", "PRESET=fig4-left", "SLURM_ARRAY_TASK_ID="+strconv.Itoa(id),
			"SLURM_ARRAY_TASK_MIN="+strconv.Itoa(lo), "SLURM_ARRAY_TASK_COUNT="+strconv.Itoa(hi-lo+1))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("task %d: %v\n%s", id, err, out)
		}
	}
	cmd := exec.Command("bash", "slurm/merge.sbatch")
	cmd.Env = append(os.Environ(), "DPBANDIT="+bin, "RESULTS="+results)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	full := filepath.Join(dir, "full")
	if out, err := exec.Command(bin, "reproduce", "--preset", "fig4-left", "--out", full, "--quiet").CombinedOutput(); err != nil {
		t.Fatalf("unsharded: %v\n%s", err, out)
	}
	wall := regexp.MustCompile(`(?m)^\s*"wall_seconds": .*\n`)
	a, _ := os.ReadFile(filepath.Join(full, "fig4-left", "summary.json"))
	b, _ := os.ReadFile(filepath.Join(results, "merged", "fig4-left", "summary.json"))
	if len(a) == 0 || !bytes.Equal(wall.ReplaceAll(a, nil), wall.ReplaceAll(b, nil)) {
		t.Errorf("the merged reproduction differs from the unsharded one")
	}
}
