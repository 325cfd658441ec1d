package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// A kubeconfig path that names no file is said as such, not as the localhost:8080 client-go falls
// back to.
func TestMissingKubeconfigIsNamed(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "config")
	if err := os.WriteFile(existing, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"+
		"contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: x}}]\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope")
	cases := []struct {
		name, env, flag, want string
	}{
		{name: "env", env: missing, want: "$KUBECONFIG names " + missing + ", and no such file exists"},
		{name: "flag", flag: missing, want: "the kubeconfig file " + missing + " (--kubeconfig) cannot be read"},
		{name: "one of the env's files exists", env: missing + string(filepath.ListSeparator) + existing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			flags := genericclioptions.NewConfigFlags(true)
			if c.flag != "" {
				flags.KubeConfig = &c.flag
			}
			s := New(Config{Kubeconfig: flags, Getenv: func(k string) string {
				if k == "KUBECONFIG" {
					return c.env
				}
				return ""
			}})
			err := s.(*live).kubeconfigExists()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused an existing file: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if c.want != "" {
				if _, err := s.Home(context.Background()); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Home: %v", err)
				}
			}
		})
	}
}
