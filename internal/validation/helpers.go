package validation

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	"maps"
	"skiff.dev/internal/field"
)

func nonNegative(v int64, p *field.Path) field.ErrorList {
	if v < 0 {
		return field.ErrorList{field.Invalid(p, v, "must be greater than or equal to 0")}
	}
	return nil
}

func positive(v int64, p *field.Path) field.ErrorList {
	if v <= 0 {
		return field.ErrorList{field.Invalid(p, v, "must be greater than 0")}
	}
	return nil
}

// supported reports v at p unless it is one of allowed; an empty v is
// reported as required.
func supported(v string, allowed []string, p *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if !slices.Contains(allowed, v) {
		return field.ErrorList{field.NotSupported(p, v, allowed)}
	}
	return nil
}

// invalidEach turns each message of a string check into an Invalid error.
func invalidEach(p *field.Path, v string, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func fmtTime(t *timestamppb.Timestamp) string {
	if t == nil {
		return "null"
	}
	return t.AsTime().Format(time.RFC3339Nano)
}

func fmtOptional[T any](v *T) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}
