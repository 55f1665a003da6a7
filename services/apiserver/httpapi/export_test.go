package httpapi

// EncodeList is encodeList, for the external tests: the JSON a List was
// answered with before listJSON.
var EncodeList = encodeList

// ItemJSONCounts are itemJSON's hits and misses so far.
func ItemJSONCounts() (hits, misses uint64) { return itemJSON.hits.Load(), itemJSON.misses.Load() }
