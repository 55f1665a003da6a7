package printers

import (
	"strconv"
	"time"

	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
)

// secretRow: NAME TYPE DATA AGE, as kubectl; DATA counts the keys, never
// shows a value.
func secretRow(obj object.Object, now time.Time) ([]string, []string) {
	s := obj.(*corev1.Secret)
	m := s.GetMetadata()
	return []string{m.GetName(), s.GetType(), strconv.Itoa(len(s.GetData())), Age(m.GetCreationTimestamp(), now)}, nil
}
