// Command patchloop is the benchmarks' patch loop (package loop) as a process of its own: it starts,
// loads a kubeconfig and patches the tracking metadata of a set's ConfigMaps, as a script a user
// would write instead of unprune. BenchmarkDetachAtScale times it as it times unprune.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unprune/unprune/test/bench/loop"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig to reach the API server with")
	namespace := flag.String("namespace", "", "the namespace of the ConfigMaps")
	app := flag.String("app", "", "the app whose tracking metadata to put or take away")
	mode := flag.String("mode", "annotation", "annotation or label tracking")
	count := flag.Int("count", 0, "how many ConfigMaps: cm-00000 on")
	remove := flag.Bool("remove", false, "take the tracking metadata away instead of putting it")
	flag.Parse()
	if err := run(*kubeconfig, *namespace, *app, *mode, *count, *remove); err != nil {
		fmt.Fprintln(os.Stderr, "patchloop:", err)
		os.Exit(2)
	}
}

func run(kubeconfig, namespace, app, mode string, count int, remove bool) error {
	if kubeconfig == "" || namespace == "" || app == "" || count <= 0 {
		return fmt.Errorf("--kubeconfig, --namespace, --app and a positive --count are required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// No client-side rate limit: the loop measures what the API server can take.
	cfg.QPS, cfg.Burst = -1, 0
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return loop.Patch(context.Background(), dyn, namespace, loop.Names(count), func(name string) []byte {
		return loop.TrackingPatch(app, namespace, name, mode, remove)
	})
}
