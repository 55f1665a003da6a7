package history

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"

	corev1 "skiff.dev/proto/core/v1"
)

// TemplatePatch is the data of a DaemonSet's or StatefulSet's revision, as
// Kubernetes stores it: the strategic merge patch
// {"spec":{"template":{...,"$patch":"replace"}}} that restores the
// template. The template is in its JSON names (protojson's form of its
// fields), re-encoded through encoding/json so the bytes are the same for
// the same template in every process: EqualRevision compares them.
func TemplatePatch(template *corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := protojson.Marshal(template)
	if err != nil {
		return nil, fmt.Errorf("encode template: %w", err)
	}
	var t map[string]any
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("encode template: %w", err)
	}
	if t == nil {
		t = map[string]any{}
	}
	t["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": t}})
}

// TemplateFromPatch returns the template a revision's data restores: the
// inverse of TemplatePatch.
func TemplateFromPatch(data []byte) (*corev1.PodTemplateSpec, error) {
	var p struct {
		Spec struct {
			Template map[string]any `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("decode revision data: %w", err)
	}
	if p.Spec.Template == nil {
		return nil, fmt.Errorf("decode revision data: no spec.template")
	}
	delete(p.Spec.Template, "$patch")
	raw, err := json.Marshal(p.Spec.Template)
	if err != nil {
		return nil, fmt.Errorf("decode revision data: %w", err)
	}
	t := &corev1.PodTemplateSpec{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, t); err != nil {
		return nil, fmt.Errorf("decode revision data: %w", err)
	}
	return t, nil
}
