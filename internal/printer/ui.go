package printer

import "time"

// The documents of unprune's UI extension: what its backend (`unprune extension`, internal/extension)
// answers the extension in Argo CD's UI and what the browser sends it, in the same apiVersion as
// every other document of unprune's (APIVersion). docs/ui.md lists the endpoints.

// UIAppRef names the Application the UI asks about, with its project.
type UIAppRef struct {
	AppRef
	Project string `json:"project,omitempty"`
}

// UIResource is GET /resource.
type UIResource struct {
	APIVersion  string   `json:"apiVersion"`
	Kind        string   `json:"kind"`
	ToolVersion string   `json:"toolVersion"`
	Application UIAppRef `json:"application"`
	Item        UIItem   `json:"item"`
	// RequiresPruning is the app's status row's.
	RequiresPruning bool   `json:"requiresPruning"`
	Release         UIPlan `json:"release"`
	// Confirm is the other way to keep it: Prune=confirm merged into its sync-options (what
	// `unprune guard confirm` plans), so that a prune waits for approval on the Application.
	Confirm UIPlan `json:"confirm"`
}

// UIGuard is one thing that stops the deletion, with its explanation.
type UIGuard struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Hard: it holds whatever a sync request says.
	Hard bool `json:"hard"`
}

// UIContents is what the deletion takes with it; -1 means not counted.
type UIContents struct {
	Objects         int64  `json:"objects"`
	CustomResources int64  `json:"customResources"`
	Partial         string `json:"partial,omitempty"`
}

// UIItem is one resource a prune would delete: audit's row.
type UIItem struct {
	Resource ResourceRef `json:"resource"`
	Hook     bool        `json:"hook,omitempty"`
	Risk     string      `json:"risk"`
	RiskWhy  string      `json:"riskWhy,omitempty"`
	Contents *UIContents `json:"contents,omitempty"`
	Guards   []UIGuard   `json:"guards"`
	// Guarded: a hard guard stops the prune.
	Guarded   bool     `json:"guarded"`
	Notes     []string `json:"notes,omitempty"`
	LiveError string   `json:"liveError,omitempty"`
}

// UICascade is what deleting the Application deletes with it, of high risk.
type UICascade struct {
	// Finalizer is the app's resources finalizer; empty: deleting the app deletes nothing.
	Finalizer string        `json:"finalizer,omitempty"`
	HighRisk  []ResourceRef `json:"highRisk"`
	// ManagedBy names a parent app or ApplicationSet that may delete the app.
	ManagedBy string `json:"managedBy,omitempty"`
	Unknown   string `json:"unknown,omitempty"`
}

// UISummary counts an app's rows requiring pruning.
type UISummary struct {
	RequiresPruning   int `json:"requiresPruning"`
	HighRisk          int `json:"highRisk"`
	Unguarded         int `json:"unguarded"`
	UnguardedHighRisk int `json:"unguardedHighRisk"`
}

// UIApplication is GET /application.
type UIApplication struct {
	APIVersion  string    `json:"apiVersion"`
	Kind        string    `json:"kind"`
	ToolVersion string    `json:"toolVersion"`
	Application UIAppRef  `json:"application"`
	SyncStatus  string    `json:"syncStatus"`
	AutoPrune   bool      `json:"autoPrune"`
	Summary     UISummary `json:"summary"`
	// Items require pruning, high-risk first; hooks (never pruned) are left out.
	Items    []UIItem  `json:"items"`
	Cascade  UICascade `json:"cascade"`
	Budget   UIBudget  `json:"budget"`
	Warnings []string  `json:"warnings,omitempty"`
}

// UIBudget is the deletion budget's view of the app (docs/budget.md): its budget where the app or
// its project sets one, and what its next operation deletes, each object approved or not.
type UIBudget struct {
	// Limit is the app's budget, or its project's; nil when the installation's default applies
	// (unprune watch --deletion-budget), which the backend does not know.
	Limit  *int   `json:"limit"`
	Source string `json:"source"`
	// Operation says what deletes them: "its next sync with prune deletes" or "its deletion deletes".
	Operation string              `json:"operation"`
	Pending   []UIPendingDeletion `json:"pending"`
	// Unknown says why the pending deletions could not be read.
	Unknown string `json:"unknown,omitempty"`
}

// UIPendingDeletion is one object the app's next operation deletes.
type UIPendingDeletion struct {
	Resource ResourceRef `json:"resource"`
	UID      string      `json:"uid"`
	Approved bool        `json:"approved"`
}

// UIApproveRequest is POST /approvals: the UIDs of the deletions the budget view showed (approved
// only if Argo CD's comparison still shows exactly those), and the argocd-server the browser talks to.
type UIApproveRequest struct {
	UIDs         []string `json:"uids"`
	ArgoCDServer string   `json:"argocdServer,omitempty"`
}

// UIChange is one key a release (or an undo) changes.
type UIChange struct {
	Field  string  `json:"field"`
	Key    string  `json:"key"`
	Before *string `json:"before"`
	After  *string `json:"after"`
	// Description is the change in words, for what Before and After cannot show (an embedded
	// configuration, managedFields entries).
	Description string `json:"description"`
}

