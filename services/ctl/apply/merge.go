package apply

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
)

// LastAppliedAnnotation holds the configuration applied last, as JSON.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// MergeKeys are the lists merged element by element (Kubernetes'
// patchMergeKey), by the list's field name.
var MergeKeys = map[string]string{
	"containers":       "name",
	"initContainers":   "name",
	"env":              "name",
	"volumes":          "name",
	"volumeMounts":     "mountPath",
	"ports":            "containerPort",
	"imagePullSecrets": "name",
}

// Merge returns live with modified applied and what original had but
// modified lost removed. None of the arguments is modified; original may
// be nil (nothing applied before).
func Merge(original, modified, live map[string]any) map[string]any {
	return mergeMap(original, modified, live)
}

func mergeMap(orig, mod, live map[string]any) map[string]any {
	out := maps.Clone(live)
	if out == nil {
		out = map[string]any{}
	}
	for k, mv := range mod {
		if mv == nil {
			delete(out, k)
			continue
		}
		ov := orig[k]
		lv := live[k]
		switch m := mv.(type) {
		case map[string]any:
			lm, ok := lv.(map[string]any)
			if !ok {
				out[k] = deepCopy(m)
				continue
			}
			om, _ := ov.(map[string]any)
			out[k] = mergeMap(om, m, lm)
		case []any:
			ol, _ := ov.([]any)
			ll, _ := lv.([]any)
			out[k] = mergeList(MergeKeys[k], ol, m, ll)
		default:
			out[k] = mv
		}
	}
	for k := range orig {
		if _, kept := mod[k]; !kept {
			delete(out, k)
		}
	}
	return out
}

// mergeList merges a list by key, or replaces it when it has no merge key
// or an element lacks the key.
func mergeList(key string, orig, mod, live []any) []any {
	if key == "" || !allKeyed(key, orig) || !allKeyed(key, mod) || !allKeyed(key, live) {
		return deepCopy(mod).([]any)
	}
	index := func(l []any) map[string]map[string]any {
		out := make(map[string]map[string]any, len(l))
		for _, e := range l {
			m := e.(map[string]any)
			out[fmt.Sprint(m[key])] = m
		}
		return out
	}
	origBy, liveBy, modBy := index(orig), index(live), index(mod)
	out := make([]any, 0, len(mod))
	for _, e := range mod {
		m := e.(map[string]any)
		k := fmt.Sprint(m[key])
		if lm, ok := liveBy[k]; ok {
			out = append(out, mergeMap(origBy[k], m, lm))
		} else {
			out = append(out, deepCopy(m))
		}
	}
	// Elements someone else added stay; those we applied and dropped go.
	for _, e := range live {
		k := fmt.Sprint(e.(map[string]any)[key])
		if _, inMod := modBy[k]; inMod {
			continue
		}
		if _, inOrig := origBy[k]; inOrig {
			continue
		}
		out = append(out, e)
	}
	return out
}

func allKeyed(key string, l []any) bool {
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		if _, ok := m[key]; !ok {
			return false
		}
	}
	return true
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// Original reads the last-applied configuration of a live object (nil
// when it has none).
func Original(live map[string]any) (map[string]any, error) {
	meta, _ := live["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	s, _ := ann[LastAppliedAnnotation].(string)
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", LastAppliedAnnotation, err)
	}
	return normalizeNumbers(out).(map[string]any), nil
}

func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
	}
	return v
}

// WithLastApplied returns a copy of config whose metadata carries the
// annotation annotation (config itself, without the annotation, as
// compact JSON with sorted keys and a final newline, as kubectl writes it),
// and the annotation's value.
func WithLastApplied(config map[string]any) (map[string]any, string) {
	out := deepCopy(config).(map[string]any)
	meta, _ := out["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		out["metadata"] = meta
	}
	ann, _ := meta["annotations"].(map[string]any)
	if ann != nil {
		delete(ann, LastAppliedAnnotation)
		if len(ann) == 0 {
			delete(meta, "annotations")
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(err) // generic trees are JSON values
	}
	value := string(b) + "\n"
	if len(ann) == 0 {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann[LastAppliedAnnotation] = value
	return out, value
}
