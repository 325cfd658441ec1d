package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/session"
)

// Headers argocd-server sets (server/extension/extension.go) and the one its extension config adds.
const (
	HeaderApplication = "Argocd-Application-Name" // NAMESPACE:NAME, checked by argocd-server
	HeaderProject     = "Argocd-Project-Name"
	HeaderNamespace   = "Argocd-Namespace" // Argo CD's own namespace
	HeaderUsername    = "Argocd-Username"
	// HeaderUserID is the user's id (the token's subject), from v3.2.
	HeaderUserID = "Argocd-User-Id"
	HeaderGroups = "Argocd-User-Groups"
	// HeaderToken carries the shared secret argocd-server adds from `extension.config.unprune`
	// (a value of argocd-secret): the proof that a request passed argocd-server's checks.
	HeaderToken = "Unprune-Token"
	// HeaderVersion is the extension bundle's version, sent by the browser; answers carry the
	// backend's, so that the UI can say when they differ.
	HeaderVersion = "Unprune-Version"
)

// APIPrefix starts every path of the backend's API.
const APIPrefix = "/api/v1alpha1"

// Config is what the backend needs.
type Config struct {
	// Session reaches Argo CD and its destinations, read-only.
	Session session.Session
	// Journals returns the store of UI releases, recording who asked (as Argo CD names them).
	Journals func(requestedBy string) *journal.Store
	// JournalNamespace is the namespace of a ConfigMap store, when Journals is one: the backend
	// journals nothing when it turns out to be Argo CD's (the backend would need to be able to
	// write ConfigMaps there, argocd-cm and argocd-rbac-cm among them).
	JournalNamespace string
	// UndoCommand is the command line that undoes a journal with a kubeconfig, for the UI to show.
	UndoCommand func(journalID string) string
	// Token is what HeaderToken must hold; TokenFile, when set, holds it instead, and is read again
	// when it changes (a rotated Secret).
	Token     string
	TokenFile string
	// MaxJournals and MaxJournalsPerApp bound the journals a release or guard in the UI may add to
	// the store: at the bound it refuses (429) until an operator removes old ones. Zero means the
	// defaults, DefaultMaxJournals and DefaultMaxJournalsPerApp.
	MaxJournals, MaxJournalsPerApp int
	// RemoteDestinations: the session reaches clusters other than the one Argo CD runs in (the
	// backend was given Argo CD's cluster credentials, deploy/ui-extension/remote-clusters, or
	// kubeconfig contexts for them). Without it an app deploying elsewhere gets RemoteUnreadError's
	// plain answer instead of the command line's remedy.
	RemoteDestinations bool
	ToolVersion        string
	Now                func() time.Time
	Log                io.Writer
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "%s "+format+"\n", append([]any{c.now().UTC().Format(time.RFC3339)}, args...)...)
	}
}

// The bounds on journals, by default: a journal is a ConfigMap of a few kilobytes, so at most about
// 1000 × 10 KiB in etcd, and a flood of releases on one app (a viewer's are journaled too, as
// refused) stops at that app.
const (
	DefaultMaxJournals       = 1000
	DefaultMaxJournalsPerApp = 100
)

// Validate refuses a configuration that would serve without the proof of argocd-server's checks.
func (c Config) Validate() error {
	switch {
	case c.Session == nil:
		return errors.New("no session")
	case c.Journals == nil:
		return errors.New("no journal store")
	case strings.TrimSpace(c.Token) == "" && c.TokenFile == "":
		return errors.New("no token: argocd-server must send one (extension.config.unprune headers), and the backend must require it")
	case c.MaxJournals < 0 || c.MaxJournalsPerApp < 0:
		return errors.New("the bounds on journals must not be negative")
	}
	return nil
}

func (c Config) maxJournals() (total, perApp int) {
	total, perApp = c.MaxJournals, c.MaxJournalsPerApp
	if total == 0 {
		total = DefaultMaxJournals
	}
	if perApp == 0 {
		perApp = DefaultMaxJournalsPerApp
	}
	return total, perApp
}

