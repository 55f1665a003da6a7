package controller

import (
	"fmt"
	"strings"
)

// KeyOf returns the queue key of an object: "namespace/name", or "name" for
// a cluster-scoped object (empty namespace).
func KeyOf(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// SplitKey is the inverse of KeyOf. A key with an empty name, an empty
// namespace before a "/", or more than one "/" is an error.
func SplitKey(key string) (namespace, name string, err error) {
	namespace, name, found := strings.Cut(key, "/")
	if !found {
		namespace, name = "", key
	}
	if name == "" || (found && namespace == "") || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("controller: key %q: want \"namespace/name\" or \"name\"", key)
	}
	return namespace, name, nil
}
