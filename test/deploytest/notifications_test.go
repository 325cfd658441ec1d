package deploytest

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/risk"
)

// An installation's own notifications config, which the component must leave as it is.
const notificationsStandIn = `apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-notifications-cm
data:
  context: |
    argocdUrl: https://argocd.example.com
  service.slack: |
    token: $slack-token
  trigger.on-sync-failed: |
    - when: app.status.operationState.phase in ['Error', 'Failed']
      send: [app-sync-failed]
`

// TestNotificationsComponent: the component adds its trigger and template to the installation's
// argocd-notifications-cm and keeps every key already there.
func TestNotificationsComponent(t *testing.T) {
	data := BuildNotifications(t, "gitops", notificationsStandIn)
	var own map[string]any
	if err := yaml.Unmarshal([]byte(notificationsStandIn), &own); err != nil {
		t.Fatal(err)
	}
	for k, v := range own["data"].(map[string]any) {
		if data[k] != v {
			t.Errorf("%s = %q after the component, want it kept: %q", k, data[k], v)
		}
	}
	trigger := notificationsTrigger(t, data)
	if len(trigger) != 1 || !slices.Equal(trigger[0].Send, []string{NotificationsTemplate}) || trigger[0].OncePer == "" {
		t.Errorf("trigger.%s = %+v; want one condition with oncePer, sending template %s", NotificationsTrigger, trigger, NotificationsTemplate)
	}
	tmpl := notificationsTemplate(t, data)
	if tmpl.Message == "" || tmpl.Webhook["unprune"].Method != "POST" || tmpl.Webhook["unprune"].Body == "" {
		t.Errorf("template.%s: want a message and a POST body for the webhook service unprune; got %+v", NotificationsTemplate, tmpl)
	}
}

// notificationsCondition and notificationsTmpl have the fields notifications-engine reads
// (pkg/triggers.Condition; services.Notification's message and webhook), so that a strict decode
// catches a misspelt key, which the controller would ignore.
type notificationsCondition struct {
	Description string   `json:"description"`
	When        string   `json:"when"`
	OncePer     string   `json:"oncePer"`
	Send        []string `json:"send"`
}

type notificationsTmpl struct {
	Message string `json:"message"`
	Webhook map[string]struct {
		Method string `json:"method"`
		Body   string `json:"body"`
	} `json:"webhook"`
}

func notificationsTrigger(t *testing.T, data map[string]string) []notificationsCondition {
	t.Helper()
	var conds []notificationsCondition
	if err := yaml.UnmarshalStrict([]byte(data["trigger."+NotificationsTrigger]), &conds); err != nil {
		t.Fatalf("trigger.%s: %v", NotificationsTrigger, err)
	}
	return conds
}

func notificationsTemplate(t *testing.T, data map[string]string) notificationsTmpl {
	t.Helper()
	var tmpl notificationsTmpl
	if err := yaml.UnmarshalStrict([]byte(data["template."+NotificationsTemplate]), &tmpl); err != nil {
		t.Fatalf("template.%s: %v", NotificationsTemplate, err)
	}
	return tmpl
}

var (
	// exprList is the `let high = [...]` of an expr-lang expression; templateList the `$high := list …`
	// of a Go template; quoted the strings in either.
	exprList     = regexp.MustCompile(`let high = \[([^\]]*)\]`)
	templateList = regexp.MustCompile(`\$high := list ([^}]*)}}`)
	protectDict  = regexp.MustCompile(`\$protect := dict ([^}]*)}}`)
	quoted       = regexp.MustCompile(`"([^"]*)"`)
)

func quotedStrings(s string) []string {
	var out []string
	for _, m := range quoted.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestNotificationsKindsAreRiskHigh: the trigger's condition, its oncePer and the template's message
// and webhook body name the same kinds, and they are exactly the kinds — of Kubernetes' own APIs, the
// CRD and APIService — that unprune's internal/risk classifies high by identity, apart from
// argoproj.io, which the expressions match by group. The guard commands the template recommends are
// unprune's: guard protect for the kinds its admission policy covers (guard.Kinds, with the --kinds
// flag), guard confirm for the others.
func TestNotificationsKindsAreRiskHigh(t *testing.T) {
	data := BuildNotifications(t, "argocd", EmptyNotificationsConfigMap)
	cond := notificationsTrigger(t, data)[0]
	tmpl := notificationsTemplate(t, data)
	lists := map[string][]string{}
	for where, m := range map[string][]string{
		"when": exprList.FindStringSubmatch(cond.When), "oncePer": exprList.FindStringSubmatch(cond.OncePer),
		"message": templateList.FindStringSubmatch(tmpl.Message), "webhook body": templateList.FindStringSubmatch(tmpl.Webhook["unprune"].Body),
	} {
		if m == nil {
			t.Fatalf("the %s has no list of high-risk kinds", where)
		}
		lists[where] = quotedStrings(m[1])
	}
	want := lists["when"]
	for where, l := range lists {
		if !slices.Equal(l, want) {
			t.Errorf("the %s lists %v, the condition %v", where, l, want)
		}
	}
	for _, text := range []string{cond.When, cond.OncePer, tmpl.Message, tmpl.Webhook["unprune"].Body} {
		if !strings.Contains(text, `"argoproj.io"`) {
			t.Errorf("no argoproj.io rule in %q", text)
		}
	}

	// Every kind Kubernetes' own API groups serve, and the two that live in other schemes.
	kinds := map[string]risk.Object{
		"CustomResourceDefinition.apiextensions.k8s.io": {Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"},
		"APIService.apiregistration.k8s.io":             {Group: "apiregistration.k8s.io", Kind: "APIService"},
	}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == "__internal" || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") {
			continue
		}
		gk := gvk.Kind
		if gvk.Group != "" {
			gk += "." + gvk.Group
		}
		kinds[gk] = risk.Object{Group: gvk.Group, Kind: gvk.Kind}
	}
	for _, gk := range want {
		if _, ok := kinds[gk]; !ok {
			t.Errorf("the notifications name %s, which is no kind of Kubernetes' APIs", gk)
		}
	}
	for gk, o := range kinds {
		o.Namespace, o.Name = "team-a", "x" // never Argo CD's namespace: that rule is left out
		class, _ := risk.Classify(o, "argocd")
		if listed := slices.Contains(want, gk); listed != (class == risk.High) {
			t.Errorf("%s: risk.Classify says %s, the notifications list it: %t", gk, class, listed)
		}
	}
	if class, _ := risk.Classify(risk.Object{Group: "argoproj.io", Kind: "Anything", Namespace: "team-a", Name: "x"}, "argocd"); class != risk.High {
		t.Errorf("risk.Classify no longer says every argoproj.io kind is high risk (%s): change the notifications' argoproj.io rule", class)
	}

	var protect []string
	for _, k := range guard.Kinds {
		gk := k.Kind
		if k.Group != "" {
			gk += "." + k.Group
		}
		protect = append(protect, gk, k.Flag)
	}
	for where, text := range map[string]string{"message": tmpl.Message, "webhook body": tmpl.Webhook["unprune"].Body} {
		m := protectDict.FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("the %s has no $protect dict", where)
		}
		if got := quotedStrings(m[1]); !slices.Equal(got, protect) {
			t.Errorf("the %s recommends guard protect for %v; unprune's admission policy covers %v (guard.Kinds)", where, got, protect)
		}
	}
}