// server serves the API.
type server struct {
	cfg   Config
	token *tokenSource
	// creating serializes counting the journals and creating one, so that the bounds hold against
	// concurrent requests (one replica: the Deployment runs one).
	creating sync.Mutex
}

// Handler is the backend's HTTP handler.
func Handler(cfg Config) (http.Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tok, err := newToken(cfg.Token, cfg.TokenFile)
	if err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, token: tok}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	routes := []struct {
		pattern string
		fn      handlerFunc
	}{
		{"GET " + APIPrefix + "/application", s.application},
		{"GET " + APIPrefix + "/resource", s.resource},
		{"POST " + APIPrefix + "/releases", s.beginRelease},
		{"POST " + APIPrefix + "/releases/{id}/result", s.releaseResult},
		{"GET " + APIPrefix + "/releases/{id}", s.releaseStatus},
		{"POST " + APIPrefix + "/guards", s.beginConfirm},
		{"POST " + APIPrefix + "/guards/{id}/result", s.releaseResult},
		{"POST " + APIPrefix + "/approvals", s.beginApprove},
		{"POST " + APIPrefix + "/approvals/{id}/result", s.releaseResult},
		{"GET " + APIPrefix + "/journals", s.journals},
		{"POST " + APIPrefix + "/journals/{id}/undo", s.planUndo},
		{"POST " + APIPrefix + "/journals/{id}/undo/result", s.undoResult},
	}
	for _, r := range routes {
		mux.Handle(r.pattern, s.scoped(r.fn))
	}
	return mux, nil
}

// Serve listens on addr until ctx ends.
func Serve(ctx context.Context, addr string, cfg Config) error {
	h, err := Handler(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	cfg.logf("unprune UI extension backend listening on %s", ln.Addr())
	stop := context.AfterFunc(ctx, func() {
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	})
	defer stop()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// request is one call, scoped to the Application argocd-server authorized.
type request struct {
	*http.Request
	argo     cluster.ArgoCD
	settings cluster.Settings
	app      argocd.Application
	// user is who clicked, as argocd-server names them (for the journal; never a permission).
	user string
}

// reply is an answer: a status and a document (or an error).
type reply struct {
	status int
	doc    any
}

type handlerFunc func(r *request) reply

func fail(status int, reason, format string, args ...any) reply {
	return reply{status, printer.UIError{APIVersion: printer.APIVersion, Kind: "Error", Reason: reason, Message: fmt.Sprintf(format, args...)}}
}

func ok(doc any) reply { return reply{http.StatusOK, doc} }

// scoped checks the token and the app headers, reads the app and runs fn.
func (s *server) scoped(fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := s.serve(r, fn)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set(HeaderVersion, s.cfg.ToolVersion)
		w.WriteHeader(rep.status)
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep.doc)
		if rep.status >= 400 {
			if e, isErr := rep.doc.(printer.UIError); isErr {
				s.cfg.logf("%s %s (%s, app %s): %d %s: %s", r.Method, r.URL.Path, r.Header.Get(HeaderUsername), r.Header.Get(HeaderApplication), rep.status, e.Reason, e.Message)
			}
		}
	})
}

