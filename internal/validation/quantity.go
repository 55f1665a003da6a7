package validation

import (
	"skiff.dev/internal/field"
	"skiff.dev/internal/quantity"
)

// parseQuantity parses a quantity by package quantity's rules (Kubernetes'
// syntax, rounded up to 1n, range) and reports one that breaks them as
// Invalid at p, with the reason.
func parseQuantity(value string, p *field.Path) (quantity.Quantity, *field.Error) {
	q, err := quantity.Parse(value)
	if err != nil {
		return quantity.Quantity{}, field.Invalid(p, value, err.Error())
	}
	return q, nil
}
