package scenarios

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
)

// WriteReport prints the results as a table for people, then one line
// "BENCH <name> <value>" per figure for scripts.
func WriteReport(w io.Writer, rs *Results) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tVALUE\tUNIT\tTARGET\tRESULT\tNOTES")
	for _, r := range rs.List() {
		status := ""
		if r.Target.Cmp != "" {
			status = "ok"
			if !r.Target.Met(r.Value) {
				status = "MISS"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, formatValue(r.Value), r.Unit, r.Target, status, r.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, r := range rs.List() {
		if _, err := fmt.Fprintf(w, "BENCH %s %s\n", r.Name, formatValue(r.Value)); err != nil {
			return err
		}
	}
	return nil
}

// Missed returns the results that miss their target.
func (rs *Results) Missed() []Result {
	var out []Result
	for _, r := range rs.list {
		if !r.Target.Met(r.Value) {
			out = append(out, r)
		}
	}
	return out
}

// formatValue prints v as a plain decimal (never exponent notation) with
// three decimals at most: 12345.679, 0.731, 64.
func formatValue(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}
