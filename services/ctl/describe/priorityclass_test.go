package describe

import (
	"bytes"
	"testing"
	"time"

	metav1 "skiff.dev/proto/meta/v1"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
)

func TestDescribePriorityClass(t *testing.T) {
	pc := &schedulingv1.PriorityClass{Metadata: &metav1.ObjectMeta{Name: "high"}, Value: 1000, GlobalDefault: true, Description: "for the front end"}
	var b bytes.Buffer
	if err := Describe(&b, pc, Related{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Name: high\n", "Value: 1000\n", "GlobalDefault: true\n", "PreemptionPolicy: PreemptLowerPriority\n",
		"Description: for the front end\n", "Annotations: <none>\n", "Events: <none>\n"} {
		if !containsSpaced(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}
