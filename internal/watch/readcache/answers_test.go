package readcache

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestAnswersBackOff: a failing read is retried after a backoff that doubles up to the TTL, not at
// every evaluation and not only after the TTL; that an object is not found is an answer.
func TestAnswersBackOff(t *testing.T) {
	now := time.Unix(0, 0)
	a := newAnswers[int]("t", 10, time.Minute, func() time.Time { return now }, newStaleAnswers())
	boom := apierrors.NewServiceUnavailable("try again")
	a.record("k", 0, boom)
	if _, ok := a.cached("k"); !ok {
		t.Fatal("a failure is not held for its backoff")
	}
	now = now.Add(firstRetry)
	if _, ok := a.cached("k"); ok {
		t.Fatal("a failure is held beyond its backoff")
	}
	a.record("k", 0, boom)
	now = now.Add(firstRetry)
	if _, ok := a.cached("k"); !ok {
		t.Fatal("the second failure's backoff did not double")
	}
	if d := backoff(20, time.Minute); d != time.Minute {
		t.Errorf("backoff(20) = %s, want the TTL", d)
	}
	gone := apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "x")
	if r := a.record("gone", 0, gone); !r.good() {
		t.Error("NotFound is an answer")
	}
}
