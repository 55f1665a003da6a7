package quantity

import "testing"

// The common forms: what pod specs, node capacity and quota carry.
var benchInputs = []string{"500m", "2", "128Mi", "1.5Gi", "64Gi", "100k", "1e3", "0.25"}

func BenchmarkParse(b *testing.B) {
	for _, s := range benchInputs {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkString(b *testing.B) {
	for _, s := range benchInputs {
		q := MustParse(s)
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = q.String()
			}
		})
	}
}

func BenchmarkAddCmp(b *testing.B) {
	x, y := MustParse("1536Mi"), MustParse("250m")
	b.ReportAllocs()
	for b.Loop() {
		s, err := x.Add(y)
		if err != nil || s.Cmp(x) <= 0 {
			b.Fatal(s, err)
		}
	}
}