// UIPlan is what a release would do to one object: the engine's decision and the metadata diff.
type UIPlan struct {
	// Outcome is Planned (there is something to release), Unchanged, Refused, Gone or Failed.
	Outcome string     `json:"outcome"`
	Reason  string     `json:"reason,omitempty"`
	Message string     `json:"message,omitempty"`
	Changes []UIChange `json:"changes"`
	Notes   []string   `json:"notes,omitempty"`
	// Diff is the unified diff of the object's labels and annotations, live and after.
	Diff string `json:"diff,omitempty"`
	// ResourceVersion and UID are the live object's, as planned: a release sends exactly this plan
	// only while the object is unchanged.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	UID             string `json:"uid,omitempty"`
}

// UIPatch is the request the browser sends to argocd-server's API with the user's session:
// POST /api/v1/applications/{name}/resource (`argocd app patch-resource`), whose body is the
// request's "patch" field, a JSON string (application.proto: body: "patch"), holding the same
// merge patch with a resourceVersion precondition that `unprune detach --via argocd` sends.
type UIPatch struct {
	Method string            `json:"method"`
	Path   string            `json:"path"`
	Query  map[string]string `json:"query"`
	// Body is the HTTP body to send as it is (JSON).
	Body string `json:"body"`
}

// UIReleaseRequest is POST /releases: the resource the user previewed, at the resourceVersion of the
// preview, and the argocd-server the browser talks to (recorded in the journal).
type UIReleaseRequest struct {
	Resource        ResourceRef `json:"resource"`
	ResourceVersion string      `json:"resourceVersion"`
	ArgoCDServer    string      `json:"argocdServer,omitempty"`
}

// UIJournalRef names a journal and how `unprune undo` reaches it.
type UIJournalRef struct {
	ID   string `json:"id"`
	Path string `json:"path"`
	// UndoCommand undoes it with a kubeconfig.
	UndoCommand string `json:"undoCommand"`
}

// UIReleaseStarted is the answer of POST /releases: the journal (planned) and the patch to send.
type UIReleaseStarted struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Journal    UIJournalRef `json:"journal"`
	Release    UIPlan       `json:"release"`
	Patch      UIPatch      `json:"patch"`
}

// UISent is what the browser saw when it sent a patch to argocd-server: its HTTP status and, when
// it failed, Argo CD's message. It explains a failure; the journal's state comes from the cluster.
type UISent struct {
	Status  int    `json:"status"`
	Message string `json:"message,omitempty"`
}

// UIReleaseResult is the answer of POST /releases/{id}/result and GET /releases/{id}.
type UIReleaseResult struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Journal    UIJournalRef `json:"journal"`
	// State is the journal entry's: applied, failed, planned (not known yet).
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
	// Verification is Argo CD's view after the release (GET only).
	Verification *UIVerification `json:"verification,omitempty"`
}

// UIVerification is verify.Judge's reading of the app's status.
type UIVerification struct {
	// Verified: a comparison after the patch no longer lists the object.
	Verified   bool          `json:"verified"`
	Fresh      bool          `json:"fresh"`
	SyncStatus string        `json:"syncStatus"`
	Lingering  []ResourceRef `json:"lingering"`
	OutOfSync  []ResourceRef `json:"outOfSync"`
}

// UIError is the document of a refusal or failure.
type UIError struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Reason is a machine-readable code; Message says what happened and what to do.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// UIJournalEntry is one object of a journal.
type UIJournalEntry struct {
	Resource ResourceRef `json:"resource"`
	State    string      `json:"state"`
	Error    string      `json:"error,omitempty"`
	Changes  []UIChange  `json:"changes"`
}

// UIJournal is one journal of a UI release.
type UIJournal struct {
	UIJournalRef
	CreatedAt time.Time        `json:"createdAt"`
	Command   string           `json:"command"`
	Entries   []UIJournalEntry `json:"entries"`
}

// UIJournalList is GET /journals: the app's journals, newest first.
type UIJournalList struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Items      []UIJournal `json:"items"`
	// Unreadable are journals of the store that could not be read, with why.
	Unreadable []string `json:"unreadable,omitempty"`
}

// UIUndoItem is what undo would do to one entry's object.
type UIUndoItem struct {
	Entry    int         `json:"entry"`
	Resource ResourceRef `json:"resource"`
	UIPlan
	// Patch is the request that restores it through argocd-server, when there is one to send.
	Patch *UIPatch `json:"patch,omitempty"`
}

// UIUndo is POST /journals/{id}/undo: the undo, planned by the engine as `unprune undo` plans it.
type UIUndo struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Journal    UIJournalRef `json:"journal"`
	Items      []UIUndoItem `json:"items"`
}

// UIUndoSent is POST /journals/{id}/undo/result: which entry the browser restored, and what
// argocd-server answered.
type UIUndoSent struct {
	Entry int `json:"entry"`
	UISent
}

// UIUndoResult says whether the cluster shows the entry restored.
type UIUndoResult struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Journal    UIJournalRef `json:"journal"`
	Entry      int          `json:"entry"`
	State      string       `json:"state"`
	Message    string       `json:"message,omitempty"`
}
