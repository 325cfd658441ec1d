package watch

import (
	"net/http"
	"strings"

	"github.com/unprune/unprune/internal/watch/exposition"
)

// countingTransport counts every request the watch sends by method, resource and status code. The
// ServiceAccount's RBAC is what stops writes; the count is how an operator (and the lab test) sees
// that the watch never even tried one beyond Events and its Lease.
type countingTransport struct {
	next    http.RoundTripper
	metrics *exposition.Metrics
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	method := req.Method
	if method == http.MethodGet && req.URL.Query().Get("watch") == "true" {
		method = "WATCH"
	}
	t.metrics.Request(method, resourceOf(req.URL.Path), code)
	return resp, err
}

// resourceOf names the API resource of a request path — /api/v1/namespaces/x/events/y → events,
// /apis/coordination.k8s.io/v1/namespaces/x/leases/y → leases.coordination.k8s.io — so the label
// has as many values as there are kinds, never one per object. Other paths (discovery, /version)
// are "discovery".
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, rest = parts[1], parts[3:]
	default:
		return "discovery"
	}
	if len(rest) >= 2 && rest[0] == "namespaces" {
		if len(rest) == 2 {
			rest = []string{"namespaces"}
		} else {
			rest = rest[2:]
		}
	}
	if len(rest) == 0 {
		return "discovery"
	}
	res := rest[0]
	if len(rest) >= 3 {
		res += "/" + rest[2] // a subresource
	}
	if group != "" {
		res += "." + group
	}
	return res
}
