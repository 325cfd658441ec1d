// Package extension is the backend of unprune's Argo CD UI extension: a read-only HTTP service that
// argocd-server's proxy extension forwards the UI's questions to, after its own authentication and
// its RBAC check (`applications, get` on the app named in Argocd-Application-Name, and
// `extensions, invoke` on "unprune"; server/extension/extension.go).
//
// It answers with unprune's own judgement — audit's rows, the engine's release plan, verify's
// reading of the app's status — so that the extension holds no second implementation of Argo
// CD's rules. It never changes a resource: the browser sends every patch to argocd-server's own
// API with the clicker's session, so that the clicker's Argo CD RBAC decides. What it writes is
// the journal of each release made in the UI (package cmstore), before the browser patches
// (planned) and after (from what the cluster then shows, not from what the browser says).
//
// Every request must carry the token argocd-server adds from its extension config (header
// Unprune-Token): argocd-server strips the user's Cookie and Authorization before forwarding,
// so the token is what proves a request came through its checks. Requests are about the one
// Application argocd-server authorized; a resource or journal of another app is refused.
//
// The API (paths below /extensions/unprune in the browser; documents in docs/ui.md):
//
//	GET  /api/v1alpha1/application                    the app's prune answer: rows requiring pruning, guards, risk, cascade, deletion budget
//	GET  /api/v1alpha1/resource?group=&kind=&namespace=&name=   one row's answer and its release plan (changes, diff)
//	POST /api/v1alpha1/releases                       journal a release (planned); the patch for the browser to send
//	POST /api/v1alpha1/releases/{id}/result           complete the journal from what the cluster shows
//	GET  /api/v1alpha1/releases/{id}                  whether Argo CD shows the release (verify.Judge)
//	POST /api/v1alpha1/guards                         journal Prune=confirm on a row requiring pruning; the patch
//	POST /api/v1alpha1/guards/{id}/result             complete that journal from what the cluster shows
//	POST /api/v1alpha1/approvals                      journal the deletion budget's approval of what the next operation deletes; the Application's patch
//	POST /api/v1alpha1/approvals/{id}/result          complete that journal from what the cluster shows
//	GET  /api/v1alpha1/journals                       the app's journals of UI releases
//	POST /api/v1alpha1/journals/{id}/undo             the undo's patches (engine.PlanUndo), or why not
//	POST /api/v1alpha1/journals/{id}/undo/result      mark what the cluster shows restored
package extension
