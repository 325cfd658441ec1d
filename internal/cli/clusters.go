package cli

import (
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/printer"
)

// clustersFile maps destination clusters to kubeconfig contexts, for installations with many:
//
//	apiVersion: unprune.dev/v1alpha2
//	kind: ClusterContexts
//	clusters:
//	- name: prod-eu                  # Argo CD's cluster name, or
//	  server: https://10.0.0.1:6443  # its server URL
//	  context: prod-eu-admin         # the context of your kubeconfig that reaches it
type clustersFile struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Clusters   []struct {
		Name    string `json:"name"`
		Server  string `json:"server"`
		Context string `json:"context"`
	} `json:"clusters"`
}

func readClustersFile(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f clustersFile
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.APIVersion != printer.APIVersion || f.Kind != "ClusterContexts" {
		return nil, fmt.Errorf("%s: want apiVersion %s and kind ClusterContexts", path, printer.APIVersion)
	}
	out := map[string]string{}
	for i, c := range f.Clusters {
		switch {
		case c.Context == "":
			return nil, fmt.Errorf("%s: clusters[%d] has no context", path, i)
		case c.Name == "" && c.Server == "":
			return nil, fmt.Errorf("%s: clusters[%d] names no cluster (name or server)", path, i)
		}
		for _, k := range []string{c.Name, c.Server} {
			if k != "" {
				out[k] = c.Context
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": no clusters")
	}
	return out, nil
}
