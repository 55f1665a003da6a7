package labels

import (
	"errors"
	"strings"
	"testing"

	metav1 "skiff.dev/proto/meta/v1"
)

func expr(key, op string, values ...string) *metav1.LabelSelectorRequirement {
	return &metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestFromProto(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *metav1.LabelSelector
		want string
	}{
		{"nil is nothing", nil, "<nothing>"},
		{"empty is everything", &metav1.LabelSelector{}, ""},
		{"match labels", &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "fe", "app": "web"}}, "app=web,tier=fe"},
		{"in", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("env", "In", "prod", "dev")}}, "env in (dev,prod)"},
		{"notin", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("env", "NotIn", "dev")}}, "env notin (dev)"},
		{"exists", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("canary", "Exists")}}, "canary"},
		{"does not exist", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("canary", "DoesNotExist")}}, "!canary"},
		{"in with only the empty value", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("a", "In", "")}}, "a in (,)"},
		{"labels and expressions", &metav1.LabelSelector{
			MatchLabels:      map[string]string{"app": "web"},
			MatchExpressions: []*metav1.LabelSelectorRequirement{expr("app", "NotIn", "db"), expr("zone", "Exists")},
		}, "app=web,app notin (db),zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := FromProto(tc.in)
			if err != nil {
				t.Fatalf("FromProto: %v", err)
			}
			if sel.String() != tc.want {
				t.Fatalf("FromProto(...).String() = %q, want %q", sel.String(), tc.want)
			}
			if tc.in == nil {
				return
			}
			again, err := Parse(sel.String())
			if err != nil || again.String() != tc.want {
				t.Fatalf("Parse(%q) = %q, %v", sel.String(), again.String(), err)
			}
		})
	}
}

func TestFromProtoMatches(t *testing.T) {
	web := map[string]string{"app": "web"}
	if sel, _ := FromProto(nil); sel.Matches(web) || sel.Matches(nil) {
		t.Fatal("a nil selector must match nothing")
	}
	if sel, _ := FromProto(&metav1.LabelSelector{}); !sel.Matches(web) || !sel.Matches(nil) {
		t.Fatal("an empty selector must match everything")
	}
}

func TestFromProtoErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *metav1.LabelSelector
		want string
	}{
		{"bad match labels key", &metav1.LabelSelector{MatchLabels: map[string]string{"bad key": "x"}},
			`invalid label selector: matchLabels: invalid label key "bad key"`},
		{"bad match labels value", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "-x"}},
			`invalid label selector: matchLabels["app"]: invalid label value "-x"`},
		{"unknown operator", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("a", "Exists"), expr("a", "Gt", "1")}},
			`invalid label selector: matchExpressions[1]: operator "Gt" is not one of In, NotIn, Exists, DoesNotExist`},
		{"lowercase operator", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("a", "in", "1")}},
			`matchExpressions[0]: operator "in" is not one of`},
		{"empty operator", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("a", "")}},
			`matchExpressions[0]: operator "" is not one of`},
		{"in without values", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("a", "In")}},
			`matchExpressions[0]: key "a": operator 'In' needs a non-empty set of values`},
		{"notin without values", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("a", "NotIn")}},
			`matchExpressions[0]: key "a": operator 'NotIn' needs a non-empty set of values`},
		{"exists with values", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("a", "Exists", "x")}},
			`matchExpressions[0]: key "a": operator 'Exists' takes no values, got 1`},
		{"does not exist with values", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("a", "DoesNotExist", "x", "y")}},
			`matchExpressions[0]: key "a": operator 'DoesNotExist' takes no values, got 2`},
		{"bad expression key", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("", "Exists")}},
			`matchExpressions[0]: invalid label key "": name part must not be empty`},
		{"bad expression value", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{expr("a", "In", "ok", "no way")}},
			`matchExpressions[0]: key "a": invalid label value "no way"`},
		{"nil expression", &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{nil}},
			`matchExpressions[0]: missing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := FromProto(tc.in)
			if err == nil {
				t.Fatalf("FromProto = %q, want error containing %q", sel.String(), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalidSelector) {
				t.Fatalf("FromProto error:\n  %v\nwant ErrInvalidSelector containing:\n  %s", err, tc.want)
			}
		})
	}
}

func TestOperatorFromProto(t *testing.T) {
	for name, want := range map[string]Operator{"In": In, "NotIn": NotIn, "Exists": Exists, "DoesNotExist": DoesNotExist} {
		if op, ok := OperatorFromProto(name); !ok || op != want {
			t.Errorf("OperatorFromProto(%q) = %q, %v; want %q", name, op, ok, want)
		}
	}
	for _, name := range []string{"in", "", "Gt", "=", "exists"} {
		if op, ok := OperatorFromProto(name); ok {
			t.Errorf("OperatorFromProto(%q) = %q, want not ok", name, op)
		}
	}
}
