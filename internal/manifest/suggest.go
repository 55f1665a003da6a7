package manifest

import "strings"

// Suggest returns the candidate closest to name (Levenshtein distance,
// case-insensitive) when it is close enough to be a likely typo, or "".
func Suggest(name string, candidates []string) string {
	best, bestD := "", -1
	ln := strings.ToLower(name)
	for _, c := range candidates {
		d := Levenshtein(ln, strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 {
		return ""
	}
	// Allow about one edit in three characters, at least one, at most four.
	limit := max(1, min(4, len(name)/3))
	if bestD > limit {
		return ""
	}
	return best
}

// Levenshtein is the edit distance between a and b: insertions,
// deletions and substitutions of bytes, and (as Damerau's variant) a swap
// of two neighbours counted as one edit, the commonest typo ("evn").
func Levenshtein(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(a)][len(b)]
}
