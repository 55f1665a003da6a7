// Package jsonpath is kubectl's JSONPath dialect (client-go's
// util/jsonpath), written for skiffctl's -o jsonpath, -o custom-columns
// and --sort-by over the JSON form of objects: trees of map[string]any,
// []any, string, bool, int64, float64 and nil.
//
// A template is text with actions in braces:
//
//	{.metadata.name}                      a field (a map key)
//	{.items[*].metadata.name}             every element; [0], [-1], [1:3], [::2] slices
//	{.items[?(@.status.phase=="Running")]} a filter (==, !=, <, >, <=, >=, or [?(@.x)] exists)
//	{..image}                              recursive descent
//	{.items[*]['metadata.name','kind']}    a union; ['a.b'] a key path
//	{.metadata.annotations.a\.b/c}         an escaped dot in a key
//	{range .items[*]}...{end}              the body once per element, @ (and $) being it
//	{"\t"} {'x'}                           a literal, with Go escapes
//
// Text outside braces is printed as it is. The values of one action are
// printed separated by spaces: strings and numbers as they are, maps and
// lists as compact JSON. Parse reads a template; Execute writes it for one
// tree; FindResults returns the values for callers that print them
// otherwise (custom columns, sorting).
//
// Where it differs from client-go: map keys are visited in sorted order
// (client-go's order is Go's random map order), and a number compares
// with a number whatever their kinds (client-go refuses int against
// float, so [?(@.spec.replicas==3)] never matched in kubectl).
package jsonpath