func (s *server) serve(r *http.Request, fn handlerFunc) reply {
	good, err := s.token.matches(r.Header.Get(HeaderToken))
	if err != nil {
		s.cfg.logf("the token file changed but cannot be read (the token read before holds): %v", err)
	}
	if !good {
		return fail(http.StatusUnauthorized, "Unauthorized", "this backend answers only argocd-server's proxy extension: the request lacks the %s argocd-server adds (extension.config.unprune in argocd-cm)", HeaderToken)
	}
	ns, name, found := strings.Cut(r.Header.Get(HeaderApplication), ":")
	if !found || ns == "" || name == "" {
		return fail(http.StatusBadRequest, "BadRequest", "header %s must name the Application as NAMESPACE:NAME", HeaderApplication)
	}
	ctx := r.Context()
	argo, err := s.cfg.Session.ArgoCD(ctx)
	if err != nil {
		return fail(http.StatusBadGateway, "ArgoCDUnreachable", "%v", err)
	}
	if want := r.Header.Get(HeaderNamespace); want != "" && want != argo.Namespace() {
		return fail(http.StatusBadRequest, "OtherInstallation", "this backend serves the Argo CD in namespace %s, not the one in %s", argo.Namespace(), want)
	}
	settings, err := s.cfg.Session.Settings(ctx)
	if err != nil {
		return fail(http.StatusBadGateway, "ArgoCDUnreachable", "%v", err)
	}
	app, err := argo.GetApplication(ctx, ns, name)
	if err != nil {
		if cluster.IsNotFound(err) {
			return fail(http.StatusNotFound, "ApplicationNotFound", "Application %s/%s does not exist", ns, name)
		}
		return fail(http.StatusBadGateway, "ArgoCDUnreachable", "read Application %s/%s: %v", ns, name, err)
	}
	if p := r.Header.Get(HeaderProject); p != "" && p != app.Project {
		return fail(http.StatusBadRequest, "ProjectMismatch", "Application %s is in project %s, not %s", app.Ref(), app.Project, p)
	}
	user := requester(r.Header.Get(HeaderUsername), r.Header.Get(HeaderUserID), r.Header.Get(HeaderGroups))
	if !s.cfg.RemoteDestinations {
		argo = inClusterOnly{ArgoCD: argo}
	}
	return fn(&request{Request: r, argo: argo, settings: settings, app: app, user: user})
}

// RemoteUnreadError is why the backend cannot read an app's destination (App empty: a cluster it
// was asked to reach): it is another cluster than Argo CD's, and the backend was installed to read
// only the cluster it runs in.
type RemoteUnreadError struct {
	App         string
	Destination argocd.Destination
}

func (e *RemoteUnreadError) Error() string {
	what := "Application " + e.App + " deploys to cluster " + e.Destination.String()
	if e.App == "" {
		what = "cluster " + e.Destination.String() + " is not the one Argo CD runs in"
	}
	return what + ", and unprune's backend reads only the cluster Argo CD runs in: " +
		"what is in it and the release cannot be read here. Install the backend with deploy/ui-extension/remote-clusters " +
		"(it then reads Argo CD's cluster Secrets), or run unprune with a kubeconfig for that cluster"
}

// inClusterOnly is Argo CD seen by a backend that reaches only the cluster Argo CD runs in: every
// other destination is a RemoteUnreadError, not the command line's advice on flags.
type inClusterOnly struct{ cluster.ArgoCD }

func (a inClusterOnly) Destination(ctx context.Context, app argocd.Application) (cluster.Objects, error) {
	if !app.Destination.InCluster() {
		return nil, &RemoteUnreadError{App: app.Ref(), Destination: app.Destination}
	}
	return a.ArgoCD.Destination(ctx, app)
}

func (a inClusterOnly) Reach(ctx context.Context, d argocd.Destination) (cluster.Objects, error) {
	if !d.InCluster() && d.Name != argocd.InClusterName {
		return nil, &RemoteUnreadError{Destination: d}
	}
	return a.ArgoCD.Reach(ctx, d)
}

// requester is who asked, as journals record it, from the headers argocd-server's proxy sets
// (server/extension/extension.go, prepareRequest). It sets each only when it has a value and
// passes a client's header of the same name through otherwise, so a value argocd-server cannot
// have set is dropped: a local account (its token's issuer is argocd, and its id is its name —
// util/session, Username and GetUserIdentifier) has no groups, so a groups header beside such an
// id is the client's. Before v3.2 no id comes, and groups are recorded as they arrive.
func requester(username, id, groups string) string {
	user := username
	local := id != "" && id == username
	if id != "" && !local {
		user += " (id " + id + ")"
	}
	if groups != "" && !local {
		user += " (groups " + groups + ")"
	}
	return user
}

// decodeBody reads a JSON request body strictly.
func decodeBody(r *request, into any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("the request body is not what this backend (%s) reads: %v", APIPrefix, err)
	}
	return nil
}
